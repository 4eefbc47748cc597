"""Page analysis, phase 1 of Vision-based Deep web Extraction for Clustering (VDEC).

Steps, each visible and switchable through ``AnalysisParams``:
1. DIV chunk segmentation (``segment.segment_page``);
2. per-chunk features: keywords N, link keywords n_l, images n_I, title keyword frequencies,
   position;
3. noise chunk removal by hyperlink percentage and noise (image) score;
4. duplicate chunk removal by cosine similarity within the page, and site-template chunks across
   pages (``SiteTemplateMemory``);
5. main-chunk weighting ``Cw = alpha*T_K + beta*K_f + gamma*PF_r``; main chunk weightage = sum of
   its sub-chunks' Cw;
6. keywords of the main content (stopwords, Porter/Snowball stems, term frequencies).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import scipy.sparse

from websim_crawler.core import text as textlib
from websim_crawler.core.html import (
    declared_language,
    outgoing_links,
    page_title,
    parse_html,
    remove_invisible,
)
from websim_crawler.core.params import setting, validate
from websim_crawler.core.segment import (
    STRONG_BOILERPLATE_WORDS,
    Line,
    Segment,
    parse_box,
    segment_page,
)
from websim_crawler.core.site_memory import SiteTemplateMemory, chunk_fingerprint
from websim_crawler.errors import PageError

KEPT, NOISE, DUPLICATE, CONTAINER = "kept", "noise", "duplicate", "container"
_DUPLICATE_BLOCK_ROWS = 512


@dataclass(frozen=True)
class AnalysisParams:
    """The constants of the page analysis, each bound to a ``WEBSIM_*`` setting."""

    max_page_bytes: int = setting(
        32_000_000, "WEBSIM_MAX_PAGE_BYTES", "larger pages are dropped as too_large", minimum=1
    )
    language: str | None = setting(
        None, "WEBSIM_LANGUAGE", "force this ISO 639-1 language instead of detecting it"
    )
    noise_filter: bool = setting(True, "WEBSIM_NOISE_FILTER", "remove noise chunks (step 3)")
    hyperlink_threshold: float = setting(
        0.5,
        "WEBSIM_HYPERLINK_THRESHOLD",
        "a chunk whose hyperlink percentage n_l/N is above this is noise",
        minimum=0.0,
        maximum=1.0,
    )
    noise_score_threshold: float = setting(
        0.5,
        "WEBSIM_NOISE_SCORE_THRESHOLD",
        "a chunk whose noise score n_I/N_B is above this is noise",
        minimum=0.0,
        maximum=1.0,
    )
    image_block_max_keywords: int = setting(
        10,
        "WEBSIM_IMAGE_BLOCK_MAX_KEYWORDS",
        "apply the noise score only to chunks with at most this many keywords (-1: to all)",
        minimum=-1,
    )
    markup_hints: bool = setting(
        True,
        "WEBSIM_MARKUP_HINTS",
        "addition: chunks inside nav/aside/footer or a class/id/role naming page furniture "
        "(comments, share, related, sidebar...) are noise",
    )
    markup_hint_max_share: float = setting(
        0.3,
        "WEBSIM_MARKUP_HINT_MAX_SHARE",
        "a furniture-named container holding this share of the page's text or more is a page "
        "wrapper and its hint is ignored (comment hints always hold)",
        minimum=0.0,
        maximum=1.0,
    )
    title_line_filter: bool = setting(
        True,
        "WEBSIM_TITLE_LINE_FILTER",
        "addition: drop main-content lines that repeat the page title (the headline)",
    )
    furniture_line_filter: bool = setting(
        True,
        "WEBSIM_FURNITURE_LINE_FILTER",
        "addition: drop main-content lines inside furniture-named elements (byline, date, share) "
        "or <time>, and copyright notices",
    )
    caption_filter: bool = setting(
        True, "WEBSIM_CAPTION_FILTER", "addition: drop figure and table captions from main content"
    )
    line_link_threshold: float = setting(
        1.0,
        "WEBSIM_LINE_LINK_THRESHOLD",
        "addition: drop main-content lines (not headings) whose share of link text is above this "
        "(1: off)",
        minimum=0.0,
        maximum=1.0,
    )
    edge_trim_chars: int = setting(
        40,
        "WEBSIM_EDGE_TRIM_CHARS",
        "addition: drop lines shorter than this that end no sentence from the start and end of "
        "the main content (labels, dates, 'Related posts'; 0: off)",
        minimum=0,
    )
    duplicate_filter: bool = setting(
        True, "WEBSIM_DUPLICATE_FILTER", "remove duplicate chunks within a page (step 4)"
    )
    duplicate_threshold: float = setting(
        0.9,
        "WEBSIM_DUPLICATE_THRESHOLD",
        "chunks whose keyword-vector cosine is at or above this are duplicates",
        minimum=0.0,
        maximum=1.0,
    )
    template_filter: bool = setting(
        True, "WEBSIM_TEMPLATE_FILTER", "remove chunks repeated on many pages of a site"
    )
    template_min_pages: int = setting(
        3, "WEBSIM_TEMPLATE_MIN_PAGES", "earlier pages of a site a template chunk is on", minimum=1
    )
    template_memory_sites: int = setting(
        1000, "WEBSIM_TEMPLATE_MEMORY_SITES", "sites the template memory keeps", minimum=1
    )
    template_memory_chunks: int = setting(
        20_000, "WEBSIM_TEMPLATE_MEMORY_CHUNKS", "fingerprints kept per site", minimum=1
    )
    title_weight: float = setting(
        0.4, "WEBSIM_TITLE_WEIGHT", "alpha: weight of the title word relevancy T_K", minimum=0.0
    )
    frequency_weight: float = setting(
        0.3, "WEBSIM_FREQUENCY_WEIGHT", "beta: weight of the keyword frequency K_f", minimum=0.0
    )
    position_weight: float = setting(
        0.3, "WEBSIM_POSITION_WEIGHT", "gamma: weight of the position feature PF_r", minimum=0.0
    )
    top_keywords: int = setting(
        5, "WEBSIM_TOP_KEYWORDS", "K: top keywords summed by K_f", minimum=1
    )
    position_threshold: float = setting(
        0.7,
        "WEBSIM_POSITION_THRESHOLD",
        "PF_r is 1 when the position ratio T is at or above this",
        minimum=0.0,
        maximum=1.0,
    )
    position_margin: float = setting(
        0.1,
        "WEBSIM_POSITION_MARGIN",
        "share of the page at each edge outside the central region used by T",
        minimum=0.0,
        maximum=0.45,
    )
    removed_penalty: float = setting(
        1.0,
        "WEBSIM_REMOVED_PENALTY",
        "main-chunk choice: weight subtracted per unit of removed sub-chunk weight",
        minimum=0.0,
    )
    size_exponent: float = setting(
        1.0,
        "WEBSIM_SIZE_EXPONENT",
        "main-chunk choice: sub-chunk weight scaled by N**exponent (0: the paper's plain sum)",
        minimum=0.0,
        maximum=2.0,
    )
    main_chunk_ratio: float = setting(
        0.5,
        "WEBSIM_MAIN_CHUNK_RATIO",
        "other main chunks scoring at least this share of the best join the main content",
        minimum=0.0,
        maximum=1.0,
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class Chunk:
    """One chunk of a page with its features and its fate (kept, noise, duplicate, container)."""

    chunk_id: str
    parent_id: str | None
    rule: str
    tag: str
    depth: int
    order: int
    text: str
    n_keywords: int
    n_link_keywords: int
    n_images: int
    hyperlink_percentage: float
    noise_score: float
    title_keywords: dict[str, int]
    title_word_relevancy: float
    keyword_frequency: float
    position_ratio: float
    position_feature: int
    weight: float
    fate: str
    reason: str
    is_main: bool


@dataclass(frozen=True)
class PageAnalysis:
    """The analysis of one page: its chunks with their fate, main text and keywords."""

    url: str | None
    title: str
    language: str
    chunks: tuple[Chunk, ...]
    main_chunk_ids: tuple[str, ...]
    main_text: str
    keywords: dict[str, int]
    links: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return the record as JSON-safe data."""
        return dataclasses.asdict(self)

    def counts(self) -> Counter[str]:
        """Count the leaf chunks by fate (for stats)."""
        return Counter(chunk.fate for chunk in self.chunks if chunk.fate != CONTAINER)


