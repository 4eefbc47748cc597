"""Template matching of two vertex trees: the pieces of ``layout.template_comparison``.

A template is a set of vertex pairs grown from a compatible pair (same tag) by pairing children
along the longest common subsequence of their tags (``TemplateMatcher``); its weight is the sum
of 1 - penalty * mismatch over its pairs (``_pair_shape``). The seeds are the compatible pairs
(``seed_pairs``), taken in order of their whole template's size and loss (``SeedBounds``).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import NDArray
from rapidfuzz.distance import LCSseq

from websim_crawler.core.similarity.documents import VertexTree

PairKey = tuple[int, int]
# Identical subtrees of at least this many vertices are paired in one vectorised step.
_IDENTICAL_MIN_SIZE = 8


class TemplateMatcher:
    """Grow templates from compatible vertex pairs and fit them to the uncovered vertices."""

    def __init__(
        self,
        first: VertexTree,
        second: VertexTree,
        penalty: float,
    ) -> None:
        self.penalty = penalty
        self.children_1, self.children_2 = first.children, second.children
        self.shape_ids_1, self.shape_ids_2 = first.shape_ids, second.shape_ids
        self.shape_table_1, self.shape_table_2 = first.shape_table, second.shape_table
        self.sizes = first.subtree_sizes
        self.sizes_1: list[int] = self.sizes.tolist()
        self.digests_1, self.digests_2 = first.subtree_digests, second.subtree_digests
        # (shape of u, shape of v) -> (pair weight, LCS equal blocks), a shape being the child
        # tags and attribute names of a vertex (``_pair_shape``).
        self.shapes: dict[tuple[int, int], tuple[float, tuple[tuple[int, int, int], ...]]] = {}
        # (u, v) -> (the pair's weight 1 - penalty * mismatch, its aligned child pairs)
        self.memo: dict[PairKey, tuple[float, tuple[PairKey, ...]]] = {}
        # A template with nothing covered depends on the two subtrees alone, so it is known by
        # their classes (``VertexTree.subtree_classes``), numbered class_1 * classes_2 + class_2.
        self.sizes_2: list[int] = second.subtree_sizes.tolist()
        self.class_array_1, self.class_array_2 = first.subtree_classes, second.subtree_classes
        self.classes_1: list[int] = self.class_array_1.tolist()
        self.classes_2: list[int] = self.class_array_2.tolist()
        self.class_count_2 = int(self.class_array_2.max()) + 1
        # class pair -> number of pairs of its whole template
        self.full_sizes: dict[int, int] = {}
        self.child_tag_masks_1: list[int] = first.child_tag_masks.tolist()
        self.child_tag_masks_2: list[int] = second.child_tag_masks.tolist()
        # class pair -> weight of its whole template and its vertices' offsets from the root pair
        self.whole_templates: dict[int, tuple[float, NDArray[np.int64], NDArray[np.int64]]] = {}
        self.nothing_covered_1 = bytearray(len(first))
        self.nothing_covered_2 = bytearray(len(second))

    def class_pair(self, u: int, v: int) -> int:
        """Number the pair of the subtree classes of u and v."""
        return self.classes_1[u] * self.class_count_2 + self.classes_2[v]

    def full_sizes_of(self, u: NDArray[np.int64], v: NDArray[np.int64]) -> NDArray[np.int64]:
        """Return the number of pairs of the whole template rooted at each pair (u[i], v[i]).

        That is 1 + those of its child pairs' templates (for identical subtrees, their size),
        found once for each class pair, children first.
        """
        keys = self.class_pairs(u, v)
        unique_keys, first_index, inverse = np.unique(keys, return_index=True, return_inverse=True)
        full_sizes, memo, expand = self.full_sizes, self.memo, self.expand
        classes_1, classes_2, class_count_2 = self.classes_1, self.classes_2, self.class_count_2
        digests_1, digests_2, sizes_1 = self.digests_1, self.digests_2, self.sizes_1
        masks_1, masks_2 = self.child_tag_masks_1, self.child_tag_masks_2
        unique_list: list[int] = unique_keys.tolist()
        pending = list(
            zip(u[first_index].tolist(), v[first_index].tolist(), unique_list, strict=True)
        )
        while pending:
            a, b, key = pending[-1]
            if key in full_sizes:
                pending.pop()
                continue
            if digests_1[a] == digests_2[b]:
                full_sizes[key] = sizes_1[a]
                pending.pop()
                continue
            pair = (a, b)
            grown = memo.get(pair)
            if grown is None:
                grown = memo[pair] = expand(a, b)
            size, complete = 1, True
            for c, d in grown[1]:
                if not masks_1[c] & masks_2[d]:  # no child tag in common: the pair alone
                    size += 1
                    continue
                child_key = classes_1[c] * class_count_2 + classes_2[d]
                child_size = full_sizes.get(child_key)
                if child_size is None:
                    pending.append((c, d, child_key))
                    complete = False
                else:
                    size += child_size
            if complete:
                full_sizes[key] = size
                pending.pop()
        return np.array([full_sizes[key] for key in unique_list], dtype=np.int64)[inverse]

    def class_pairs(self, u: NDArray[np.int64], v: NDArray[np.int64]) -> NDArray[np.int64]:
        """Number the class pairs of the pairs (u[i], v[i]), as ``class_pair`` does."""
        return self.class_array_1[u] * self.class_count_2 + self.class_array_2[v]

    def whole_template(self, u: int, v: int) -> tuple[float, NDArray[np.int64], NDArray[np.int64]]:
        """Return the weight of the whole template rooted at (u, v) and its vertices' offsets
        from u and from v (the same for every pair of its class pair, so walked once).
        """
        key = self.class_pair(u, v)
        whole = self.whole_templates.get(key)
        if whole is None:
            weight, taken_1, taken_2 = self.fit(
                u, v, self.nothing_covered_1, self.nothing_covered_2
            )
            whole = self.whole_templates[key] = (
                weight,
                np.array(taken_1, dtype=np.int64) - u,
                np.array(taken_2, dtype=np.int64) - v,
            )
        return whole

    def whole_losses(self, u: NDArray[np.int64], v: NDArray[np.int64]) -> NDArray[np.float64]:
        """Return the loss (size - weight) of the whole template of each pair (u[i], v[i])."""
        _keys, first_index, inverse = np.unique(
            self.class_pairs(u, v), return_index=True, return_inverse=True
        )
        losses = []
        for a, b in zip(u[first_index].tolist(), v[first_index].tolist(), strict=True):
            weight, offsets_1, _offsets_2 = self.whole_template(a, b)
            losses.append(len(offsets_1) - weight)
        return np.array(losses, dtype=np.float64)[inverse]

    def fit_template(
        self,
        u: int,
        v: int,
        covered_1: bytearray,
        covered_2: bytearray,
        view_1: NDArray[np.uint8],
        view_2: NDArray[np.uint8],
    ) -> tuple[float, int, NDArray[np.int64], NDArray[np.int64]]:
        """Return ``fit`` as weight, size and the vertices on each page: the whole template
        when none of its vertices is covered, else the part walked from (u, v).
        """
        weight, offsets_1, offsets_2 = self.whole_template(u, v)
        taken_1, taken_2 = offsets_1 + u, offsets_2 + v
        if (
            covered_1.find(1, u, u + self.sizes_1[u]) < 0
            and covered_2.find(1, v, v + self.sizes_2[v]) < 0
        ) or not (view_1[taken_1].any() or view_2[taken_2].any()):
            return weight, len(taken_1), taken_1, taken_2
        weight, walked_1, walked_2 = self.fit(u, v, covered_1, covered_2)
        return (
            weight,
            len(walked_1),
            np.array(walked_1, dtype=np.int64),
            np.array(walked_2, dtype=np.int64),
        )

    def expand(self, u: int, v: int) -> tuple[float, tuple[PairKey, ...]]:
        """Return a pair's weight and its children paired along the LCS of their tags."""
        shape_key = (self.shape_ids_1[u], self.shape_ids_2[v])
        shape = self.shapes.get(shape_key)
        if shape is None:
            shape = self.shapes[shape_key] = _pair_shape(
                self.shape_table_1[shape_key[0]], self.shape_table_2[shape_key[1]], self.penalty
            )
        pair_weight, blocks = shape
        if not blocks:
            return pair_weight, ()
        children_u, children_v = self.children_1[u], self.children_2[v]
        if len(blocks) == 1 and blocks[0][0] == 0 and blocks[0][2] == 0:
            return pair_weight, tuple(zip(children_u[: blocks[0][1]], children_v, strict=False))
        pairs: list[PairKey] = []
        for start, end, start_v in blocks:
            pairs.extend(zip(children_u[start:end], children_v[start_v:], strict=False))
        return pair_weight, tuple(pairs)

    def fit(
        self, u: int, v: int, covered_1: bytearray, covered_2: bytearray
    ) -> tuple[float, list[int], list[int]]:
        """Return the part of a template whose vertices are all uncovered: weight and pairs
        (their vertices on page 1 and on page 2, in visiting order).

        The template rooted at (u, v) is grown as far as it is visited (a pair's weight and
        child pairs depend on that pair alone, so they are memoised for every later fit); the
        weight is summed in visiting order, so equal parts weigh exactly the same. Identical
        subtrees (equal digests) pair vertex for vertex, each pair weighing 1, and are taken in
        one step.
        """
        memo, sizes_1, expand = self.memo, self.sizes_1, self.expand
        digests_1, digests_2 = self.digests_1, self.digests_2
        taken_1: list[int] = []
        taken_2: list[int] = []
        weight = 0.0
        pending = [(u, v)]
        pop, extend = pending.pop, pending.extend
        while pending:
            pair = pop()
            a, b = pair
            if covered_1[a] or covered_2[b]:
                continue
            size = sizes_1[a]
            if size >= _IDENTICAL_MIN_SIZE and digests_1[a] == digests_2[b]:
                identical = _take_identical(
                    a, b, size, covered_1, covered_2, taken_1, taken_2, self.sizes
                )
                for _ in range(identical):
                    weight += 1.0  # one by one, as the pairs would be visited
                continue
            grown = memo.get(pair)
            if grown is None:
                grown = memo[pair] = expand(a, b)
            taken_1.append(a)
            taken_2.append(b)
            weight += grown[0]
            extend(grown[1])
        return weight, taken_1, taken_2


