"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .combine import (
    StageCombiner,
    fit_stage_weights,
    load_stage_weights,
    save_stage_weights,
)
from .comparison import (
    ComparisonReport,
    PageFeatures,
    StageResult,
    compare_pages,
    features_from_item,
    page_features,
)
from .documents import ParsedDocument, as_parsed_document
from .layout import (
    LayoutMatch,
    tag_comparison,
    template_comparison,
)
from .links import (
    LinkGraph,
    SetSimilarity,
    group_predecessor_similarity,
    group_successor_similarity,
    link_similarity,
    predecessor_similarity,
    successor_similarity,
)
from .pairs import SimilarPair, SimilarPairs, find_similar_pairs
from .params import SimilarityParams
from .structure import (
    get_classes,
    get_pq_grams,
    get_tags,
    jaccard_similarity,
    similarity,
    structural_similarity,
    style_similarity,
)
from .text import (
    InverseDocumentFrequency,
    cosine_similarity,
    text_similarity,
)
from .visual import (
    ColourSignature,
    colour_signature,
    earth_movers_distance,
    signature_similarity,
    visual_similarity,
)

__all__ = [
    "ColourSignature",
    "ComparisonReport",
    "InverseDocumentFrequency",
    "LayoutMatch",
    "LinkGraph",
    "PageFeatures",
    "ParsedDocument",
    "SetSimilarity",
    "SimilarPair",
    "SimilarPairs",
    "SimilarityParams",
    "StageCombiner",
    "StageResult",
    "as_parsed_document",
    "colour_signature",
    "compare_pages",
    "cosine_similarity",
    "earth_movers_distance",
    "features_from_item",
    "find_similar_pairs",
    "fit_stage_weights",
    "get_classes",
    "get_pq_grams",
    "get_tags",
    "group_predecessor_similarity",
    "group_successor_similarity",
    "jaccard_similarity",
    "link_similarity",
    "load_stage_weights",
    "page_features",
    "predecessor_similarity",
    "save_stage_weights",
    "signature_similarity",
    "similarity",
    "structural_similarity",
    "style_similarity",
    "successor_similarity",
    "tag_comparison",
    "template_comparison",
    "text_similarity",
    "visual_similarity",
]
