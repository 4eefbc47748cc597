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
from typing import Any, TypedDict

from datasketch import MinHash, MinHashLSH

from websim_crawler.core.similarity.comparison import PageFeatures, compare_pages
from websim_crawler.core.similarity.links import LinkGraph
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.core.similarity.questions import QUESTIONS
from websim_crawler.core.similarity.template_classes import (
    CHROME_MIN_PAGES,
    TEMPLATE_CLASSES,
    chrome_classes,
    template_class_similarity,
)
from websim_crawler.core.similarity.text import InverseDocumentFrequency
from websim_crawler.core.urls import page_key

logger = logging.getLogger(__name__)


class PairScores(TypedDict):
    """What judged a pair similar: its combined score and each stage's (or the template
    classes') score; ``None`` where a mode or a stage gives none (a cascade, a page without
    links)."""

    combined_score: float | None
    scores: dict[str, float | None]


class SimilarPair(PairScores):
    """One similar pair of a collection, by its pages' URLs (``None``: a page without one)."""

    url_1: str | None
    url_2: str | None


@dataclass(frozen=True)
class SimilarPairs:
    """The similar pairs of a collection, its groups, and how many pairs were looked at."""

    pages: int
    candidate_pairs: int
    all_pairs: int
    blocking: str
    pairs: tuple[SimilarPair, ...]
    question: str = "custom"
    # Pages grouped by shared similar pages (``page_groups``), largest first; pages in no group
    # are counted in ``ungrouped`` and listed, in input order, in ``ungrouped_pages``.
    groups: tuple[tuple[str, ...], ...] = ()
    ungrouped: int = 0
    ungrouped_pages: tuple[str, ...] = ()
    # Candidate pairs left uncompared because there were more than WEBSIM_SIMILARITY_MAX_PAIRS.
    capped_pairs: int = 0
    # Pages with identical tag shingles, keywords and links: one group each, compared once.
    identical_groups: tuple[tuple[str | None, ...], ...] = ()
    capped_buckets: int = 0  # LSH buckets over WEBSIM_SIMILARITY_LSH_MAX_BUCKET pages
    # What judged the pairs: the stages that weigh in the question, or ``template_classes``.
    decided_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return {
            "question": self.question,
            "decided_by": list(self.decided_by),
            "pages": self.pages,
            "candidate_pairs": self.candidate_pairs,
            "capped_pairs": self.capped_pairs,
            "all_pairs": self.all_pairs,
            "blocking": self.blocking,
            "groups": [{"size": len(group), "pages": list(group)} for group in self.groups],
            "ungrouped": self.ungrouped,
            "ungrouped_pages": list(self.ungrouped_pages),
            "similar_pairs": len(self.pairs),
            "identical_groups": [list(group) for group in self.identical_groups],
            "capped_buckets": self.capped_buckets,
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


def _with_identical_pages(groups: list[list[int]], identical: list[list[int]]) -> list[list[int]]:
    """Put each identical page in its representative's group (an identical group whose first
    page is in none is a group of its own); largest first, pages in collection order."""
    members = {group[0]: group for group in identical if len(group) > 1}
    if not members:
        return groups
    grouped = {page for group in groups for page in group}
    merged = [sorted(n for page in group for n in members.get(page, [page])) for group in groups]
    merged += [group for first, group in members.items() if first not in grouped]
    return sorted(merged, key=lambda group: (-len(group), group[0]))


PairJudge = Callable[[int, int], PairScores | None]


def _pair_judge(
    pages: Sequence[PageFeatures], params: SimilarityParams
) -> tuple[PairJudge, tuple[str, ...]]:
    """Return what judges a pair of ``pages`` (its scores when similar, else None) and the names
    of what it reads.

    ``compare_pages`` judges (the stages, or for same-template the class names two pages
    share), except for a question with a template classes threshold in a collection of at least
    ``CHROME_MIN_PAGES`` pages: there two pages that use class names are judged by their
    template classes with the collection's chrome discounted (``template_classes``); a page
    without class names or without HTML falls back to the stages.
    """
    idf = InverseDocumentFrequency.fit(page.keywords for page in pages)

    def by_stages(first: int, second: int) -> PairScores | None:
        report = compare_pages(pages[first], pages[second], params.pairs_mode, params, idf)
        if report.verdict != "similar":
            return None
        scores = {r.stage: r.score for r in report.stages}
        if report.decided_by == (TEMPLATE_CLASSES,):
            scores[TEMPLATE_CLASSES] = report.combined_score
        return PairScores(combined_score=report.combined_score, scores=scores)

    stages = tuple(
        stage
        for stage, weight in zip(STAGES, params.stage_weights, strict=True)
        if weight > 0 or params.pairs_mode != "combined"
    )
    question = QUESTIONS.get(params.question)
    threshold = question.template_classes_threshold if question else None
    if threshold is None or len(pages) < CHROME_MIN_PAGES:
        if question is not None and question.pair_classes_threshold is not None:
            stages = (TEMPLATE_CLASSES, *stages)  # pages with class names; the others by stages
        return by_stages, stages
    classes = [None if page.document is None else page.document.classes for page in pages]
    chrome = chrome_classes(names for names in classes if names is not None)

    def by_template_classes(first: int, second: int) -> PairScores | None:
        one, other = classes[first], classes[second]
        if not one or not other:  # no document (HTML dropped), no classes
            return by_stages(first, second)
        score = template_class_similarity(one, other, chrome)
        if score < threshold:
            return None
        return PairScores(combined_score=score, scores={TEMPLATE_CLASSES: score})

    return by_template_classes, (TEMPLATE_CLASSES,)


def find_similar_pairs(
    pages: Sequence[PageFeatures],
    params: SimilarityParams | None = None,
    progress: Callable[[Iterable[tuple[int, int]]], Iterable[tuple[int, int]]] | None = None,
    *,
    always_block: bool = False,
) -> SimilarPairs:
    """Compare the candidate pairs of a collection, keep those judged similar, group their pages.

    Takes a sequence of ``PageFeatures`` (``page_features``); returns ``SimilarPairs`` (the
    similar pairs by index, the groups of pages).

    Candidates are all pairs of a collection of up to ``WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES``
    pages (unless ``always_block``), else the pairs sharing an LSH bucket; at most
    ``WEBSIM_SIMILARITY_MAX_PAIRS`` of them are compared (the rest counted in ``capped_pairs``).
    """
    params = params or SimilarityParams()
    count = len(pages)
    all_pairs = count * (count - 1) // 2
    identical = [[number] for number in range(count)]
    capped_buckets = 0
    if always_block or count > params.blocking_min_pages:
        identical = identical_groups(pages)
        representatives = [group[0] for group in identical]
        shown, capped_buckets = candidate_pairs([pages[n] for n in representatives], params)
        found = sorted((representatives[i], representatives[j]) for i, j in shown)
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
    logger.info(
        "comparing %d of %d pairs (%s; %d groups of identical pages, %d capped buckets)",
        len(candidates),
        all_pairs,
        blocking,
        sum(len(group) > 1 for group in identical),
        capped_buckets,
    )
    attach_predecessors(pages)
    judge, decided_by = _pair_judge(pages, params)
    similar: list[SimilarPair] = []
    linked: list[tuple[int, int]] = []
    for first, second in progress(candidates) if progress else candidates:
        scores = judge(first, second)
        if scores is None:
            continue
        linked.append((first, second))
        url_1, url_2 = pages[first].url, pages[second].url
        similar.append(SimilarPair(url_1=url_1, url_2=url_2, **scores))
    similar.sort(key=lambda pair: -(pair["combined_score"] or 0.0))
    groups = _with_identical_pages(page_groups(count, linked), identical)
    return SimilarPairs(
        count,
        len(candidates),
        all_pairs,
        blocking,
        tuple(similar),
        question=params.question if params.question != "auto" else "custom",
        groups=tuple(tuple(pages[n].url or f"#{n}" for n in group) for group in groups),
        ungrouped=count - sum(map(len, groups)),
        ungrouped_pages=tuple(
            pages[n].url or f"#{n}"
            for n in sorted(set(range(count)) - {n for group in groups for n in group})
        ),
        capped_pairs=len(found) - len(candidates),
        identical_groups=tuple(
            tuple(pages[n].url for n in group) for group in identical if len(group) > 1
        ),
        capped_buckets=capped_buckets,
        decided_by=decided_by,
    )