_Shape = tuple[str, str, frozenset[str]]
_Blocks = tuple[tuple[int, int, int], ...]
# (name of u's shape, of v's, penalty) -> (pair weight, LCS equal blocks), kept across comparisons
# (the pages of a site share their shapes); cleared when full, so its memory stays bounded.
_PAIR_SHAPES: dict[tuple[str, str, float], tuple[float, _Blocks]] = {}
PAIR_SHAPE_CACHE_SIZE = 1 << 17


def _pair_shape(shape_u: _Shape, shape_v: _Shape, penalty: float) -> tuple[float, _Blocks]:
    """Return the weight of a pair, 1 - penalty * the mean of its attribute, child-count and
    child-type gaps, and the equal blocks (start, end, start in v) of its children's LCS.
    """
    key = (shape_u[0], shape_v[0], penalty)
    known = _PAIR_SHAPES.get(key)
    if known is not None:
        return known
    (_name_u, tags_u, attributes_u), (_name_v, tags_v, attributes_v) = shape_u, shape_v
    blocks = _child_blocks(tags_u, tags_v)
    matched_children = sum(end - start for start, end, _start_v in blocks)
    # The arithmetic of ``attribute_gap_matrix`` (exact counts as floats, one division).
    common = float(len(attributes_u & attributes_v))
    union = len(attributes_u) + len(attributes_v) - common
    attribute_gap = 1.0 - common / max(union, 1.0) if union > 0 else 0.0
    count_u, count_v = len(tags_u), len(tags_v)
    most = max(count_u, count_v)
    count_gap = abs(count_u - count_v) / most if most else 0.0
    type_gap = 1.0 - 2.0 * matched_children / (count_u + count_v) if most else 0.0
    shape = (1.0 - penalty * ((attribute_gap + count_gap + type_gap) / 3.0), blocks)
    if len(_PAIR_SHAPES) >= PAIR_SHAPE_CACHE_SIZE:
        _PAIR_SHAPES.clear()
    _PAIR_SHAPES[key] = shape
    return shape


