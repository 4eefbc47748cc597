"""Find and classify near-duplicate pages in a stream of pages: the report every entry writes."""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

import numpy as np

from websim_crawler.core.neardup.index import (
    ExactSentenceIndex,
    IndexStats,
    PageStore,
    SiteTemplateRule,
)
from websim_crawler.core.neardup.lsh import MinHashIndex
from websim_crawler.core.neardup.pages import (
    CHUNKS_ONLY,
    PageSentences,
    chunks_only,
    page_from_dict,
    page_sentences,
)
from websim_crawler.core.neardup.params import NeardupParams, NeardupRecord
from websim_crawler.core.neardup.relations import (
    CLASSES,
    RELATIONS,
    PagePair,
    inclusion_rate,
    overlap_rate,
    pair_class,
    relation_kind,
    url_hash,
)
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.urls import registered_domain_of
from websim_crawler.errors import PageError

logger = logging.getLogger(__name__)


# One pair as the report writes it (``class`` is a Python keyword, hence the call form).
NeardupPairRecord = TypedDict(
    "NeardupPairRecord",
    {
        "a": str,
        "b": str,
        "class": str,
        "relation": str,
        "overlap": float,
        "inclusion": float,
        "shared_sentences": int,
    },
)


class NeardupReportRecord(TypedDict):
    """The report as ``websim neardup`` and the pipeline write it."""

    pairs: list[NeardupPairRecord]
    identical_groups: list[list[str]]
    stats: dict[str, Any]


@dataclass(frozen=True)
class NeardupPair:
    """Two pages sharing selected sentences, with their class and relation."""

    a: str
    b: str
    pair_class: str
    relation: str
    overlap: float
    inclusion: float
    shared_sentences: int

    def to_dict(self) -> NeardupPairRecord:
        """Return the pair in the report's schema (``class`` is a Python keyword here)."""
        return {
            "a": self.a,
            "b": self.b,
            "class": self.pair_class,
            "relation": self.relation,
            "overlap": round(self.overlap, 6),
            "inclusion": round(self.inclusion, 6),
            "shared_sentences": self.shared_sentences,
        }


@dataclass
class NeardupReport:
    """The pairs found and the counts of the run."""

    pairs: list[NeardupPair]
    stats: dict[str, Any] = field(default_factory=dict)
    # Pages with the same set of long sentences, one list of URLs per group (first seen first):
    # reported once as a group, whether or not their sentences are too frequent to pair.
    identical_groups: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> NeardupReportRecord:
        """Return the report as JSON-safe data."""
        return {
            "pairs": [pair.to_dict() for pair in self.pairs],
            "identical_groups": self.identical_groups,
            "stats": self.stats,
        }


def classify_pairs(
    first_ids: np.ndarray,
    second_ids: np.ndarray,
    shared: np.ndarray,
    page_counts: np.ndarray,
    pages: Mapping[int, tuple[str, frozenset[int]]],
    params: NeardupParams,
) -> list[NeardupPair]:
    """Turn id pairs with shared counts into classified pairs with relations."""
    results: list[NeardupPair] = []
    for first, second, n_shared in zip(
        first_ids.tolist(), second_ids.tolist(), shared.tolist(), strict=True
    ):
        (url_a, links_a), (url_b, links_b) = pages[first], pages[second]
        count_a, count_b = int(page_counts[first]), int(page_counts[second])
        pair = PagePair(
            url_a=url_a,
            url_b=url_b,
            a_links_b=url_hash(url_b) in links_a,
            b_links_a=url_hash(url_a) in links_b,
            shared=n_shared,
            count_a=count_a,
            count_b=count_b,
        )
        relation, swap = relation_kind(
            pair, params.mirror_path_similarity, params.inclusion_tolerance
        )
        if swap:
            url_a, url_b = url_b, url_a
        results.append(
            NeardupPair(
                a=url_a,
                b=url_b,
                pair_class=pair_class(n_shared, count_a, count_b, params.inclusion_tolerance),
                relation=relation,
                overlap=overlap_rate(n_shared, count_a, count_b),
                inclusion=inclusion_rate(n_shared, count_a, count_b),
                shared_sentences=n_shared,
            )
        )
    return results