# --- the paper's formulas -------------------------------------------------------------------


def hyperlink_percentage(n_link_keywords: int, n_keywords: int) -> float:
    """HLp = n_l / N (VDEC step 3); a chunk of link text only counts as 1."""
    if n_keywords == 0:
        return 1.0 if n_link_keywords else 0.0
    return min(1.0, n_link_keywords / n_keywords)


def noise_score(n_images: int, page_images: int) -> float:
    """Ns = n_I / N_B: the chunk's share of the page's images (VDEC step 3)."""
    return n_images / page_images if page_images else 0.0


def title_word_relevancy(chunk_keywords: Counter[str], title_keywords: Sequence[str]) -> float:
    """T_K = sum of the frequencies of the title's keywords in the chunk / number of them."""
    if not title_keywords:
        return 0.0
    return sum(chunk_keywords.get(term, 0) for term in title_keywords) / len(title_keywords)


def keyword_frequency_score(chunk_keywords: Counter[str], top_k: int) -> float:
    """K_f = sum of the frequencies of the chunk's top-K keywords / its number of keywords."""
    total = sum(chunk_keywords.values())
    if total == 0:
        return 0.0
    return sum(count for _term, count in chunk_keywords.most_common(top_k)) / total


def position_feature(position_ratio: float, threshold: float) -> int:
    """PF_r = 1 when the position ratio T is at or above the threshold, else 0."""
    return 1 if position_ratio >= threshold else 0