# (child tags of u, of v) -> their LCS equal blocks, kept across comparisons like the shapes
# (many shapes share their child tags); cleared when full.
_CHILD_BLOCKS: dict[tuple[str, str], _Blocks] = {}
CHILD_BLOCKS_CACHE_SIZE = 1 << 17


def _child_blocks(tags_u: str, tags_v: str) -> _Blocks:
    """Return the equal blocks (start, end, start in v) of the LCS of two child tag strings."""
    if tags_u == tags_v:
        return ((0, len(tags_u), 0),) if tags_u else ()
    if not (tags_u and tags_v):
        return ()
    key = (tags_u, tags_v)
    blocks = _CHILD_BLOCKS.get(key)
    if blocks is None:
        # as_list: (tag, start, end, start in v, end in v), faster to read than Opcode objects
        opcodes = cast(
            "list[tuple[str, int, int, int, int]]", LCSseq.opcodes(tags_u, tags_v).as_list()
        )
        blocks = tuple(
            (start, end, start_v) for tag, start, end, start_v, _end_v in opcodes if tag == "equal"
        )
        if len(_CHILD_BLOCKS) >= CHILD_BLOCKS_CACHE_SIZE:
            _CHILD_BLOCKS.clear()
        _CHILD_BLOCKS[key] = blocks
    return blocks


