"""Layout similarity of two DOM trees: the simple tag comparison and the template comparison.

Both give sigma = sum of Wt(v) over the covered vertices of both trees / number of vertices,
where vertices are the rendered elements (``documents.NON_LAYOUT_TAGS`` and their subtrees are
left out). The tag algorithm weighs every matched vertex 1; the template algorithm weighs a vertex
1 - penalty * mismatch, where mismatch is the mean of the differences in attributes, child count
and child types of the matched pair.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.similarity.documents import (
    LayoutInput,
    VertexTree,
    as_parsed_document,
)
from websim_crawler.core.similarity.template_matching import (
    PairKey,
    QueueEntry,
    SeedBounds,
    TemplateMatcher,
    attribute_gap_matrix,
    leaf_pair_weights,
    seed_pairs,
)
from websim_crawler.errors import ConfigError


@dataclass(frozen=True)
class LayoutMatch:
    """The outcome of a layout comparison."""

    score: float
    vertices: int
    matched_pairs: int
    templates: int


def _vertices_of(document: LayoutInput | None) -> VertexTree:
    if document is None:
        return VertexTree((), (), ())
    return as_parsed_document(document).vertices


def _sigma(weight_sum: float, total: int) -> float:
    return 1.0 if total == 0 else min(1.0, 2.0 * weight_sum / total)


def tag_comparison(document_1: LayoutInput | None, document_2: LayoutInput | None) -> LayoutMatch:
    """Compare every tag of page 1 with the uncovered tags of page 2 (same name and attribute
    names), covering each matched pair, until no tag matches; every covered vertex weighs 1.
    """
    first, second = _vertices_of(document_1), _vertices_of(document_2)
    waiting: dict[tuple[str, frozenset[str]], deque[int]] = defaultdict(deque)
    for index, key in enumerate(zip(second.tags, second.attributes, strict=True)):
        waiting[key].append(index)
    matched = 0
    for key in zip(first.tags, first.attributes, strict=True):
        queue = waiting.get(key)
        if queue:
            queue.popleft()
            matched += 1
    total = len(first) + len(second)
    return LayoutMatch(_sigma(matched, total), total, matched, 1 if matched else 0)


def template_comparison(
    document_1: LayoutInput | None,
    document_2: LayoutInput | None,
    *,
    penalty: float = 0.5,
    seed_candidates: int = 4,
) -> LayoutMatch:
    """Compare two trees by templates, extracted Best-Match-Fit-First until both are covered.

    Templates grow from compatible vertex pairs (same tag) by pairing children along the longest
    common subsequence of their tags, iteratively; the template with the most uncovered vertex
    pairs, then the least penalty (then the first pair), is taken first. Templates of two or more
    pairs come from a lazy priority queue that re-scores a template whose vertices were partly
    covered by an earlier one; single pairs (a leaf on either side, or a template reduced to its
    root) are all known in advance and taken last, by least penalty, in one sorted sweep.

    A template with nothing covered depends on its two subtrees alone, so its size, weight and
    shape are found once per pair of subtree classes (identical subtrees) and shared by every
    seed of that pair: each seed enters the queue at its whole template's size and loss, so a
    seed is walked only when part of its template was covered, and the work grows with the
    pages rather than with the seeds times their templates.
    """
    if not 0.0 <= penalty <= 1.0:
        raise ConfigError(f"penalty must be in [0, 1], got {penalty!r}")
    if seed_candidates < 1:
        raise ConfigError(f"seed_candidates must be >= 1, got {seed_candidates!r}")
    first, second = _vertices_of(document_1), _vertices_of(document_2)
    total = len(first) + len(second)
    if not len(first) or not len(second):
        return LayoutMatch(_sigma(0.0, total), total, 0, 0)
    seed_1, seed_2 = seed_pairs(first, second, seed_candidates)
    matcher = TemplateMatcher(first, second, penalty)
    # Seeds with a child tag in common; every other seed's template is its root pair alone.
    inner = np.flatnonzero(first.child_tag_masks[seed_1] & second.child_tag_masks[seed_2])
    full_sizes = matcher.full_sizes_of(seed_1[inner], seed_2[inner])
    # Seeds whose whole template is more than their root pair; every other seed is a single pair.
    grows = inner[full_sizes > 1]
    # Queue entries: (-size, loss, u, v, exact). The seeds' bounds come in order from
    # ``SeedBounds``; entries with an exact size and loss go on a heap; the next entry is the
    # smaller of the next bound and the heap's top.
    bounds = SeedBounds(matcher, seed_1[grows], seed_2[grows], full_sizes[full_sizes > 1])
    heap: list[QueueEntry] = []
    attribute_gaps = attribute_gap_matrix(first, second)
    covered_1, covered_2 = bytearray(len(first)), bytearray(len(second))
    view_1 = np.frombuffer(covered_1, dtype=np.uint8)
    view_2 = np.frombuffer(covered_2, dtype=np.uint8)
    left_1, left_2 = len(first), len(second)
    weight_sum, matched, templates = 0.0, 0, 0
    single_1: list[int] = []
    single_2: list[int] = []
    single_weights: list[float] = []
    # The fit of a template put back on the heap: still its fit when it is popped again if
    # none of its vertices was covered meanwhile (covering only grows).
    refits: dict[PairKey, tuple[float, int, NDArray[np.int64], NDArray[np.int64]]] = {}
    while left_1 and left_2:
        next_bound = bounds.next_bound(covered_1, covered_2, view_1, view_2)
        fitted = None
        if next_bound is not None and (not heap or next_bound < heap[0]):
            negative_size, loss, u, v, exact = next_bound
            bounds.position += 1
        elif heap:
            negative_size, loss, u, v, exact = heapq.heappop(heap)
            if covered_1[u] or covered_2[v]:
                continue
            fitted = refits.pop((u, v), None)
            if fitted is not None and (view_1[fitted[2]].any() or view_2[fitted[3]].any()):
                fitted = None
        else:
            break
        weight, size, taken_1, taken_2 = fitted or matcher.fit_template(
            u, v, covered_1, covered_2, view_1, view_2
        )
        if size == 1:  # reduced to its root: a single pair, taken in the sweep below
            single_1.append(u)
            single_2.append(v)
            single_weights.append(weight)
            continue
        if not (exact and size == -negative_size and size - weight == loss):
            entry = (-size, size - weight, u, v, True)
            lower_bound = bounds.lower_bound()
            if (heap and entry > heap[0]) or (lower_bound is not None and entry > lower_bound):
                # another template may be larger now: look again later
                heapq.heappush(heap, entry)
                refits[(u, v)] = (weight, size, taken_1, taken_2)
                continue
        view_1[taken_1] = 1
        view_2[taken_2] = 1
        left_1 -= size
        left_2 -= size
        weight_sum += weight
        matched += size
        templates += 1
    leaves = np.ones(len(seed_1), dtype=bool)
    leaves[grows] = False
    leaf_weights = leaf_pair_weights(
        first, second, seed_1[leaves], seed_2[leaves], attribute_gaps, penalty
    )
    pair_1 = np.concatenate([seed_1[leaves], np.array(single_1, dtype=np.int64)])
    pair_2 = np.concatenate([seed_2[leaves], np.array(single_2, dtype=np.int64)])
    weights = np.concatenate([leaf_weights, np.array(single_weights, dtype=np.float64)])
    uncovered = (view_1[pair_1] == 0) & (view_2[pair_2] == 0)
    pair_1, pair_2, weights = pair_1[uncovered], pair_2[uncovered], weights[uncovered]
    order = np.lexsort((pair_2, pair_1, 1.0 - weights))
    for u, v, weight in zip(
        pair_1[order].tolist(), pair_2[order].tolist(), weights[order].tolist(), strict=True
    ):
        if covered_1[u] or covered_2[v]:
            continue
        covered_1[u] = covered_2[v] = 1
        weight_sum += weight
        matched += 1
        templates += 1
    return LayoutMatch(_sigma(weight_sum, total), total, matched, templates)