def chunk_weight(
    relevancy: float, frequency: float, position: int, params: AnalysisParams
) -> float:
    """Cw = alpha*T_K + beta*K_f + gamma*PF_r (VDEC main-chunk weighting)."""
    return (
        params.title_weight * relevancy
        + params.frequency_weight * frequency
        + params.position_weight * position
    )


def interval_position_ratio(start: int, end: int, total: int, margin: float) -> float:
    """DOM proxy of T: share of the chunk's text inside the central band of the page's text."""
    if end <= start or total <= 0:
        return 0.0
    low, high = margin * total, (1.0 - margin) * total
    return max(0.0, min(end, high) - max(start, low)) / (end - start)


def box_position_ratio(
    box: tuple[float, float, float, float], page: tuple[float, float], margin: float
) -> float:
    """Geometric T: share of the chunk's rendered area inside the page's central region."""
    x, y, width, height = box
    page_width, page_height = page
    if width <= 0 or height <= 0 or page_width <= 0 or page_height <= 0:
        return 0.0
    left, right = margin * page_width, (1.0 - margin) * page_width
    top, bottom = margin * page_height, (1.0 - margin) * page_height
    overlap_x = max(0.0, min(x + width, right) - max(x, left))
    overlap_y = max(0.0, min(y + height, bottom) - max(y, top))
    return (overlap_x * overlap_y) / (width * height)


# --- additions: line-level boilerplate inside the main content -----------------------------

_COPYRIGHT_RE = re.compile(
    r"©|\(c\)\s*(?:19|20)\d\d|\bcopyright\b|all rights reserved|alle rechte vorbehalten"
    r"|tous droits réservés|wszelkie prawa zastrzeżone|todos los derechos reservados"
    r"|tutti i diritti riservati|alle rechten voorbehouden",
    re.IGNORECASE,
)
_COPYRIGHT_MAX_CHARS = 200
_SENTENCE_ENDS = (".", "!", "?", "。", "！", "？", "…", '"', "”", "»", ")")


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def boilerplate_line(line: Line, title: str, params: AnalysisParams) -> str:
    """Return why a line of the main content is boilerplate ("" when it is content)."""
    if (
        params.title_line_filter
        and title
        and len(line.text) >= 10
        and _fold(line.text) in _fold(title)
    ):
        return "title"
    if params.furniture_line_filter:
        if line.furniture_share >= 0.5:
            return "furniture"
        if len(line.text) <= _COPYRIGHT_MAX_CHARS and _COPYRIGHT_RE.search(line.text):
            return "copyright"
    if params.caption_filter and line.caption_share >= 0.5:
        return "caption"
    if line.link_share > params.line_link_threshold and not line.heading:
        return "links"
    return ""


def short_edge_line(text: str, max_chars: int) -> bool:
    """Tell whether a line is a short label rather than a sentence (for the edge trim)."""
    return len(text) < max_chars and not text.endswith(_SENTENCE_ENDS)