def _take_identical(
    u: int,
    v: int,
    size: int,
    covered_1: bytearray,
    covered_2: bytearray,
    taken_1: list[int],
    taken_2: list[int],
    sizes_1: NDArray[np.int64],
) -> int:
    """Add the pairs (u + i, v + i) of two identical subtrees (preorder) that have no covered
    vertex above them or at them to ``taken_1`` and ``taken_2``; return how many.
    """
    if covered_1.find(1, u, u + size) < 0 and covered_2.find(1, v, v + size) < 0:
        taken_1.extend(range(u, u + size))
        taken_2.extend(range(v, v + size))
        return size
    blocked = np.flatnonzero(
        np.frombuffer(covered_1, dtype=np.uint8, count=size, offset=u)
        | np.frombuffer(covered_2, dtype=np.uint8, count=size, offset=v)
    )
    # A covered vertex blocks its whole subtree: the offsets [i, i + size of i).
    change = np.zeros(size + 1, dtype=np.int64)
    np.add.at(change, blocked, 1)
    np.add.at(change, blocked + sizes_1[u + blocked], -1)
    free = np.flatnonzero(np.cumsum(change[:size]) == 0)
    taken_1.extend((free + u).tolist())
    taken_2.extend((free + v).tolist())
    return len(free)


def seed_pairs(
    first: VertexTree, second: VertexTree, per_vertex: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Compatible pairs: each vertex with the same-tag vertices nearest in document order.

    Vertex u of page 1 sits at u * n2 / n1 on page 2; of two same-tag candidates at the same
    distance the earlier one is taken first.
    """
    n1, n2 = len(first), len(second)
    order, grouped, sort_keys = second.tag_groups
    codes_1 = first.tag_codes
    group_start = np.searchsorted(grouped, codes_1, "left")
    group_end = np.searchsorted(grouped, codes_1, "right")
    vertex = np.flatnonzero(group_end > group_start)
    if not vertex.size:
        return vertex, vertex
    group_start, group_end = group_start[vertex], group_end[vertex]
    target = vertex * n2 / n1
    # The first candidate at or after the target: candidates are integers, so "before the target"
    # is "before ceil(target)"; sort_keys are tag * (n2 + 1) + position, in (tag, position) order.
    right = np.searchsorted(
        sort_keys, codes_1[vertex] * (n2 + 1) + np.ceil(target).astype(np.int64), "left"
    )
    width = min(per_vertex, int((group_end - group_start).max()))
    steps = np.arange(width)
    # The `width` nearest candidates before the target (nearest first) and after it.
    before = right[:, None] - 1 - steps
    after = right[:, None] + steps
    before_valid = before >= group_start[:, None]
    after_valid = after < group_end[:, None]
    before_vertex = order[np.maximum(before, 0)]
    after_vertex = order[np.minimum(after, n2 - 1)]
    before_distance = np.where(before_valid, target[:, None] - before_vertex, np.inf)
    after_distance = np.where(after_valid, after_vertex - target[:, None], np.inf)
    # Merging the two by distance, the earlier candidate first on a tie, the first `width` hold
    # the i-th candidate before the target iff it is no farther than the (width-1-i)-th after it.
    from_before = (before_distance <= after_distance[:, ::-1]).sum(axis=1)
    enough = before_valid.sum(axis=1) + after_valid.sum(axis=1) >= width
    take_before = before_valid & (~enough[:, None] | (steps < from_before[:, None]))
    take_after = after_valid & (~enough[:, None] | (steps < (width - from_before)[:, None]))
    rows = np.broadcast_to(vertex[:, None], before.shape)
    return (
        np.concatenate([rows[take_before], rows[take_after]]),
        np.concatenate([before_vertex[take_before], after_vertex[take_after]]),
    )


def attribute_gap_matrix(first: VertexTree, second: VertexTree) -> NDArray[np.float64]:
    """Return 1 - the Jaccard similarity of every pair of the two pages' attribute-name sets
    (0.0 for two empty sets), indexed by their ids in ``VertexTree.attribute_sets``.
    """
    columns_1, matrix_1, sizes_1 = first.attribute_incidence
    columns_2, matrix_2, sizes_2 = second.attribute_incidence
    shared = columns_1.keys() & columns_2.keys()
    common = (
        matrix_1[:, [columns_1[name] for name in shared]]
        @ matrix_2[:, [columns_2[name] for name in shared]].T
    )
    union = sizes_1[:, None] + sizes_2[None, :] - common
    return np.where(union > 0, 1.0 - common / np.maximum(union, 1.0), 0.0)


def leaf_pair_weights(
    first: VertexTree,
    second: VertexTree,
    u: NDArray[np.int64],
    v: NDArray[np.int64],
    attribute_gaps: NDArray[np.float64],
    penalty: float,
) -> NDArray[np.float64]:
    """Return the weights of pairs with a leaf on either side (no matched children), vectorised.

    Same arithmetic, in the same order, as ``_pair_shape``.
    """
    attribute_gap = attribute_gaps[first.attribute_sets[1][u], second.attribute_sets[1][v]]
    count_u, count_v = first.child_counts[u], second.child_counts[v]
    most = np.maximum(count_u, count_v)
    count_gap = np.where(most > 0, np.abs(count_u - count_v) / np.maximum(most, 1), 0.0)
    type_gap = np.where(most > 0, 1.0, 0.0)
    return 1.0 - penalty * ((attribute_gap + count_gap + type_gap) / 3.0)


QueueEntry = tuple[int, float, int, int, bool]


class SeedBounds:
    """The seeds' bounds in increasing order: (-size of the whole template, loss, u, v, False).

    Each bound is at or below its seed's true entry (-size of its fit, loss of its fit, u, v,
    True): a fit is part of the whole template, and a fit as large is the whole template. The
    seeds of one size get the loss of their whole template (0.0 until then) and are sorted by
    it when the first of them comes next, leaving out those whose root is covered by then.
    """

    def __init__(
        self,
        matcher: TemplateMatcher,
        u: NDArray[np.int64],
        v: NDArray[np.int64],
        full_sizes: NDArray[np.int64],
    ) -> None:
        self.matcher = matcher
        order = np.lexsort((v, u, -full_sizes))
        self.sorted_sizes = -full_sizes[order]  # negated, as in the entries: largest first
        self.sorted_1, self.sorted_2 = u[order], v[order]
        self.sizes: list[int] = self.sorted_sizes.tolist()
        self.losses = [0.0] * len(self.sizes)
        self.first: list[int] = self.sorted_1.tolist()
        self.second: list[int] = self.sorted_2.tolist()
        self.position, self.ordered_until = 0, 0

    def next_bound(
        self,
        covered_1: bytearray,
        covered_2: bytearray,
        view_1: NDArray[np.uint8],
        view_2: NDArray[np.uint8],
    ) -> QueueEntry | None:
        """Return the smallest bound of a seed whose root is uncovered (None if none is left);
        ``position`` stays on it until the caller moves on.
        """
        first, second, count = self.first, self.second, len(self.first)
        while True:
            position = self.position
            while position < count and (covered_1[first[position]] or covered_2[second[position]]):
                position += 1
            self.position = position
            if position == count:
                return None
            if position < self.ordered_until:
                return (
                    self.sizes[position],
                    self.losses[position],
                    first[position],
                    second[position],
                    False,
                )
            self._order_by_loss(view_1, view_2)

    def lower_bound(self) -> tuple[int, float, int, int] | None:
        """Return a key at or below every bound not handed out yet (None if none is left)."""
        position = self.position
        if position == len(self.first):
            return None
        return (
            self.sizes[position],
            self.losses[position],
            self.first[position],
            self.second[position],
        )

    def _order_by_loss(self, view_1: NDArray[np.uint8], view_2: NDArray[np.uint8]) -> None:
        """Give the seeds from ``position`` on that share its size their whole template's loss
        and sort them by (loss, u, v), those whose root is covered left out (before them)."""
        start = self.position
        end = int(np.searchsorted(self.sorted_sizes, self.sorted_sizes[start], "right"))
        u, v = self.sorted_1[start:end], self.sorted_2[start:end]
        free = (view_1[u] == 0) & (view_2[v] == 0)
        u, v = u[free], v[free]
        begin = end - len(u)
        if len(u) > 1:  # one seed needs no order: its bound 0.0 stands
            losses = self.matcher.whole_losses(u, v)
            order = np.lexsort((v, u, losses))
            u, v = u[order], v[order]
            self.losses[begin:end] = losses[order].tolist()
        self.first[begin:end] = u.tolist()
        self.second[begin:end] = v.tolist()
        self.position, self.ordered_until = begin, end