def report_stats(
    pairs: list[NeardupPair],
    *,
    method: str,
    pages: Mapping[str, Any],
    index_stats: IndexStats,
    params: NeardupParams,
    seconds: float,
) -> dict[str, Any]:
    """Gather the run's counts in the report's ``stats`` shape."""
    classes = Counter(pair.pair_class for pair in pairs)
    relations = Counter(pair.relation for pair in pairs)
    sentences = {"page_entries": index_stats.entries}
    if method != "minhash":  # the sketch of the minhash method knows no exact sentence counts
        sentences |= {
            "distinct": index_stats.distinct_sentences,
            "frequent_ignored": index_stats.frequent_sentences,
            "site_template_ignored": index_stats.site_template_sentences,
            "shared": index_stats.shared_sentences,
        }
    return {
        "method": method,
        "pages": dict(pages),
        "sentences": sentences,
        "candidates_checked" if method == "minhash" else "pair_entries": index_stats.pair_entries,
        "pairs": len(pairs),
        "classes": {name: classes.get(name, 0) for name in CLASSES},
        "relations": {name: relations.get(name, 0) for name in RELATIONS},
        "params": {
            "min_sentence_chars": params.min_sentence_chars,
            "max_sentence_frequency": params.max_sentence_frequency,
            "site_template_share": params.site_template_share,
            "site_template_min_pages": params.site_template_min_pages,
            "region": params.region,
            "min_shared_sentences": params.min_shared_sentences,
            "inclusion_tolerance": params.inclusion_tolerance,
        },
        "seconds": round(seconds, 3),
    }


class NearDuplicateFinder:
    """Feed crawl items or pages one at a time, then ``finish`` for the report.

    Takes items (``dict`` with ``url`` and ``html`` or ``chunks``) with ``add``, or
    ``PageSentences`` with ``add_page``; ``finish`` returns a ``NeardupReport``.

    Temporary index files live in a private folder under ``params.spill_dir`` (or TMPDIR) that
    ``close`` removes; use the finder as a context manager.
    """

    def __init__(
        self,
        params: NeardupParams | None = None,
        *,
        html_field: str = "html",
        analysis_params: AnalysisParams | None = None,
    ) -> None:
        self.params = params or NeardupParams()
        self.html_field = html_field
        # Items without chunks are analysed with these settings, minus the within-page filters.
        self.analysis_params = (
            CHUNKS_ONLY if analysis_params is None else chunks_only(analysis_params)
        )
        self._folder = tempfile.TemporaryDirectory(
            prefix="websim-neardup-", dir=self.params.spill_dir
        )
        folder = Path(self._folder.name)
        self.index: ExactSentenceIndex | MinHashIndex
        site_template = SiteTemplateRule(
            self.params.site_template_share, self.params.site_template_min_pages
        )
        if self.params.method == "minhash":
            self.index = MinHashIndex(
                folder,
                max_frequency=self.params.max_sentence_frequency,
                min_shared=self.params.min_shared_sentences,
                site_template=site_template,
                threshold=self.params.lsh_threshold,
                num_perm=self.params.num_perm,
                sketch_width=self.params.sketch_width,
            )
        else:
            self.index = ExactSentenceIndex(
                folder,
                max_frequency=self.params.max_sentence_frequency,
                min_shared=self.params.min_shared_sentences,
                partitions=self.params.partitions,
                buffer_entries=self.params.buffer_entries,
                site_template=site_template,
            )
        self.pages_seen = 0
        self.dropped: Counter[str] = Counter()
        self._url_hashes: set[int] = set()
        self._content_digests = array("Q")  # per page id: its sentence set's digest (0: none)
        self._site_numbers: dict[str, int] = {}
        self._started = time.perf_counter()

    def __enter__(self) -> NearDuplicateFinder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def skip(self, reason: str) -> None:
        """Count one page left out before it reached ``add``."""
        self.pages_seen += 1
        self.dropped[reason] += 1

    def add(self, item: NeardupRecord | Mapping[str, Any]) -> str | None:
        """Add a crawl item; return why it was dropped (counted by reason), or None if indexed.

        An item prepared in a worker (``NeardupRecord``) carries its sentences ready or the
        reason it has none.
        """
        ready = item.get("neardup_sentences")
        reason = item.get("neardup_skipped")
        if isinstance(reason, str):
            self.skip(reason)
            return reason
        if isinstance(ready, Mapping):
            return self.add_page(page_from_dict(ready))
        try:
            page = page_sentences(
                item, self.params, self.analysis_params, html_field=self.html_field
            )
        except PageError as exc:
            self.skip(exc.reason)
            logger.debug("page dropped (%s): %s", exc.reason, exc)
            return exc.reason
        return self.add_page(page)

    def add_page(self, page: PageSentences) -> str | None:
        """Add an extracted page; a URL seen before is dropped as ``duplicate_url``."""
        self.pages_seen += 1
        key = url_hash(page.url)
        if key in self._url_hashes:
            self.dropped["duplicate_url"] += 1
            return "duplicate_url"
        self._url_hashes.add(key)
        site = self._site_numbers.setdefault(
            registered_domain_of(page.url), len(self._site_numbers)
        )
        self.index.add(page, site)
        self._content_digests.append(_sentence_set_digest(page.sentence_hashes))
        return None

    def finish(self) -> NeardupReport:
        """Finish the index and return the classified pairs with the run's stats."""
        batches = list(self.index.pairs())
        page_counts = self.index.page_counts_
        if page_counts is None:
            raise RuntimeError("the index yielded no page counts")
        first_ids = _concatenate(batch[0] for batch in batches)
        second_ids = _concatenate(batch[1] for batch in batches)
        shared = _concatenate(batch[2] for batch in batches)
        order = np.lexsort((second_ids, first_ids))
        first_ids, second_ids, shared = first_ids[order], second_ids[order], shared[order]
        pages = _read_pages(self.index.store, np.union1d(first_ids, second_ids))
        pairs = classify_pairs(first_ids, second_ids, shared, page_counts, pages, self.params)
        indexed = len(self.index.store)
        stats = report_stats(
            pairs,
            method=self.params.method,
            pages={
                "seen": self.pages_seen,
                "indexed": indexed,
                "without_selected_sentences": int(np.count_nonzero(page_counts == 0)),
                "dropped": dict(sorted(self.dropped.items())),
            },
            index_stats=self.index.stats,
            params=self.params,
            seconds=time.perf_counter() - self._started,
        )
        groups = self._identical_groups()
        stats["identical_groups"] = len(groups)
        logger.info(
            "near duplicates: %d pages indexed, %d pairs, %d groups of identical pages",
            indexed,
            len(pairs),
            len(groups),
        )
        return NeardupReport(pairs, stats, groups)

    def _identical_groups(self) -> list[list[str]]:
        """Group the pages whose long-sentence sets are the same (pages without any left out),
        in the order of their first pages; one sort of the digests, linear in the pages."""
        digests = np.frombuffer(self._content_digests, dtype=np.uint64)
        if not len(digests):
            return []
        unique, inverse, counts = np.unique(digests, return_inverse=True, return_counts=True)
        by_digest = np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])
        groups = [
            members for digest, members in zip(unique, by_digest, strict=True)
            if digest and len(members) > 1
        ]  # fmt: skip
        groups.sort(key=lambda members: int(members[0]))
        store = self.index.store
        return [[store.read(int(page_id)).url for page_id in members] for members in groups]

    def close(self) -> None:
        """Remove the temporary index files."""
        self.index.store.close()
        self._folder.cleanup()


