"""Page analysis, phase 1 of VDEC: chunks, their features and fate, the main content.

The public names of the page analysis; other packages import from here only.
"""

from __future__ import annotations

from websim_crawler.core.page.analyse import analyse_page
from websim_crawler.core.page.features import (
    chunk_weight,
    hyperlink_percentage,
    keyword_frequency_score,
    noise_score,
    position_feature,
    title_word_relevancy,
)
from websim_crawler.core.page.filters import keyword_matrix, new_template_memory
from websim_crawler.core.page.lines import boilerplate_line, short_edge_line, teaser_line
from websim_crawler.core.page.params import AnalysisParams
from websim_crawler.core.page.position import box_position_ratio, interval_position_ratio
from websim_crawler.core.page.records import (
    CHUNK_DETAILS,
    CONTAINER,
    DUPLICATE,
    KEPT,
    NOISE,
    Chunk,
    PageAnalysis,
)
from websim_crawler.core.page.segment import (
    BLOCK_TAGS,
    Line,
    Segment,
    boilerplate_hint,
    segment_page,
)
from websim_crawler.core.page.site_memory import (
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
