"""The clustering job: crawl records -> tf-idf -> LSA -> fuzzy c-means -> a result to report.

Shared by the ``websim cluster`` command and the Scrapy clustering pipeline, so both write the
same clusters for the same pages.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from websim_crawler.core.clustering.auto import (
    CandidateScore,
    choose_n_clusters,
    upper_bound,
)
from websim_crawler.core.clustering.collection import PageCollection
from websim_crawler.core.clustering.dask_fcm import DaskFuzzyCMeans
from websim_crawler.core.clustering.fcm import FuzzyCMeans, Matrix
from websim_crawler.core.clustering.params import (
    AUTO,
    KINDS,
    ClusteringParams,
    ClusterRecord,
)
from websim_crawler.core.clustering.reduce import lsa_reduce, svds
from websim_crawler.core.clustering.vectorize import TfidfMatrix
from websim_crawler.core.text import DEFAULT_STEMMER, keyword_forms
from websim_crawler.errors import ConfigError

logger = logging.getLogger(__name__)

# Item kinds each ``kind`` selection takes: plain site pages count as records, and so do pages
# without a kind (a user's own spider, ``websim extract``), which are ordinary pages.
_KINDS_SELECTED = {"record": ("record", "page", None), "results": ("results",), "all": None}
_TITLE_CHARS = 200  # longer titles are cut in the report


@dataclass(frozen=True)
class PageToCluster:
    """One page to cluster: its URL, its keyword counts (stem -> count) and, when its text was
    given, the counts of the surface forms of each stem that appears as anything but itself
    (stem -> form -> count)."""

    url: str
    keywords: Mapping[str, float]
    forms: Mapping[str, Mapping[str, int]] | None = None
    title: str | None = None  # what the HTML report names the page by


@dataclass
class InputReport:
    """What happened to the pages offered to the job: read, kept, skipped by reason."""

    pages: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        """Count one page left out of the clustering."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def note(self, message: str) -> None:
        """Record a message about the input or the parameters (also logged)."""
        logger.warning("%s", message)
        self.notes.append(message)


class DocumentCollector:
    """Select the pages to cluster from crawl records: by kind, first of each URL, with keywords.

    Takes records (``dict``: a feed line, ``read_pages`` after ``analyse_page``) one at a time
    with ``add``; ``finish`` returns the ``PageCollection`` ``cluster_documents`` takes.

    The pages kept go into a compact ``PageCollection`` (no per-page dicts are held).
    """

    def __init__(self, kind: str = "record", report: InputReport | None = None) -> None:
        if kind not in KINDS:
            raise ConfigError(f"kind must be one of {KINDS}, got {kind!r}")
        self.kinds = _KINDS_SELECTED[kind]
        self.report = report if report is not None else InputReport()
        self.pages = PageCollection()
        self._seen_urls: set[str] = set()

    def selects(self, kind: Any) -> bool:
        """Tell whether pages of this item kind are clustered."""
        return self.kinds is None or kind in self.kinds

    def skip(self, reason: str) -> None:
        """Count one page left out before it reached ``add`` (its analysis failed, say)."""
        self.report.pages += 1
        self.report.skip(reason)

    def add(self, record: ClusterRecord) -> str | None:
        """Offer one record (url, kind, keywords, keyword_forms, title); return why it was
        skipped (counted by reason), or ``None`` when it was kept.

        With the page's ``keyword_forms`` (``surface_forms``, computed where the page was
        analysed: ``core.stages`` prepares them), the report shows ``telescope`` rather than the
        stem ``telescop``; with its title, the HTML report names the page by it. A record
        prepared by ``core.stages`` may carry the reason its analysis failed instead. Nothing
        is tokenised here: in a crawl, ``add`` runs on Scrapy's reactor.
        """
        skipped = record.get("cluster_skipped")
        if isinstance(skipped, str):
            self.skip(skipped)
            return skipped
        url, kind, keywords = record.get("url"), record.get("kind"), record.get("keyword_stems")
        self.report.pages += 1
        reason = None
        if not self.selects(kind):
            reason = "other_kind"
        elif not isinstance(url, str) or not url:
            reason = "no_url"
        elif url in self._seen_urls:
            reason = "duplicate_url"
        counts = _clean_keywords(keywords) if reason is None else {}
        if reason is None and not counts:
            reason = "no_keywords"
        if reason is not None:
            self.report.skip(reason)
            return reason
        assert isinstance(url, str)
        self._seen_urls.add(url)
        forms = _clean_forms(record.get("keyword_forms"), counts)
        self.pages.append(url, counts, forms, _clean_title(record.get("title")))
        return None

    def finish(self) -> tuple[PageCollection, InputReport]:
        """Return the collected pages and the counts of what was left out."""
        return self.pages, self.report


