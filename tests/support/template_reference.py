"""The seed's template comparison, kept as the slow reference of ``template_comparison``.

This is the implementation the package shipped before the fast one (commit 84acbe3), unchanged
but for its imports: every template is grown in full, every seed is a heap entry. The property
test in ``test_similarity_template.py`` checks that the fast one returns exactly the same
``LayoutMatch`` on random trees.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from dataclasses import dataclass

from rapidfuzz.distance import LCSseq

from websim_crawler.core.similarity.documents import LayoutInput, VertexTree, encode_labels
from websim_crawler.core.similarity.layout import LayoutMatch, _sigma, _vertices_of
from websim_crawler.errors import ConfigError


@dataclass(frozen=True)
class _Template:
    size: int
    weight: float
    pair_weight: float
    child_pairs: tuple[tuple[int, int], ...]


class _TemplateMatcher:
    """Grow templates from compatible vertex pairs and extract them Best-Match-Fit-First."""

    def __init__(self, first: VertexTree, second: VertexTree, penalty: float) -> None:
        self.first, self.second, self.penalty = first, second, penalty
        self.codes_1 = encode_labels(list(first.tags))
        self.codes_2 = encode_labels(list(second.tags))
        self.sizes_1 = _subtree_sizes(first)
        self.sizes_2 = _subtree_sizes(second)
        self.memo: dict[tuple[int, int], _Template] = {}

    def align_children(self, u: int, v: int) -> tuple[tuple[int, int], ...]:
        """Pair the children of u and v along a longest common subsequence of their tags."""
        children_u, children_v = self.first.children[u], self.second.children[v]
        if not children_u or not children_v:
            return ()
        tags_u = "".join(self.codes_1[c] for c in children_u)
        tags_v = "".join(self.codes_2[c] for c in children_v)
        pairs: list[tuple[int, int]] = []
        for block in LCSseq.opcodes(tags_u, tags_v):
            if block.tag == "equal":
                for offset in range(block.src_end - block.src_start):
                    pairs.append(
                        (
                            children_u[block.src_start + offset],
                            children_v[block.dest_start + offset],
                        )
                    )
        return tuple(pairs)

    def mismatch(self, u: int, v: int, matched_children: int) -> float:
        """Mean of the attribute, child-count and child-type differences of a vertex pair."""
        attrs_u, attrs_v = self.first.attributes[u], self.second.attributes[v]
        union = len(attrs_u | attrs_v)
        attribute_gap = 1.0 - len(attrs_u & attrs_v) / union if union else 0.0
        count_u, count_v = len(self.first.children[u]), len(self.second.children[v])
        most = max(count_u, count_v)
        count_gap = abs(count_u - count_v) / most if most else 0.0
        type_gap = 1.0 - 2.0 * matched_children / (count_u + count_v) if most else 0.0
        return (attribute_gap + count_gap + type_gap) / 3.0

    def grow(self, u: int, v: int) -> _Template:
        """Build (memoised) the template rooted at the compatible pair (u, v), children first."""
        memo = self.memo
        stack: list[tuple[int, int, tuple[tuple[int, int], ...] | None]] = [(u, v, None)]
        while stack:
            a, b, pairs = stack.pop()
            if (a, b) in memo:
                continue
            if pairs is None:
                pairs = self.align_children(a, b)
                stack.append((a, b, pairs))
                stack.extend((c, d, None) for c, d in pairs if (c, d) not in memo)
                continue
            pair_weight = 1.0 - self.penalty * self.mismatch(a, b, len(pairs))
            children = [memo[pair] for pair in pairs]
            memo[(a, b)] = _Template(
                size=1 + sum(t.size for t in children),
                weight=pair_weight + sum(t.weight for t in children),
                pair_weight=pair_weight,
                child_pairs=pairs,
            )
        return memo[(u, v)]

    def fit(
        self, u: int, v: int, covered_1: bytearray, covered_2: bytearray
    ) -> tuple[int, float, list[tuple[int, int, float]]]:
        """Return the part of a template whose vertices are all uncovered: size, weight, pairs."""
        self.grow(u, v)
        taken: list[tuple[int, int, float]] = []
        pending = [(u, v)]
        while pending:
            a, b = pending.pop()
            if covered_1[a] or covered_2[b]:
                continue
            template = self.memo[(a, b)]
            taken.append((a, b, template.pair_weight))
            pending.extend(template.child_pairs)
        return len(taken), sum(weight for _a, _b, weight in taken), taken

    def seeds(self, per_vertex: int) -> list[tuple[int, int]]:
        """Compatible pairs: each vertex with the same-tag vertices nearest in document order."""
        positions: dict[str, list[int]] = defaultdict(list)
        for index, tag in enumerate(self.second.tags):
            positions[tag].append(index)
        n1, n2 = len(self.first), len(self.second)
        pairs: list[tuple[int, int]] = []
        for u, tag in enumerate(self.first.tags):
            candidates = positions.get(tag)
            if not candidates:
                continue
            target = u * n2 / n1
            right = bisect.bisect_left(candidates, target)
            left = right - 1
            for _ in range(min(per_vertex, len(candidates))):
                take_left = right >= len(candidates) or (
                    left >= 0 and target - candidates[left] <= candidates[right] - target
                )
                if take_left:
                    pairs.append((u, candidates[left]))
                    left -= 1
                else:
                    pairs.append((u, candidates[right]))
                    right += 1
        return pairs


def _subtree_sizes(tree: VertexTree) -> list[int]:
    sizes = [1] * len(tree)
    for index in range(len(tree) - 1, -1, -1):
        for child in tree.children[index]:
            sizes[index] += sizes[child]
    return sizes


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
    pairs, then the least penalty, is taken first (a lazy priority queue re-scores a template
    whose vertices were partly covered by an earlier one).
    """
    if not 0.0 <= penalty <= 1.0:
        raise ConfigError(f"penalty must be in [0, 1], got {penalty!r}")
    if seed_candidates < 1:
        raise ConfigError(f"seed_candidates must be >= 1, got {seed_candidates!r}")
    first, second = _vertices_of(document_1), _vertices_of(document_2)
    total = len(first) + len(second)
    if not len(first) or not len(second):
        return LayoutMatch(_sigma(0.0, total), total, 0, 0)
    matcher = _TemplateMatcher(first, second, penalty)
    # Heap entries: (-size, penalty, u, v, exact); a bound (exact=False) is min(subtree sizes).
    heap: list[tuple[int, float, int, int, bool]] = [
        (-min(matcher.sizes_1[u], matcher.sizes_2[v]), 0.0, u, v, False)
        for u, v in matcher.seeds(seed_candidates)
    ]
    heapq.heapify(heap)
    covered_1, covered_2 = bytearray(len(first)), bytearray(len(second))
    left_1, left_2 = len(first), len(second)
    weight_sum, matched, templates = 0.0, 0, 0
    while heap and left_1 and left_2:
        negative_size, loss, u, v, exact = heapq.heappop(heap)
        if covered_1[u] or covered_2[v]:
            continue
        size, weight, taken = matcher.fit(u, v, covered_1, covered_2)
        if not exact or size != -negative_size or size - weight != loss:
            heapq.heappush(heap, (-size, size - weight, u, v, True))
            continue
        for a, b, _pair_weight in taken:
            covered_1[a] = covered_2[b] = 1
        left_1 -= size
        left_2 -= size
        weight_sum += weight
        matched += size
        templates += 1
    return LayoutMatch(_sigma(weight_sum, total), total, matched, templates)
