"""Chunk filters: noise (step 3), duplicates within a page and site templates (step 4)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain
from urllib.parse import urlsplit

import numpy as np
import scipy.sparse

from websim_crawler.core.page.params import AnalysisParams
from websim_crawler.core.page.records import DUPLICATE, KEPT, NOISE, ChunkTree, LeafChunk
from websim_crawler.core.page.segment import STRONG_BOILERPLATE_WORDS
from websim_crawler.core.page.site_memory import SiteTemplateMemory, chunk_fingerprint

_DUPLICATE_BLOCK_ROWS = 512


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
        if leaf.hlp <= params.hyperlink_threshold:
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
        if leaf.hlp > params.hyperlink_threshold:
            leaf.fate, leaf.reason = NOISE, "hyperlink_percentage"
        elif leaf.ns > params.noise_score_threshold and (
            params.image_block_max_keywords < 0
            or leaf.n_keywords <= params.image_block_max_keywords
        ):
            leaf.fate, leaf.reason = NOISE, "noise_score"
        elif hints is not None and hints[leaf.index]:
            leaf.fate, leaf.reason = NOISE, f"markup:{hints[leaf.index]}"


def keyword_matrix(
    counters: Sequence[Counter[str]],
) -> scipy.sparse.csr_matrix:
    """Stack keyword counters into an L2-normalised sparse matrix (rows = counters)."""
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
    return scipy.sparse.csr_matrix(
        (values, indices, indptr), shape=(len(counters), max(1, len(columns)))
    )


def _transposed(matrix: scipy.sparse.csr_matrix) -> scipy.sparse.csr_matrix:
    """Return the transpose of a CSR matrix as CSR, built directly (``.T.tocsr()`` makes two
    matrices and validates both); each row lists its entries by increasing column, as there."""
    n_rows, n_columns = matrix.shape
    rows = np.repeat(np.arange(n_rows), np.diff(matrix.indptr))
    order = np.argsort(matrix.indices, kind="stable")
    indptr = np.concatenate(([0], np.cumsum(np.bincount(matrix.indices, minlength=n_columns))))
    return scipy.sparse.csr_matrix(
        (matrix.data[order], rows[order], indptr), shape=(n_columns, n_rows)
    )


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
    matrix = keyword_matrix([leaf.keywords for leaf in distinct])
    transposed = _transposed(matrix)
    for start in range(0, len(distinct), _DUPLICATE_BLOCK_ROWS):
        stripe = (  # a slice is a copy: only when the rows need several stripes
            matrix
            if len(distinct) <= _DUPLICATE_BLOCK_ROWS
            else matrix[start : start + _DUPLICATE_BLOCK_ROWS]
        )
        block = stripe @ transposed
        block_rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
        hits = (block.data >= threshold - 1e-9) & (block.indices < block_rows + start)
        if not hits.any():
            continue
        rows, cols = block_rows[hits] + start, block.indices[hits]
        ordered = np.lexsort((cols, rows))
        matches: dict[int, list[int]] = {}
        for row, col in zip(rows[ordered].tolist(), cols[ordered].tolist(), strict=True):
            matches.setdefault(row, []).append(col)
        for j, earlier in matches.items():
            kept_index = next((i for i in earlier if distinct[i].fate == KEPT), None)
            if kept_index is not None:
                distinct[j].fate = DUPLICATE
                distinct[j].reason = f"cosine:{distinct[kept_index].segment.chunk_id}"


def site_of(url: str | None) -> str:
    if not url:
        return ""
    try:
        return (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        return ""


def remove_template(leaves: list[LeafChunk], site: str, memory: SiteTemplateMemory) -> None:
    fingerprints = {id(leaf): chunk_fingerprint(leaf.text) for leaf in leaves if leaf.keywords}
    template = memory.template_fingerprints(site, fingerprints.values())
    for leaf in leaves:
        if leaf.fate == KEPT and fingerprints.get(id(leaf)) in template:
            leaf.fate, leaf.reason = DUPLICATE, "site_template"