def _main_content(
    main_leaves: list[_Leaf], title: str, lang: str, params: AnalysisParams
) -> tuple[str, Counter[str]]:
    """Join the main chunks' lines without boilerplate lines; count their keywords."""
    kept: list[tuple[_Leaf, list[str]]] = []
    for leaf in main_leaves:
        lines = [
            line.text for line in leaf.segment.lines if not boilerplate_line(line, title, params)
        ]
        if lines:
            kept.append((leaf, lines))
    if params.edge_trim_chars:
        remaining = sum(len(lines) for _leaf, lines in kept)
        for position in (0, -1):
            while remaining > 1 and short_edge_line(
                kept[position][1][position], params.edge_trim_chars
            ):
                del kept[position][1][position]
                remaining -= 1
                if not kept[position][1]:
                    del kept[position]
    texts: list[str] = []
    keywords: Counter[str] = Counter()
    for leaf, lines in kept:
        text = "\n".join(lines)
        texts.append(text)
        if len(lines) == len(leaf.segment.lines):
            keywords.update(leaf.keywords)
        else:
            keywords.update(textlib.keyword_tokens(text, lang))
    return "\n".join(texts), keywords


# --- the analysis ---------------------------------------------------------------------------


@dataclass
class _Leaf:
    segment: Segment
    order: int
    text: str
    keywords: Counter[str]
    n_link_keywords: int
    start: int
    end: int
    fate: str = KEPT
    reason: str = ""
    hlp: float = 0.0
    ns: float = 0.0
    relevancy: float = 0.0
    frequency: float = 0.0
    position_ratio: float = 0.0
    position: int = 0
    weight: float = 0.0


def analyse_page(
    html: str | bytes,
    url: str | None = None,
    *,
    params: AnalysisParams | None = None,
    encoding: str | None = None,
    content_type: str | None = None,
    language: str | None = None,
    site_memory: SiteTemplateMemory | None = None,
) -> PageAnalysis:
    """Analyse one page; raise ``PageError`` (with a stats reason) for pages that cannot be."""
    params = params or AnalysisParams()
    if len(html) > params.max_page_bytes:
        raise PageError(
            "too_large", f"the page has {len(html):,} bytes, over WEBSIM_MAX_PAGE_BYTES"
        )
    root = parse_html(html, encoding=encoding, content_type=content_type)
    title = page_title(root)
    declared = declared_language(root)
    page_box = parse_box(f"0,0,{root.get('data-websim-page', '')}")
    links = tuple(outgoing_links(root, url))
    remove_invisible(root)
    tree = segment_page(root)

    leaves, order = _collect_leaves(tree)
    visible = "\n".join(leaf.text for leaf in leaves)
    lang = (
        params.language
        or textlib.language_code(language)
        or textlib.language_code(declared)
        or textlib.detect_language(_language_sample(leaves))
    )
    total_chars = len(visible)
    for leaf in leaves:
        leaf.keywords = Counter(textlib.keyword_tokens(leaf.text, lang))
        leaf.n_link_keywords = len(textlib.keyword_tokens(leaf.segment.link_text, lang))
    title_keywords = list(dict.fromkeys(textlib.keyword_tokens(title, lang)))
    page_images = sum(leaf.segment.n_images for leaf in leaves)

    for leaf in leaves:
        n_keywords = sum(leaf.keywords.values())
        leaf.hlp = hyperlink_percentage(leaf.n_link_keywords, n_keywords)
        leaf.ns = noise_score(leaf.segment.n_images, page_images)
        leaf.relevancy = title_word_relevancy(leaf.keywords, title_keywords)
        leaf.frequency = keyword_frequency_score(leaf.keywords, params.top_keywords)
        if page_box is not None and leaf.segment.box is not None:
            leaf.position_ratio = box_position_ratio(
                leaf.segment.box, (page_box[2], page_box[3]), params.position_margin
            )
        else:
            leaf.position_ratio = interval_position_ratio(
                leaf.start, leaf.end, total_chars, params.position_margin
            )
        leaf.position = position_feature(leaf.position_ratio, params.position_threshold)
        leaf.weight = chunk_weight(leaf.relevancy, leaf.frequency, leaf.position, params)

    if params.noise_filter:
        hints = (
            _markup_hints(tree, leaves, params.markup_hint_max_share) if params.markup_hints else {}
        )
        _remove_noise(leaves, params, hints)
    if params.duplicate_filter:
        _remove_duplicates(leaves, params.duplicate_threshold)
    if params.template_filter and site_memory is not None:
        _remove_template(leaves, _site_of(url), site_memory)

    main_ids, main_leaves = _choose_main_chunks(tree, leaves, params)
    main_text, keywords = _main_content(main_leaves, title, lang, params)
    chunks = _chunk_records(tree, order, leaves, {id(leaf.segment) for leaf in main_leaves})
    return PageAnalysis(
        url=url,
        title=title,
        language=lang,
        chunks=chunks,
        main_chunk_ids=tuple(main_ids),
        main_text=main_text,
        keywords=dict(keywords.most_common()),
        links=links,
    )


