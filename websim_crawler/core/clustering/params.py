"""The clustering job's settings (``ClusteringParams``) and the choices they take.

Apart from the job so that reading the settings imports neither NumPy nor SciPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError

VALIDITY_INDICES = ("xie_beni", "partition_coefficient", "partition_entropy")
METRICS = ("cosine", "euclidean")
INIT_METHODS = ("k-means++", "random")
DEFAULT_CHUNK_ROWS = 20_000
AUTO = "auto"
KINDS = ("record", "results", "all")
ENGINES = ("memory", "dask")


class ClusterRecord(TypedDict, total=False):
    """What the clustering stage takes of one page, prepared where the page is analysed
    (``core.stages``) and kept by a JOBDIR journal: the item's url, kind, keywords and title,
    and in place of its main text the surface forms of its stems, or why its analysis failed."""

    url: str | None
    kind: str | None
    keywords: dict[str, int] | None  # {word: count}
    keyword_stems: dict[str, int] | None  # {stem: count}: the features clustered
    title: str | None
    keyword_forms: dict[str, dict[str, int]]  # {stem: {form: count}}, tokenised in a worker
    cluster_skipped: str  # analysis_<reason>: the page could not be analysed for its keywords


@dataclass(frozen=True)
class ClusteringParams:
    """The clustering job's constants, each bound to a ``WEBSIM_CLUSTERS_*`` setting."""

    output: str | None = setting(
        None, "WEBSIM_CLUSTERS_OUTPUT", "write the clusters JSON here at the end of a crawl"
    )
    html_output: str | None = setting(
        None, "WEBSIM_CLUSTERS_HTML", "also write the HTML report here at the end of a crawl"
    )
    kind: str = setting(
        "record",
        "WEBSIM_CLUSTERS_KIND",
        "pages to cluster: record (record pages, site pages and pages without a kind), "
        "results or all",
        choices=KINDS,
    )
    n_clusters: int | str = setting(
        AUTO, "WEBSIM_CLUSTERS_N", "number of clusters, or auto (chosen by a validity index)"
    )
    max_clusters: int = setting(
        100,
        "WEBSIM_CLUSTERS_MAX_K",
        "auto tries 2..min(this, documents / 5) clusters, coarse to fine",
        minimum=2,
    )
    validity_index: str = setting(
        "xie_beni",
        "WEBSIM_CLUSTERS_AUTO_INDEX",
        "index auto picks by: xie_beni (the fewest clusters whose median over the restarts is "
        "within 10% of the lowest), "
        "partition_coefficient (highest), partition_entropy (lowest)",
        choices=VALIDITY_INDICES,
    )
    fuzziness: float = setting(
        1.1,
        "WEBSIM_CLUSTERS_FUZZINESS",
        "fuzzy c-means exponent m (> 1; larger = softer memberships)",
        minimum=1.01,
        maximum=10.0,
    )
    metric: str = setting(
        "cosine", "WEBSIM_CLUSTERS_METRIC", "cosine (spherical) or euclidean", choices=METRICS
    )
    svd_components: int = setting(
        50,
        "WEBSIM_CLUSTERS_SVD_COMPONENTS",
        "LSA dimensions the tf-idf rows are reduced to before clustering (0: no reduction)",
        minimum=0,
    )
    init: str = setting(
        "k-means++",
        "WEBSIM_CLUSTERS_INIT",
        "initial centres: k-means++ or random",
        choices=INIT_METHODS,
    )
    n_init: int = setting(
        3,
        "WEBSIM_CLUSTERS_N_INIT",
        "runs from different seeds; the lowest objective wins",
        minimum=1,
    )
    max_iter: int = setting(
        300, "WEBSIM_CLUSTERS_MAX_ITER", "iterations per fuzzy c-means run", minimum=1
    )
    tol: float = setting(
        1e-4,
        "WEBSIM_CLUSTERS_TOL",
        "stop when no membership changes by more than this",
        minimum=0.0,
    )
    seed: int = setting(0, "WEBSIM_CLUSTERS_SEED", "random seed (same seed, same clusters)")
    min_df: int = setting(
        2, "WEBSIM_CLUSTERS_MIN_DF", "keep terms found in at least this many documents", minimum=1
    )
    max_df: float = setting(
        0.95,
        "WEBSIM_CLUSTERS_MAX_DF",
        "drop terms found in more than this fraction of the documents",
        minimum=0.0,
        maximum=1.0,
    )
    max_features: int = setting(
        50_000, "WEBSIM_CLUSTERS_MAX_FEATURES", "keep at most this many terms", minimum=1
    )
    top_keywords: int = setting(
        10, "WEBSIM_CLUSTERS_TOP_KEYWORDS", "keywords listed per cluster", minimum=1
    )
    engine: str = setting(
        "memory",
        "WEBSIM_CLUSTERS_ENGINE",
        "where fuzzy c-means iterates: memory (this process) or dask (row chunks on a cluster)",
        choices=ENGINES,
    )
    scheduler: str | None = setting(
        None,
        "WEBSIM_CLUSTERS_SCHEDULER",
        "dask engine: scheduler address (tcp://host:8786); unset: the default client or a "
        "local in-process cluster",
    )
    chunk_rows: int = setting(
        DEFAULT_CHUNK_ROWS, "WEBSIM_CLUSTERS_CHUNK_ROWS", "dask engine: rows per chunk", minimum=1
    )

    def __post_init__(self) -> None:
        validate(self)
        if self.n_clusters != AUTO and not (
            isinstance(self.n_clusters, int)
            and not isinstance(self.n_clusters, bool)
            and self.n_clusters >= 1
        ):
            raise ConfigError(
                f"WEBSIM_CLUSTERS_N must be a positive integer or 'auto', got {self.n_clusters!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters that shape the clusters (for the report's ``params``)."""
        return {
            "kind": self.kind,
            "n_clusters": self.n_clusters,
            "max_clusters": self.max_clusters,
            "validity_index": self.validity_index,
            "fuzziness": self.fuzziness,
            "metric": self.metric,
            "svd_components": self.svd_components,
            "init": self.init,
            "n_init": self.n_init,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "seed": self.seed,
            "min_df": self.min_df,
            "max_df": self.max_df,
            "max_features": self.max_features,
        }
