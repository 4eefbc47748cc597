"""Find the similar pairs of a page collection without comparing every pair when it is large.

A collection of up to ``WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES`` pages compares every pair. In a
larger one, pages whose tag shingles, keywords and links are identical collapse into one group
first: the group is reported as such and only its first page is compared with the others.
Then candidate blocking: MinHash signatures (datasketch) of each page's tag shingles (its
pq-grams) and of its keywords are cut into the LSH bands of Leskovec, Rajaraman and Ullman,
"Mining of Massive Datasets", ch. 3; pages sharing a band's bucket in either become candidate
pairs, compared with ``compare_pages``. A bucket of more than ``WEBSIM_SIMILARITY_LSH_MAX_BUCKET``
pages pairs each page with its next ones only (the sorted-neighbourhood window of Hernández and
Stolfo, "The merge/purge problem for large databases", 1995): candidates grow linearly.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from datasketch import MinHash, MinHashLSH

from websim_crawler.core.similarity.compare import PageFeatures, compare_pages
from websim_crawler.core.similarity.links import LinkGraph
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.text import InverseDocumentFrequency
from websim_crawler.core.urls import page_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimilarPairs:
    """The similar pairs of a collection and how many pairs were looked at."""

    pages: int
    candidate_pairs: int
    all_pairs: int
    blocking: str
    pairs: tuple[dict[str, Any], ...]
    # Pages with identical tag shingles, keywords and links: one group each, compared once.
    identical_groups: tuple[tuple[str | None, ...], ...] = ()
    capped_buckets: int = 0  # LSH buckets over WEBSIM_SIMILARITY_LSH_MAX_BUCKET pages

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return {
            "pages": self.pages,
            "candidate_pairs": self.candidate_pairs,
            "all_pairs": self.all_pairs,
            "blocking": self.blocking,
            "identical_groups": [list(group) for group in self.identical_groups],
            "capped_buckets": self.capped_buckets,
            "pairs": list(self.pairs),
        }


def _shingles(page: PageFeatures) -> list[bytes]:
    if page.document is None:
        return []
    return ["\x1f".join(gram).encode() for gram in page.document.pq_grams]


def _minhash(tokens: Iterable[bytes], permutations: int) -> MinHash | None:
    values = list(tokens)
    if not values:
        return None
    signature = MinHash(num_perm=permutations, seed=1)
    signature.update_batch(values)
    return signature


def candidate_pairs(
    pages: Sequence[PageFeatures], params: SimilarityParams
) -> tuple[set[tuple[int, int]], int]:
    """Return the index pairs that share an LSH bucket on tag shingles or on keywords, and the
    number of buckets capped at ``params.lsh_max_bucket`` pages."""
    found: set[tuple[int, int]] = set()
    capped = 0
    bands, rows = _band_shape(params)
    for tokens_of in (_shingles, _keyword_tokens):
        buckets: defaultdict[tuple[int, bytes], list[int]] = defaultdict(list)
        for number, page in enumerate(pages):
            signature = _minhash(tokens_of(page), params.lsh_permutations)
            if signature is None:
                continue
            for band in range(bands):
                key = signature.hashvalues[band * rows : (band + 1) * rows].tobytes()
                buckets[band, key].append(number)
        for members in buckets.values():
            capped += len(members) > params.lsh_max_bucket
            found.update(_bucket_pairs(members, params.lsh_max_bucket))
    return found, capped


def _band_shape(params: SimilarityParams) -> tuple[int, int]:
    """Return datasketch's (bands, rows) for the threshold: the split whose S-curve errs least."""
    index = MinHashLSH(threshold=params.lsh_threshold, num_perm=params.lsh_permutations)
    return index.b, index.r


def _bucket_pairs(members: list[int], max_bucket: int) -> Iterator[tuple[int, int]]:
    """Pair every two members of a bucket, or each with its next ``max_bucket - 1`` when over."""
    for position, first in enumerate(members):
        for second in members[position + 1 : position + max_bucket]:
            yield first, second


def identical_groups(pages: Sequence[PageFeatures]) -> list[list[int]]:
    """Group the pages whose tag shingles, keywords and links are identical (first seen first)."""
    groups: dict[bytes, list[int]] = {}
    for number, page in enumerate(pages):
        digest = hashlib.blake2b(digest_size=16)
        for part in (
            sorted(set(_shingles(page))),
            sorted(f"{term}\x1f{count}".encode() for term, count in page.keywords.items()),
            sorted(link.encode() for link in page.links),
        ):
            digest.update(b"\x1e".join(part) + b"\x1d")
        groups.setdefault(digest.digest(), []).append(number)
    return list(groups.values())


def _keyword_tokens(page: PageFeatures) -> list[bytes]:
    return [term.encode() for term in page.keywords]


def attach_predecessors(pages: Sequence[PageFeatures]) -> None:
    """Set every page's predecessors from the collection's link graph."""
    graph = LinkGraph({page.url or f"#{n}": page.links for n, page in enumerate(pages)})
    for page in pages:
        if page.url:
            page.predecessors = graph.predecessors.get(page_key(page.url), frozenset())


def find_similar_pairs(
    pages: Sequence[PageFeatures],
    params: SimilarityParams | None = None,
    progress: Callable[[Iterable[tuple[int, int]]], Iterable[tuple[int, int]]] | None = None,
) -> SimilarPairs:
    """Compare the candidate pairs of a collection and keep those judged similar."""
    params = params or SimilarityParams()
    count = len(pages)
    all_pairs = count * (count - 1) // 2
    groups = [[number] for number in range(count)]
    capped = 0
    if count > params.blocking_min_pages:
        groups = identical_groups(pages)
        representatives = [group[0] for group in groups]
        shown, capped = candidate_pairs([pages[n] for n in representatives], params)
        candidates = sorted((representatives[i], representatives[j]) for i, j in shown)
        blocking = "minhash-lsh"
    else:
        candidates = [(i, j) for i in range(count) for j in range(i + 1, count)]
        blocking = "all-pairs"
    logger.info(
        "comparing %d of %d pairs (%s; %d groups of identical pages, %d capped buckets)",
        len(candidates),
        all_pairs,
        blocking,
        sum(len(group) > 1 for group in groups),
        capped,
    )
    attach_predecessors(pages)
    idf = InverseDocumentFrequency.fit(page.keywords for page in pages)
    similar: list[dict[str, Any]] = []
    for first, second in progress(candidates) if progress else candidates:
        report = compare_pages(pages[first], pages[second], params.pairs_mode, params, idf)
        if report.verdict != "similar":
            continue
        similar.append(
            {
                "url_1": pages[first].url,
                "url_2": pages[second].url,
                "combined_score": report.combined_score,
                "scores": {r.stage: r.score for r in report.stages},
            }
        )
    similar.sort(key=lambda pair: -(pair["combined_score"] or 0.0))
    return SimilarPairs(
        count,
        len(candidates),
        all_pairs,
        blocking,
        tuple(similar),
        tuple(tuple(pages[n].url for n in group) for group in groups if len(group) > 1),
        capped,
    )
