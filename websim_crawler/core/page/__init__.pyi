"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .analyse import analyse_page
from .chunks import (
    CHUNK_DETAILS,
    CONTAINER,
    DUPLICATE,
    KEPT,
    NOISE,
    AnalysisRecord,
    Chunk,
    PageAnalysis,
)
from .features import (
    chunk_weight,
    hyperlink_percentage,
    keyword_frequency_score,
    noise_score,
    position_feature,
    title_word_relevancy,
)
from .filters import keyword_matrix, new_template_memory
from .main_text import (
    boilerplate_line,
    short_edge_line,
    teaser_line,
)
from .params import AnalysisParams
from .position import box_position_ratio, interval_position_ratio
from .segment import (
    BLOCK_TAGS,
    Line,
    Segment,
    boilerplate_hint,
    segment_page,
)
from .site_memory import (
    SiteTemplateMemory,
    TemplateSnapshot,
    chunk_fingerprint,
    template_key,
)

__all__ = [
    "BLOCK_TAGS",
    "CHUNK_DETAILS",
    "CONTAINER",
    "DUPLICATE",
    "KEPT",
    "NOISE",
    "AnalysisParams",
    "AnalysisRecord",
    "Chunk",
    "Line",
    "PageAnalysis",
    "Segment",
    "SiteTemplateMemory",
    "TemplateSnapshot",
    "analyse_page",
    "boilerplate_hint",
    "boilerplate_line",
    "box_position_ratio",
    "chunk_fingerprint",
    "chunk_weight",
    "hyperlink_percentage",
    "interval_position_ratio",
    "keyword_frequency_score",
    "keyword_matrix",
    "new_template_memory",
    "noise_score",
    "position_feature",
    "segment_page",
    "short_edge_line",
    "teaser_line",
    "template_key",
    "title_word_relevancy",
]