def surface_forms(
    keyword_counts: Mapping[str, Any],
    main_text: Any,
    language: Any,
    stemmer_name: str = DEFAULT_STEMMER,
) -> dict[str, dict[str, int]] | None:
    """Return the surface forms of a page's keyword stems that read otherwise than the stem.

    Takes the stem counts (``keyword_stems``), the main text (``str``) and its language code;
    returns ``{stem: {form: count}}`` (``{"telescop": {"telescopes": 2, "telescope": 1}}``), or
    ``None`` without text or language. Tokenises the text: the preparation calls it in a worker.
    """
    if not isinstance(main_text, str) or not isinstance(language, str) or not language:
        return None
    return {
        stem: dict(form_counts)
        for stem, form_counts in keyword_forms(main_text, language, stemmer_name).items()
        if stem in keyword_counts and set(form_counts) != {stem}
    }


def _clean_forms(forms: Any, counts: Mapping[str, float]) -> dict[str, dict[str, int]] | None:
    """Return the prepared forms of the page's stems (JSON-read: checked), or ``None``."""
    if not isinstance(forms, Mapping):
        return None
    return {
        str(stem): {
            str(form): int(count)
            for form, count in form_counts.items()
            if isinstance(count, int) and not isinstance(count, bool) and count > 0
        }
        for stem, form_counts in forms.items()
        if stem in counts and isinstance(form_counts, Mapping)
    }


def _clean_title(title: Any) -> str | None:
    """Return a page title for the report: one line of at most 200 characters, or ``None``."""
    if not isinstance(title, str) or not title.strip():
        return None
    line = " ".join(title.split())
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _clean_keywords(keywords: Any) -> dict[str, float]:
    if not isinstance(keywords, Mapping):
        return {}
    return {
        str(term): float(count)
        for term, count in keywords.items()
        if isinstance(count, (int, float))
        and not isinstance(count, bool)
        and math.isfinite(count)
        and count > 0
    }


@dataclass(frozen=True)
class ClusteringResult:
    """The fitted clusters of a collection, in the order the pages came in."""

    params: ClusteringParams
    urls: tuple[str, ...]  # the pages clustered, in the rows' order
    titles: tuple[str | None, ...]  # their titles (None: none given), for the report
    input_report: InputReport
    n_clusters_requested: int | str
    membership: NDArray[np.float64]  # documents x clusters
    top_keywords: tuple[tuple[TopKeyword, ...], ...]
    positions: NDArray[np.float64]  # documents x 2, the map of the HTML report
    validity: dict[str, Any]
    candidates: tuple[CandidateScore, ...]

    @property
    def n_clusters(self) -> int:
        """The number of clusters fitted (0 when there was nothing to cluster)."""
        return int(self.membership.shape[1])

    @property
    def labels(self) -> NDArray[np.intp]:
        """The cluster of largest membership of each document."""
        if self.membership.shape[1] == 0:
            return np.zeros(self.membership.shape[0], dtype=np.intp)
        return np.asarray(self.membership.argmax(axis=1))


