"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .auto import CandidateScore, choose_n_clusters
from .collection import PageCollection
from .fcm import (
    FuzzyCMeans,
    partition_coefficient,
    partition_entropy,
    xie_beni,
)
from .job import (
    ClusteringResult,
    DocumentCollector,
    InputReport,
    PageToCluster,
    TopKeyword,
    cluster_documents,
)
from .params import ClusteringParams
from .reduce import lsa_reduce
from .report import build_report, render_html, report_chunks, write_report
from .vectorize import TfidfMatrix, tfidf_vectors

__all__ = [
    "CandidateScore",
    "ClusteringParams",
    "ClusteringResult",
    "DocumentCollector",
    "FuzzyCMeans",
    "InputReport",
    "PageCollection",
    "PageToCluster",
    "TfidfMatrix",
    "TopKeyword",
    "build_report",
    "choose_n_clusters",
    "cluster_documents",
    "lsa_reduce",
    "partition_coefficient",
    "partition_entropy",
    "render_html",
    "report_chunks",
    "tfidf_vectors",
    "write_report",
    "xie_beni",
]
