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
    """The similar pairs of a collection, its groups, and how many pairs were looked at."""

    pages: int
    candidate_pairs: int
    all_pairs: int
    blocking: str
    pairs: tuple[dict[str, Any], ...]
    question: str = "custom"
    # Pages grouped by shared similar pages (``page_groups``), largest first; pages in no group
    # are counted in ``ungrouped``.
    groups: tuple[tuple[str, ...], ...] = ()
    ungrouped: int = 0
    # Candidate pairs left uncompared because there were more than WEBSIM_SIMILARITY_MAX_PAIRS.
    capped_pairs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return {
            "question": self.question,
            "pages": self.pages,
            "candidate_pairs": self.candidate_pairs,
            "capped_pairs": self.capped_pairs,
            "all_pairs": self.all_pairs,
            "blocking": self.blocking,
            "groups": [{"size": len(group), "pages": list(group)} for group in self.groups],
            "ungrouped": self.ungrouped,
            "similar_pairs": len(self.pairs),
            "pairs": list(self.pairs),
        }


# Two similar pages are grouped when this share of their similar pages (themselves included) is
# common to both (Jaccard of the closed neighbourhoods).
SHARED_NEIGHBOURS = 0.5


def page_groups(count: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Group pages by shared similar pages; return groups of two or more, largest first.

    Shared-nearest-neighbour clustering (Jarvis and Patrick, 1973): a similar pair is kept when
    the pages share at least ``SHARED_NEIGHBOURS`` of their similar pages, and the groups are the
    connected components of the kept pairs. Similarity is not transitive: a page like every
    other (a site's home or contact page) is kept only with the side it shares most with, so it
    does not merge a site's records with its result lists. Pages in collection order; groups of
    one size in the order of their first page.
    """
    neighbours: list[set[int]] = [{node} for node in range(count)]
    edges = [(first, second) for first, second in pairs if first != second]
    for first, second in edges:
        neighbours[first].add(second)
        neighbours[second].add(first)
    parent = list(range(count))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for first, second in edges:
        shared = len(neighbours[first] & neighbours[second])
        union = len(neighbours[first]) + len(neighbours[second]) - shared
        if shared >= SHARED_NEIGHBOURS * union:
            a, b = root(first), root(second)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for node in range(count):
        members.setdefault(root(node), []).append(node)
    groups = [group for group in members.values() if len(group) > 1]
    groups.sort(key=lambda group: (-len(group), group[0]))
    return groups


def capped(candidates: Sequence[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """Return at most ``limit`` candidates, spread evenly over the sorted list (every page keeps
    its share instead of the first pages taking the whole budget).
    """
    if len(candidates) <= limit:
        return list(candidates)
    step = len(candidates) / limit
    return [candidates[int(index * step)] for index in range(limit)]


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
    *,
    always_block: bool = False,
) -> SimilarPairs:
    """Compare the candidate pairs of a collection, keep those judged similar, group their pages.

    Candidates are all pairs of a collection of up to ``WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES``
    pages (unless ``always_block``), else the pairs sharing an LSH bucket; at most
    ``WEBSIM_SIMILARITY_MAX_PAIRS`` of them are compared (the rest counted in ``capped_pairs``).
    """
    params = params or SimilarityParams()
    count = len(pages)
    all_pairs = count * (count - 1) // 2
    if always_block or count > params.blocking_min_pages:
        found = sorted(candidate_pairs(pages, params))
        blocking = "minhash-lsh"
    else:
        found = [(i, j) for i in range(count) for j in range(i + 1, count)]
        blocking = "all-pairs"
    candidates = capped(found, params.max_pairs)
    if len(candidates) < len(found):
        logger.warning(
            "comparing %d of %d candidate pairs (WEBSIM_SIMILARITY_MAX_PAIRS)",
            len(candidates),
            len(found),
        )
    logger.info("comparing %d of %d pairs (%s)", len(candidates), all_pairs, blocking)
    attach_predecessors(pages)
    idf = InverseDocumentFrequency.fit(page.keywords for page in pages)
    similar: list[dict[str, Any]] = []
    linked: list[tuple[int, int]] = []
    for first, second in progress(candidates) if progress else candidates:
        report = compare_pages(pages[first], pages[second], params.pairs_mode, params, idf)
        if report.verdict != "similar":
            continue
        linked.append((first, second))
        similar.append(
            {
                "url_1": pages[first].url,
                "url_2": pages[second].url,
                "combined_score": report.combined_score,
                "scores": {r.stage: r.score for r in report.stages},
            }
        )
    similar.sort(key=lambda pair: -(pair["combined_score"] or 0.0))
    groups = page_groups(count, linked)
    return SimilarPairs(
        count,
        len(candidates),
        all_pairs,
        blocking,
        tuple(similar),
        question=params.question if params.question != "auto" else "custom",
        groups=tuple(tuple(pages[n].url or f"#{n}" for n in group) for group in groups),
        ungrouped=count - sum(map(len, groups)),
        capped_pairs=len(found) - len(candidates),
    )