def cluster_documents(
    documents: PageCollection | Iterable[PageToCluster],
    params: ClusteringParams | None = None,
    input_report: InputReport | None = None,
    on_candidate: Callable[[CandidateScore], None] | None = None,
) -> ClusteringResult:
    """Cluster the documents; an empty or tiny collection gives a valid, possibly empty result.

    Takes a ``PageCollection`` (``DocumentCollector.finish``) or ``PageToCluster`` items (URL
    and keyword counts); returns a ``ClusteringResult`` (memberships, top keywords, validity).

    The documents are clustered in the order of their URLs, not in the order they came in: the
    same pages give the same clusters whatever the order a crawl delivered them in. The result
    lists them in the order they came in.
    """
    params = params or ClusteringParams()
    report = input_report if input_report is not None else InputReport()
    pages = documents if isinstance(documents, PageCollection) else _collect(documents)
    tfidf = pages.take_tfidf(
        min_df=params.min_df, max_df=params.max_df, max_features=params.max_features
    )
    # Rows in URL order: the same pages give the same clusters whatever order they came in.
    arrival = sorted(range(len(pages.urls)), key=pages.urls.__getitem__)
    if arrival != list(range(len(arrival))):
        tfidf = TfidfMatrix(tfidf.matrix[arrival], tfidf.terms, tfidf.idf)
    has_terms = np.diff(tfidf.matrix.indptr) > 0
    kept = [pages.urls[index] for index in arrival]
    if not has_terms.all():
        for _ in range(int((~has_terms).sum())):
            report.skip("no_shared_keywords")
        kept = [url for url, keep in zip(kept, has_terms, strict=True) if keep]
        arrival = [index for index, keep in zip(arrival, has_terms, strict=True) if keep]
        tfidf = TfidfMatrix(tfidf.matrix[has_terms], tfidf.terms, tfidf.idf)
    if not kept:
        report.note("no page with keywords to cluster: the report is empty")
        return _empty_result(params, report)

    reduced = lsa_reduce(tfidf.matrix, params.svd_components, params.seed)
    data: Matrix = reduced if reduced is not None else tfidf.matrix
    n_distinct = _count_distinct_rows(tfidf.matrix)
    if n_distinct < len(kept):
        report.note(f"{len(kept) - n_distinct} page(s) have the same keywords as another page")

    candidates: list[CandidateScore] = []
    if params.n_clusters == AUTO:
        model, candidates = choose_n_clusters(
            data,
            upper_bound(n_distinct, params.max_clusters),
            lambda k: _estimator(params, k),
            params.validity_index,
            on_candidate,
        )
    else:
        assert isinstance(params.n_clusters, int)
        n_clusters = params.n_clusters
        if n_clusters > n_distinct:
            report.note(
                f"{n_clusters} clusters asked for but only {n_distinct} distinct page(s): "
                f"using {n_distinct}"
            )
            n_clusters = n_distinct
        model = _estimator(params, n_clusters).fit(data)

    membership = model.membership_
    order = _clusters_by_size(membership)
    membership = membership[:, order]
    centers = np.asarray(model.cluster_centers_)[order]
    top_keywords = _top_keywords(tfidf, membership, params.fuzziness, params.top_keywords, pages)
    positions = map_positions(data, centers)
    as_arrived = np.argsort(np.asarray(arrival), kind="stable")
    return ClusteringResult(
        params=params,
        urls=tuple(kept[index] for index in as_arrived),
        titles=tuple(pages.titles[arrival[index]] for index in as_arrived),
        input_report=report,
        n_clusters_requested=params.n_clusters,
        membership=membership[as_arrived],
        top_keywords=top_keywords,
        positions=positions[as_arrived],
        validity={
            "partition_coefficient": model.partition_coefficient_,
            "partition_entropy": model.partition_entropy_,
            "xie_beni": model.xie_beni_,
            "objective": model.objective_,
            "n_iter": model.n_iter_,
        },
        candidates=tuple(candidates),
    )