def _walk(tree: Segment) -> Iterator[Segment]:
    """Yield the chunk tree in document (pre-)order without recursion."""
    stack = [tree]
    while stack:
        segment = stack.pop()
        yield segment
        stack.extend(reversed(segment.children))


def _collect_leaves(tree: Segment) -> tuple[list[_Leaf], dict[int, int]]:
    leaves: list[_Leaf] = []
    order: dict[int, int] = {}
    offset = 0
    for position, segment in enumerate(_walk(tree)):
        order[id(segment)] = position
        if not segment.is_leaf:
            continue
        text = segment.text
        if not text and not segment.n_images:
            continue
        leaves.append(_Leaf(segment, position, text, Counter(), 0, offset, offset + len(text)))
        offset += len(text) + 1
    return leaves, order


def _language_sample(leaves: list[_Leaf]) -> str:
    longest = sorted(leaves, key=lambda leaf: len(leaf.text), reverse=True)[:8]
    return "\n".join(leaf.text for leaf in longest)


def _markup_hints(tree: Segment, leaves: list[_Leaf], max_share: float) -> dict[int, str]:
    """Return the furniture hint in force for each segment (an ancestor's or its own).

    A hinted container holding ``max_share`` or more of the page's text is a page wrapper
    whose class happens to name furniture (``has-sidebar``), so its hint is ignored; comment
    hints always hold.
    """
    size = {id(leaf.segment): len(leaf.text) for leaf in leaves}
    for node in reversed(list(_walk(tree))):
        size[id(node)] = size.get(id(node), 0) + sum(size[id(child)] for child in node.children)
    limit = max_share * max(1, size.get(id(tree), 0))
    hints: dict[int, str] = {}
    stack: list[tuple[Segment, str]] = [(tree, "")]
    while stack:
        node, hint = stack.pop()
        own = node.boilerplate_hint
        if not hint and own and (own in STRONG_BOILERPLATE_WORDS or size[id(node)] < limit):
            hint = own
        if hint:
            hints[id(node)] = hint
        stack.extend((child, hint) for child in node.children)
    return hints


def _remove_noise(leaves: list[_Leaf], params: AnalysisParams, hints: dict[int, str]) -> None:
    for leaf in leaves:
        if leaf.hlp > params.hyperlink_threshold:
            leaf.fate, leaf.reason = NOISE, "hyperlink_percentage"
        elif leaf.ns > params.noise_score_threshold and (
            params.image_block_max_keywords < 0
            or sum(leaf.keywords.values()) <= params.image_block_max_keywords
        ):
            leaf.fate, leaf.reason = NOISE, "noise_score"
        elif hints.get(id(leaf.segment)):
            leaf.fate, leaf.reason = NOISE, f"markup:{hints[id(leaf.segment)]}"


def keyword_matrix(
    counters: Sequence[Counter[str]],
) -> scipy.sparse.csr_matrix:
    """Stack keyword counters into an L2-normalised sparse matrix (rows = counters)."""
    vocabulary: dict[str, int] = {}
    indptr, indices, data = [0], [], []
    for counter in counters:
        for term, count in counter.items():
            indices.append(vocabulary.setdefault(term, len(vocabulary)))
            data.append(float(count))
        indptr.append(len(indices))
    matrix = scipy.sparse.csr_matrix(
        (np.asarray(data), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(counters), max(1, len(vocabulary))),
    )
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return scipy.sparse.csr_matrix(scipy.sparse.diags(1.0 / norms) @ matrix)


def _remove_duplicates(leaves: list[_Leaf], threshold: float) -> None:
    """Of chunks whose keyword cosine is at or above the threshold, keep the first."""
    first_of: dict[frozenset[tuple[str, int]], _Leaf] = {}
    distinct: list[_Leaf] = []
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
    transposed = matrix.T.tocsc()
    for start in range(0, len(distinct), _DUPLICATE_BLOCK_ROWS):
        block = (matrix[start : start + _DUPLICATE_BLOCK_ROWS] @ transposed).tocoo()
        hits = (block.data >= threshold - 1e-9) & (block.col < block.row + start)
        rows, cols = block.row[hits] + start, block.col[hits]
        ordered = np.lexsort((cols, rows))
        matches: dict[int, list[int]] = {}
        for row, col in zip(rows[ordered].tolist(), cols[ordered].tolist(), strict=True):
            matches.setdefault(row, []).append(col)
        for j, earlier in matches.items():
            kept_index = next((i for i in earlier if distinct[i].fate == KEPT), None)
            if kept_index is not None:
                distinct[j].fate = DUPLICATE
                distinct[j].reason = f"cosine:{distinct[kept_index].segment.chunk_id}"


