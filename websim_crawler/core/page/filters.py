"""Chunk filters: noise (step 3), duplicates within a page and site templates (step 4)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.page.chunks import DUPLICATE, KEPT, NOISE, ChunkTree, LeafChunk
from websim_crawler.core.page.params import AnalysisParams
from websim_crawler.core.page.segment import STRONG_BOILERPLATE_WORDS
from websim_crawler.core.page.site_memory import (
    SiteTemplateMemory,
    TemplateMemory,
    chunk_fingerprint,
)

_DUPLICATE_PRODUCTS = 2_000_000


def new_template_memory(params: AnalysisParams) -> SiteTemplateMemory:
    """Return an empty per-site template memory sized by the params."""
    return SiteTemplateMemory(
        params.template_min_pages, params.template_memory_sites, params.template_memory_chunks
    )


# A content-named container overrules its furniture-named ancestor when it holds at least this
# share of the ancestor's text (the story inside a "with-sidebar" wrapper, not one teaser of a
# related-posts box).
_CONTENT_NAME_SHARE = 0.5


def markup_hints(
    tree: ChunkTree, leaves: list[LeafChunk], params: AnalysisParams
) -> list[str] | None:
    """Return the furniture hint in force for each node (an ancestor's or its own).

    Sizes count the page's link-poor text (chunks at or under the hyperlink threshold), which
    menus and link lists do not inflate. A hinted container holding ``markup_hint_max_share``
    or more of it is a page wrapper whose class happens to name furniture (``has-sidebar``), so
    its hint is ignored; comment hints always hold there. A page is never all furniture: when
    the hints in force leave less than ``markup_hint_min_rest`` of it unhinted, the word holding
    most of it is ignored too, the page builder's name for its blocks (``elementor-widget``) or
    the comments of a forum thread, which are its content.
    """
    if not any(node.boilerplate_hint for node in tree.nodes):
        return None
    own_size = [0] * len(tree.nodes)
    for leaf in leaves:
        if leaf.hyperlink_percentage <= params.hyperlink_threshold:
            own_size[leaf.index] = len(leaf.text)
    size = tree.totals(own_size)
    hints = _hints_in_force(tree, size, params, "")
    if params.markup_hint_min_rest:
        held: Counter[str] = Counter()
        for leaf in leaves:
            if hints[leaf.index] and own_size[leaf.index]:
                held[hints[leaf.index]] += own_size[leaf.index]
        if held and size[0] - sum(held.values()) < params.markup_hint_min_rest * size[0]:
            hints = _hints_in_force(tree, size, params, max(held, key=held.__getitem__))
    return hints


def _hints_in_force(
    tree: ChunkTree, size: list[float], params: AnalysisParams, ignored: str
) -> list[str]:
    """Spread each furniture hint from its container over its subtree (see ``markup_hints``)."""
    nodes, parents = tree.nodes, tree.parents
    limit = params.markup_hint_max_share * max(1.0, size[0])
    content_names = params.content_name_overrule
    hints = [""] * len(nodes)
    source = [0] * len(nodes)  # the node whose hint is in force
    for index, node in enumerate(nodes):
        inherited = hints[parents[index]] if index else ""
        if inherited:
            hinted = source[parents[index]]
            if not (
                content_names
                and node.content_named
                and inherited not in STRONG_BOILERPLATE_WORDS
                and size[index] >= _CONTENT_NAME_SHARE * size[hinted]
            ):
                hints[index], source[index] = inherited, hinted
            continue
        own = node.boilerplate_hint
        if own and own != ignored and (own in STRONG_BOILERPLATE_WORDS or size[index] < limit):
            hints[index], source[index] = own, index
    return hints


def remove_noise(leaves: list[LeafChunk], params: AnalysisParams, hints: list[str] | None) -> None:
    for leaf in leaves:
        if leaf.hyperlink_percentage > params.hyperlink_threshold:
            leaf.fate, leaf.reason = NOISE, "hyperlink_percentage"
        elif leaf.noise_score > params.noise_score_threshold and (
            params.image_block_max_keywords < 0
            or leaf.n_keywords <= params.image_block_max_keywords
        ):
            leaf.fate, leaf.reason = NOISE, "noise_score"
        elif hints is not None and hints[leaf.index]:
            leaf.fate, leaf.reason = NOISE, f"markup:{hints[leaf.index]}"


def keyword_matrix(
    counters: Sequence[Counter[str]],
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Stack keyword counters into an L2-normalised sparse matrix (rows = counters).

    Returns the CSR arrays ``(values, term_columns, row_starts)``: row ``i`` holds
    ``values[row_starts[i]:row_starts[i + 1]]`` in those columns.
    """
    terms = list(chain.from_iterable(counters))
    columns = {term: column for column, term in enumerate(dict.fromkeys(terms))}
    indices = np.fromiter(map(columns.__getitem__, terms), dtype=np.int64, count=len(terms))
    values = np.fromiter(
        chain.from_iterable(counter.values() for counter in counters),
        dtype=np.float64,
        count=len(terms),
    )
    lengths = np.fromiter(map(len, counters), dtype=np.int64, count=len(counters))
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    rows = np.repeat(np.arange(len(counters)), lengths)
    norms = np.sqrt(np.bincount(rows, weights=values * values, minlength=len(counters)))
    norms[norms == 0] = 1.0
    values /= norms[rows]
    return values, indices, indptr


def similar_row_pairs(
    values: NDArray[np.float64],
    indices: NDArray[np.int64],
    indptr: NDArray[np.int64],
    threshold: float,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Return the pairs (row, earlier row) of a CSR matrix whose dot product is >= threshold.

    A sparse product in NumPy alone (SciPy's import costs more than analysing a page): each
    entry (row r, term t) meets the earlier rows holding t, read from the entries ordered by
    term (a stable sort keeps each term's rows in order, so the earlier ones come first); the
    products of a stripe of rows are summed per pair. A stripe expands to at most
    ``_DUPLICATE_PRODUCTS`` products (or one row's), which bounds the memory.
    """
    n_rows = len(indptr) - 1
    row_of = np.repeat(np.arange(n_rows), np.diff(indptr))
    by_term = np.argsort(indices, kind="stable")
    position = np.empty_like(by_term)
    position[by_term] = np.arange(len(by_term))
    term_starts = np.concatenate(([0], np.cumsum(np.bincount(indices))))[indices]
    earlier = position - term_starts  # per entry: entries of its term in earlier rows
    rows_by_term, values_by_term = row_of[by_term], values[by_term]
    row_products = np.bincount(row_of, weights=earlier, minlength=n_rows).astype(np.int64)
    products_before = np.concatenate(([0], np.cumsum(row_products)))
    found: list[NDArray[np.int64]] = []
    first = 0
    while first < n_rows:
        budget = products_before[first] + _DUPLICATE_PRODUCTS
        last = max(first + 1, int(np.searchsorted(products_before, budget, side="right")) - 1)
        entries = np.arange(indptr[first], indptr[last])
        counts = earlier[entries]
        total = int(products_before[last] - products_before[first])
        if total:
            entry = np.repeat(entries, counts)
            other = (
                term_starts[entry]
                + np.arange(total)
                - np.repeat(np.cumsum(counts) - counts, counts)
            )
            keys = row_of[entry] * n_rows + rows_by_term[other]
            pairs, inverse = np.unique(keys, return_inverse=True)
            sums = np.bincount(inverse, weights=values[entry] * values_by_term[other])
            found.append(pairs[sums >= threshold - 1e-9])
        first = last
    hits = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return hits // n_rows, hits % n_rows


def remove_duplicates(leaves: list[LeafChunk], threshold: float) -> None:
    """Of chunks whose keyword cosine is at or above the threshold, keep the first."""
    first_of: dict[frozenset[tuple[str, int]], LeafChunk] = {}
    distinct: list[LeafChunk] = []
    for leaf in leaves:
        if leaf.fate != KEPT or not leaf.keywords:
            continue
        key = frozenset(leaf.keywords.items())
        original = first_of.setdefault(key, leaf)
        if original is leaf:
            distinct.append(leaf)
        else:  # identical keyword vectors: cosine 1
            leaf.fate, leaf.reason = DUPLICATE, f"cosine:{original.segment.chunk_id}"
    if len(distinct) < 2 or threshold > 1.0:
        return
    rows, cols = similar_row_pairs(
        *keyword_matrix([leaf.keywords for leaf in distinct]), threshold=threshold
    )
    ordered = np.lexsort((cols, rows))
    matches: dict[int, list[int]] = {}
    for row, col in zip(rows[ordered].tolist(), cols[ordered].tolist(), strict=True):
        matches.setdefault(row, []).append(col)
    for j, earlier in matches.items():
        kept_index = next((i for i in earlier if distinct[i].fate == KEPT), None)
        if kept_index is not None:
            distinct[j].fate = DUPLICATE
            distinct[j].reason = f"cosine:{distinct[kept_index].segment.chunk_id}"


def remove_template(leaves: list[LeafChunk], site: str, memory: TemplateMemory) -> None:
    fingerprints = {id(leaf): chunk_fingerprint(leaf.text) for leaf in leaves if leaf.keywords}
    template = memory.template_fingerprints(site, fingerprints.values())
    for leaf in leaves:
        if leaf.fate == KEPT and fingerprints.get(id(leaf)) in template:
            leaf.fate, leaf.reason = DUPLICATE, "site_template"