def _collect(documents: Iterable[PageToCluster]) -> PageCollection:
    pages = PageCollection()
    for document in documents:
        pages.append(document.url, document.keywords, document.forms, document.title)
    return pages


def _estimator(params: ClusteringParams, n_clusters: int) -> FuzzyCMeans:
    options: dict[str, Any] = {
        "m": params.fuzziness,
        "metric": params.metric,
        "init": params.init,
        "n_init": params.n_init,
        "max_iter": params.max_iter,
        "tol": params.tol,
        "random_state": params.seed,
    }
    if params.engine == "dask":
        return DaskFuzzyCMeans(
            n_clusters, scheduler=params.scheduler, chunk_rows=params.chunk_rows, **options
        )
    return FuzzyCMeans(n_clusters, **options)


def _empty_result(params: ClusteringParams, report: InputReport) -> ClusteringResult:
    return ClusteringResult(
        params=params,
        urls=(),
        titles=(),
        input_report=report,
        n_clusters_requested=params.n_clusters,
        membership=np.zeros((0, 0)),
        top_keywords=(),
        positions=np.zeros((0, 2)),
        validity={},
        candidates=(),
    )


def _count_distinct_rows(matrix: sp.csr_matrix) -> int:
    digests = set()
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        digest = hashlib.blake2b(digest_size=16)
        digest.update(matrix.indices[start:end].tobytes())
        digest.update(matrix.data[start:end].tobytes())
        digests.add(digest.digest())
    return len(digests)


def _clusters_by_size(membership: NDArray[np.float64]) -> NDArray[np.intp]:
    """Return the cluster order that numbers clusters by decreasing size (then total membership)."""
    sizes = np.bincount(membership.argmax(axis=1), minlength=membership.shape[1])
    totals = membership.sum(axis=0)
    return np.lexsort((-totals, -sizes))


@dataclass(frozen=True)
class TopKeyword:
    """A heavy keyword of a cluster: its most frequent surface form, its stem, its weight."""

    term: str
    stem: str
    weight: float


def _top_keywords(
    tfidf: TfidfMatrix,
    membership: NDArray[np.float64],
    m: float,
    count: int,
    pages: PageCollection,
) -> tuple[tuple[TopKeyword, ...], ...]:
    """Return each cluster's heaviest stems in the ``u^m``-weighted mean tf-idf row."""
    weights = (membership**m).astype(np.float32)
    means = np.asarray((tfidf.matrix.T @ weights).T) / weights.sum(axis=0)[:, None]
    tops = []
    for row in means:
        top = np.argsort(-row, kind="stable")[:count]
        tops.append([(tfidf.terms[i], float(row[i])) for i in top if row[i] > 0])
    terms = pages.surface_terms({stem for top in tops for stem, _weight in top})
    return tuple(
        tuple(TopKeyword(terms[stem], stem, weight) for stem, weight in top) for top in tops
    )


def map_positions(data: Matrix, centers: NDArray[Any]) -> NDArray[np.float64]:
    """Project the rows to 2-D: on the top principal axes of the centres (of the rows if k < 3)."""
    n_rows = data.shape[0]
    if centers.shape[0] >= 3:
        centred = np.asarray(centers, dtype=np.float64) - centers.mean(axis=0)
        axes = np.linalg.svd(centred, full_matrices=False)[2][:2]
    elif min(data.shape) > 2:
        matrix = data.astype(np.float64) if sp.issparse(data) else np.asarray(data, np.float64)
        start = np.random.default_rng(0).uniform(-1.0, 1.0, size=min(data.shape))
        axes = svds(matrix, k=2, v0=start)[2][::-1]
    else:
        return np.zeros((n_rows, 2))
    positions: NDArray[np.float64] = np.asarray(data @ axes.T.astype(data.dtype), np.float64)
    return positions