def _site_of(url: str | None) -> str:
    if not url:
        return ""
    try:
        return (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        return ""


def _remove_template(leaves: list[_Leaf], site: str, memory: SiteTemplateMemory) -> None:
    fingerprints = {id(leaf): chunk_fingerprint(leaf.text) for leaf in leaves if leaf.keywords}
    template = memory.template_fingerprints(site, fingerprints.values())
    for leaf in leaves:
        if leaf.fate == KEPT and fingerprints.get(id(leaf)) in template:
            leaf.fate, leaf.reason = DUPLICATE, "site_template"


def _choose_main_chunks(
    tree: Segment, leaves: list[_Leaf], params: AnalysisParams
) -> tuple[list[str], list[_Leaf]]:
    """Pick the main chunk(s): highest sum of kept sub-chunk weight minus removed weight."""
    contribution: dict[int, float] = {}
    for leaf in leaves:
        size = max(1, sum(leaf.keywords.values())) ** params.size_exponent
        sign = 1.0 if leaf.fate == KEPT else -params.removed_penalty
        contribution[id(leaf.segment)] = sign * leaf.weight * size
    nodes = list(_walk(tree))
    score: dict[int, float] = {}
    for node in reversed(nodes):
        score[id(node)] = contribution.get(id(node), 0.0) + sum(
            score[id(child)] for child in node.children
        )
    kept = [leaf for leaf in leaves if leaf.fate == KEPT]
    if not kept:
        return [], []
    depth_first = sorted(nodes, key=lambda node: (-score[id(node)], -node.depth))
    best = depth_first[0]
    if score[id(best)] <= 0:
        return [tree.chunk_id], kept
    chosen = [best]
    members = {id(segment) for segment in _walk(best)}
    for node in depth_first[1:]:
        if score[id(node)] < params.main_chunk_ratio * score[id(best)] or score[id(node)] <= 0:
            break
        subtree = {id(segment) for segment in _walk(node)}
        if id(node) not in members and not subtree & members:
            chosen.append(node)
            members |= subtree
    main_leaves = [leaf for leaf in kept if id(leaf.segment) in members]
    return [node.chunk_id for node in chosen], main_leaves


def _chunk_records(
    tree: Segment, order: dict[int, int], leaves: list[_Leaf], main: set[int]
) -> tuple[Chunk, ...]:
    by_segment = {id(leaf.segment): leaf for leaf in leaves}
    weightage: dict[int, float] = {}
    nodes = list(_walk(tree))
    for node in reversed(nodes):
        leaf = by_segment.get(id(node))
        own = leaf.weight if leaf is not None and leaf.fate == KEPT else 0.0
        weightage[id(node)] = own + sum(weightage[id(child)] for child in node.children)
    records: list[Chunk] = []
    for node in nodes:
        leaf = by_segment.get(id(node))
        if node.is_leaf and leaf is None:
            continue  # blank chunk: no text, no image
        if leaf is None:
            records.append(
                Chunk(
                    node.chunk_id,
                    node.parent_id,
                    node.rule,
                    node.tag,
                    node.depth,
                    order[id(node)],
                    "",
                    0,
                    0,
                    0,
                    0.0,
                    0.0,
                    {},
                    0.0,
                    0.0,
                    0.0,
                    0,
                    round(weightage[id(node)], 6),
                    CONTAINER,
                    "",
                    False,
                )
            )
            continue
        records.append(
            Chunk(
                chunk_id=node.chunk_id,
                parent_id=node.parent_id,
                rule=node.rule,
                tag=node.tag,
                depth=node.depth,
                order=leaf.order,
                text=leaf.text,
                n_keywords=sum(leaf.keywords.values()),
                n_link_keywords=leaf.n_link_keywords,
                n_images=node.n_images,
                hyperlink_percentage=round(leaf.hlp, 6),
                noise_score=round(leaf.ns, 6),
                title_keywords={},
                title_word_relevancy=round(leaf.relevancy, 6),
                keyword_frequency=round(leaf.frequency, 6),
                position_ratio=round(leaf.position_ratio, 6),
                position_feature=leaf.position,
                weight=round(leaf.weight, 6),
                fate=leaf.fate,
                reason=leaf.reason,
                is_main=id(node) in main,
            )
        )
    return tuple(records)
