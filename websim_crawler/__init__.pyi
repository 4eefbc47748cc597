"""The front door: the names a library user imports, each loaded on first use (the stub
``lazy_loader`` reads; ``import websim_crawler`` imports none of them)."""

from .addon import WebsimAddon
from .cli._inputs import InputReader, read_pages
from .config import WebsimConfig
from .core.clustering import (
    ClusteringParams,
    ClusteringResult,
    DocumentCollector,
    FuzzyCMeans,
    cluster_documents,
)
from .core.neardup import NearDuplicateFinder, NeardupParams, NeardupReport, find_near_duplicates
from .core.page import AnalysisParams, PageAnalysis, analyse_page
from .core.reference_index import Match, MatchParams, ReferenceIndex
from .core.similarity import (
    ComparisonReport,
    PageFeatures,
    SimilarityParams,
    SimilarPair,
    SimilarPairs,
    StageCombiner,
    compare_pages,
    find_similar_pairs,
    page_features,
    save_stage_weights,
)
from .core.surfacing import QueryPlanner, SurfacingParams
from .errors import WebsimError

__version__: str

__all__ = [
    "AnalysisParams",
    "ClusteringParams",
    "ClusteringResult",
    "ComparisonReport",
    "DocumentCollector",
    "FuzzyCMeans",
    "InputReader",
    "Match",
    "MatchParams",
    "NearDuplicateFinder",
    "NeardupParams",
    "NeardupReport",
    "PageAnalysis",
    "PageFeatures",
    "QueryPlanner",
    "ReferenceIndex",
    "SimilarPair",
    "SimilarPairs",
    "SimilarityParams",
    "StageCombiner",
    "SurfacingParams",
    "WebsimAddon",
    "WebsimConfig",
    "WebsimError",
    "analyse_page",
    "cluster_documents",
    "compare_pages",
    "find_near_duplicates",
    "find_similar_pairs",
    "page_features",
    "read_pages",
    "save_stage_weights",
]
