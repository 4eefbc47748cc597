"""Fuzzy c-means clustering of crawled pages by their keywords, and the clusters report."""

from __future__ import annotations

from websim_crawler.core.clustering.auto import CandidateScore, choose_n_clusters
from websim_crawler.core.clustering.fcm import (
    FuzzyCMeans,
    partition_coefficient,
    partition_entropy,
    xie_beni,
)
from websim_crawler.core.clustering.job import (
    ClusteringResult,
    Document,
    DocumentCollector,
    InputReport,
    cluster_documents,
)
from websim_crawler.core.clustering.params import ClusteringParams
from websim_crawler.core.clustering.reduce import lsa_reduce
from websim_crawler.core.clustering.report import build_report, render_html
from websim_crawler.core.clustering.vectorize import TfidfMatrix, tfidf_vectors

__all__ = [
    "CandidateScore",
    "ClusteringParams",
    "ClusteringResult",
    "Document",
    "DocumentCollector",
    "FuzzyCMeans",
    "InputReport",
    "TfidfMatrix",
    "build_report",
    "choose_n_clusters",
    "cluster_documents",
    "lsa_reduce",
    "partition_coefficient",
    "partition_entropy",
    "render_html",
    "tfidf_vectors",
    "xie_beni",
]
