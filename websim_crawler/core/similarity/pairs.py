"""Find the similar pairs of a page collection without comparing every pair when it is large.

Candidate blocking: MinHash signatures of each page's tag shingles (its pq-grams) and of its
keywords go into two LSH indexes (datasketch); pages sharing a bucket in either become candidate
pairs, which are then compared with ``compare_pages``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
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

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return {
            "pages": self.pages,
            "candidate_pairs": self.candidate_pairs,
            "all_pairs": self.all_pairs,
            "blocking": self.blocking,
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
) -> set[tuple[int, int]]:
    """Return the index pairs that share an LSH bucket on tag shingles or on keywords."""
    found: set[tuple[int, int]] = set()
    for tokens_of in (_shingles, _keyword_tokens):
        index = MinHashLSH(threshold=params.lsh_threshold, num_perm=params.lsh_permutations)
        signatures: dict[int, MinHash] = {}
        for number, page in enumerate(pages):
            signature = _minhash(tokens_of(page), params.lsh_permutations)
            if signature is not None:
                signatures[number] = signature
                index.insert(number, signature)
        for number, signature in signatures.items():
            for other in index.query(signature):
                if other != number:
                    found.add((min(number, other), max(number, other)))
    return found


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
    if count > params.blocking_min_pages:
        candidates = sorted(candidate_pairs(pages, params))
        blocking = "minhash-lsh"
    else:
        candidates = [(i, j) for i in range(count) for j in range(i + 1, count)]
        blocking = "all-pairs"
    logger.info("comparing %d of %d pairs (%s)", len(candidates), all_pairs, blocking)
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
    return SimilarPairs(count, len(candidates), all_pairs, blocking, tuple(similar))