def _sentence_set_digest(sentence_hashes: np.ndarray) -> int:
    """Return a 64-bit digest of a page's set of sentence hashes (0 for a page without any)."""
    if not len(sentence_hashes):
        return 0
    unique = np.unique(sentence_hashes.astype(np.uint64, copy=False))
    return int.from_bytes(hashlib.blake2b(unique.tobytes(), digest_size=8).digest(), "little") or 1


def _concatenate(arrays: Iterator[np.ndarray] | Iterable[np.ndarray]) -> np.ndarray:
    parts = list(arrays)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _read_pages(store: PageStore, page_ids: np.ndarray) -> dict[int, tuple[str, frozenset[int]]]:
    pages: dict[int, tuple[str, frozenset[int]]] = {}
    for page_id in page_ids.tolist():
        stored = store.read(page_id)
        pages[page_id] = (stored.url, frozenset(stored.link_hashes.tolist()))
    return pages


def find_near_duplicates(
    items: Iterable[Mapping[str, Any]], params: NeardupParams | None = None
) -> NeardupReport:
    """Run the whole detection over crawl items; return a ``NeardupReport`` of the pairs.

    Takes an iterable of ``dict`` items (``url`` and ``html`` as ``str``, or ``chunks``: a feed's
    lines, ``read_pages``); returns the pairs found with the run's counts.
    """
    with NearDuplicateFinder(params) as finder:
        for item in items:
            finder.add(item)
        return finder.finish()
