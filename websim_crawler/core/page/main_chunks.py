"""Main-chunk choice (the paper's step 5) and what goes beyond it: expansion, lead, tail cut."""

from __future__ import annotations

from websim_crawler.core.page.chunks import KEPT, ChunkTree, LeafChunk
from websim_crawler.core.page.main_text import SENTENCE_ENDS, prose_line
from websim_crawler.core.page.params import AnalysisParams


def choose_main_chunks(
    tree: ChunkTree, leaves: list[LeafChunk], params: AnalysisParams
) -> tuple[list[str], list[LeafChunk]]:
    """Pick the main chunk(s): highest sum of kept sub-chunk weight minus removed weight."""
    kept = [leaf for leaf in leaves if leaf.fate == KEPT]
    if not kept:
        return [], []
    nodes = tree.nodes
    contribution = [0.0] * len(nodes)
    for leaf in leaves:
        size = max(1, leaf.n_keywords) ** params.size_exponent
        sign = 1.0 if leaf.fate == KEPT else -params.removed_penalty
        contribution[leaf.index] = sign * leaf.weight * size
    score = tree.totals(contribution)
    ranked = sorted(
        (index for index, value in enumerate(score) if value > 0),
        key=lambda index: (-score[index], -nodes[index].depth),
    )
    if not ranked:
        return [nodes[0].chunk_id], kept
    best = ranked[0]
    chosen = [best]
    for index in ranked[1:]:
        if score[index] < params.main_chunk_ratio * score[best]:
            break
        end = tree.ends[index]
        if all(end <= other or index >= tree.ends[other] for other in chosen):
            chosen.append(index)
    main_leaves = [leaf for leaf in kept if any(i <= leaf.index < tree.ends[i] for i in chosen)]
    if params.main_expansion and tree.parents[best] >= 0:
        main_leaves = _expand_to_parent(tree, best, kept, main_leaves, params)
    if params.lead_levels and main_leaves:
        main_leaves = _add_lead(tree, best, kept, main_leaves, params)
    if params.tail_leaf_share and main_leaves:
        main_leaves = _cut_tail(main_leaves, params.tail_leaf_share)
    return [nodes[index].chunk_id for index in chosen], main_leaves


def _expand_to_parent(
    tree: ChunkTree,
    best: int,
    kept: list[LeafChunk],
    main_leaves: list[LeafChunk],
    params: AnalysisParams,
) -> list[LeafChunk]:
    """Add the kept, link-poor leaves beside the best main chunk under its parent.

    Lists and short paragraphs next to an article (ingredients, fact boxes) weigh too little
    to be main chunks of their own.
    """
    parent = tree.parents[best]
    start, end = parent, tree.ends[parent]
    members = {leaf.index for leaf in main_leaves}
    return [
        leaf
        for leaf in kept
        if leaf.index in members
        or (
            start <= leaf.index < end
            and leaf.hyperlink_percentage <= params.expansion_link_threshold
            and leaf.n_keywords >= params.expansion_min_keywords
        )
    ]


def _cut_tail(main_leaves: list[LeafChunk], share: float) -> list[LeafChunk]:
    """Drop the small leaves after the last one holding ``share`` of the largest one's text.

    The article ends with its last sizeable block; short blocks after it inside the main chunk
    are author notes, calls to subscribe or donate and share prompts.
    """
    sizes = [len(leaf.text) for leaf in main_leaves]
    least = share * max(sizes)
    last = max(position for position, size in enumerate(sizes) if size >= least)
    return main_leaves[: last + 1]


_LEAD_MIN_KEYWORDS = 10


def _add_lead(
    tree: ChunkTree,
    best: int,
    kept: list[LeafChunk],
    main_leaves: list[LeafChunk],
    params: AnalysisParams,
) -> list[LeafChunk]:
    """Add the lead paragraph: the nearest kept leaf of running text before the main content
    under the best main chunk's ancestor ``lead_levels`` up (a standfirst in the page header).

    Link-poor leaves without running text (photo captions, credits) are passed over; a
    link-dense one ends the search."""
    ancestor = best
    for _level in range(params.lead_levels):
        if tree.parents[ancestor] < 0:
            break
        ancestor = tree.parents[ancestor]
    first = main_leaves[0].index
    for leaf in reversed(kept):
        if leaf.index >= first:
            continue
        if leaf.index < ancestor:
            break
        if leaf.n_keywords < _LEAD_MIN_KEYWORDS:
            continue
        if leaf.hyperlink_percentage > params.expansion_link_threshold:
            break  # link text (a tag list, a teaser) ends the page header
        if any(
            prose_line(line) and line.text.endswith(SENTENCE_ENDS) for line in leaf.segment.lines
        ):
            return [leaf, *main_leaves]
        # A link-poor block that is no running text (a photo caption or credit) is passed.
    return main_leaves
