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
import gc
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import scipy.sparse

from websim_crawler.core import text as textlib
from websim_crawler.core.html import (
    declared_language,
    outgoing_links,
    page_title,
    parse_document,
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
    noscript_keep_chars: int = setting(
        1000,
        "WEBSIM_NOSCRIPT_KEEP_CHARS",
        "addition: a noscript element holding at least this many characters of text is kept "
        "as content (a script-free copy of the post, or a page swallowed by a broken noscript; "
        "0: every noscript is dropped)",
        minimum=0,
    )
    stem_chunk_keywords: bool = setting(
        True,
        "WEBSIM_STEM_CHUNK_KEYWORDS",
        "stem the keywords of every chunk for its features (False: unstemmed tokens, the "
        "main content's keywords are stemmed anyway)",
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
    main_expansion: bool = setting(
        True,
        "WEBSIM_MAIN_EXPANSION",
        "addition: kept leaf chunks beside the best main chunk under its parent join the main "
        "content when they are link-poor (lists, fact boxes next to the article)",
    )
    expansion_link_threshold: float = setting(
        0.2,
        "WEBSIM_EXPANSION_LINK_THRESHOLD",
        "main expansion: highest hyperlink percentage of a joining chunk",
        minimum=0.0,
        maximum=1.0,
    )
    expansion_min_keywords: int = setting(
        3,
        "WEBSIM_EXPANSION_MIN_KEYWORDS",
        "main expansion: fewest keywords of a joining chunk",
        minimum=0,
    )
    markup_hints: bool = setting(
        True,
        "WEBSIM_MARKUP_HINTS",
        "addition: chunks inside nav/aside/footer or a class/id/role naming page furniture "
        "(comments, share, related, sidebar...) are noise",
    )
    markup_hint_max_share: float = setting(
        0.5,
        "WEBSIM_MARKUP_HINT_MAX_SHARE",
        "a furniture-named container holding this share of the page's link-poor text or more "
        "is a page wrapper and its hint is ignored (comment hints always hold)",
        minimum=0.0,
        maximum=1.0,
    )
    markup_hint_min_rest: float = setting(
        0.1,
        "WEBSIM_MARKUP_HINT_MIN_REST",
        "addition: when the markup hints leave less than this share of the page's link-poor "
        "text unhinted, the furniture word holding most of it is ignored: the page builder's "
        "name for its blocks (elementor-widget) or a forum thread's comments (0: off)",
        minimum=0.0,
        maximum=1.0,
    )
    content_name_overrule: bool = setting(
        False,
        "WEBSIM_CONTENT_NAME_OVERRULE",
        "addition, off by default: a container whose class/id is made only of content words "
        "(main-story, article-body) is no furniture even inside a furniture-named one (comment "
        "hints hold)",
    )
    lead_levels: int = setting(
        6,
        "WEBSIM_LEAD_LEVELS",
        "addition: the nearest kept leaf of running text before the main content under its "
        "ancestor this many levels up joins it (the lead paragraph; 0: off)",
        minimum=0,
    )
    tail_leaf_share: float = setting(
        0.15,
        "WEBSIM_TAIL_LEAF_SHARE",
        "addition: main-content leaf chunks after the last one holding this share of the "
        "largest one's text are dropped (author notes, calls to subscribe; 0: off)",
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
    teaser_line_filter: bool = setting(
        True,
        "WEBSIM_TEASER_LINE_FILTER",
        "addition: drop teaser lines inside the main content: 'Label: <link>' lines and short "
        "labels ending with ':' or '?' right before a link line ('Read also:', 'Czytaj też')",
    )
    edge_link_trim: bool = setting(
        True,
        "WEBSIM_EDGE_LINK_TRIM",
        "addition: drop lines mostly of link text (not headings) from the start and end of the "
        "main content (tag lists, 'Read more' links)",
    )
    orphan_heading_filter: bool = setting(
        True,
        "WEBSIM_ORPHAN_HEADING_FILTER",
        "addition: drop short main-content headings no running text follows before the next "
        "heading or the end ('More on this topic' over links, 'News' at the bottom)",
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


_DEFAULT_PARAMS = AnalysisParams()


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


def title_word_relevancy(chunk_keywords: Mapping[str, int], title_keywords: Sequence[str]) -> float:
    """T_K = sum of the frequencies of the title's keywords in the chunk / number of them."""
    if not title_keywords:
        return 0.0
    found = [chunk_keywords[term] for term in title_keywords if term in chunk_keywords]
    return sum(found) / len(title_keywords)


def keyword_frequency_score(chunk_keywords: Counter[str], top_k: int) -> float:
    """K_f = sum of the frequencies of the chunk's top-K keywords / its number of keywords."""
    counts = chunk_keywords.values()
    total = sum(counts)
    if total == 0:
        return 0.0
    if len(counts) <= top_k:
        return 1.0  # every keyword is a top one
    return sum(sorted(counts, reverse=True)[:top_k]) / total


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


@lru_cache(maxsize=256)
def _folded_title(title: str) -> str:
    return _fold(title)


def boilerplate_line(
    line: Line, title: str, params: AnalysisParams, *, furniture: bool = True
) -> str:
    """Return why a line of the main content is boilerplate ("" when it is content).

    ``furniture=False`` keeps lines inside furniture-named elements (the element wraps the
    article, e.g. a ``<span class="meta_field">`` around the post body).
    """
    if params.title_line_filter and title and len(line.text) >= 10:
        folded = _folded_title(title)
        # Folding never shortens a line whose spaces are collapsed already.
        if len(line.text) <= len(folded) and _fold(line.text) in folded:
            return "title"
    if params.furniture_line_filter:
        if furniture and line.furniture_share >= 0.5:
            return "furniture"
        if len(line.text) <= _COPYRIGHT_MAX_CHARS and _COPYRIGHT_RE.search(line.text):
            return "copyright"
    if params.caption_filter and line.caption_share >= 0.5:
        return "caption"
    if line.link_share > params.line_link_threshold and not line.heading:
        return "links"
    return ""


# A teaser label before a link: a few words without digits, slashes or colons, then ': '.
_TEASER_LABEL_RE = re.compile(r"[^\d/:]{2,30}:\s")
_TEASER_LABEL_MAX_CHARS = 60
_TEASER_LINK_SHARE = 0.5


def teaser_line(line: Line, next_line: Line | None) -> bool:
    """Tell whether a main-content line points to another page ("Read also: <link>").

    Either the line is mostly link text after a short label ending with a colon, or it is a
    short label ending with ':' or '?' whose next line is mostly link text.
    """
    if line.link_share >= _TEASER_LINK_SHARE:
        return _TEASER_LABEL_RE.match(line.text) is not None
    return (
        next_line is not None
        and next_line.link_share >= _TEASER_LINK_SHARE
        and len(line.text) < _TEASER_LABEL_MAX_CHARS
        and line.text.endswith((":", "?"))
    )


_ORPHAN_HEADING_MAX_CHARS = 60
_PROSE_MIN_CHARS = 40


def prose_line(line: Line) -> bool:
    """Tell whether a line reads as running text: no heading, mostly plain, long or a sentence."""
    return (
        not line.heading
        and line.link_share < _TEASER_LINK_SHARE
        and (len(line.text) >= _PROSE_MIN_CHARS or line.text.endswith(_SENTENCE_ENDS))
    )


def _drop_orphan_headings(
    kept: list[tuple[_Leaf, list[Line]]],
) -> list[tuple[_Leaf, list[Line]]]:
    """Drop short headings no running text follows before the next heading or the end
    ("Related articles" over a link list, "News" at the bottom); a main content without any
    running text is left as it is."""
    orphans: set[tuple[int, int]] = set()  # (position in kept, position in its lines)
    prose_after = False
    any_prose = False
    for leaf_position in range(len(kept) - 1, -1, -1):
        lines = kept[leaf_position][1]
        for line_position in range(len(lines) - 1, -1, -1):
            line = lines[line_position]
            if line.heading:
                if not prose_after and len(line.text) <= _ORPHAN_HEADING_MAX_CHARS:
                    orphans.add((leaf_position, line_position))
                prose_after = False
            elif prose_line(line):
                prose_after = any_prose = True
    if not orphans or not any_prose:
        return kept
    result = []
    for leaf_position, (leaf, lines) in enumerate(kept):
        remaining = [
            line
            for line_position, line in enumerate(lines)
            if (leaf_position, line_position) not in orphans
        ]
        if remaining:
            result.append((leaf, remaining))
    return result


def short_edge_line(text: str, max_chars: int) -> bool:
    """Tell whether a line is a short label rather than a sentence (for the edge trim)."""
    return len(text) < max_chars and not text.endswith(_SENTENCE_ENDS)


def edge_line(line: Line, params: AnalysisParams) -> bool:
    """Tell whether the edge trim drops a first or last line of the main content."""
    if params.edge_trim_chars and short_edge_line(line.text, params.edge_trim_chars):
        return True
    return params.edge_link_trim and line.link_share >= _TEASER_LINK_SHARE and not line.heading


# Furniture-named inline elements holding more than this share of the main content's characters
# wrap the article rather than mark bylines or dates.
_FURNITURE_WRAPPER_SHARE = 0.5


def _furniture_wraps_content(main_leaves: list[_Leaf]) -> bool:
    """Tell whether most of the main content lies inside furniture-named inline elements."""
    furniture = total = 0.0
    for leaf in main_leaves:
        for line in leaf.segment.lines:
            size = len(line.text)
            total += size
            furniture += size * line.furniture_share
    return furniture > _FURNITURE_WRAPPER_SHARE * total


def _main_content(
    main_leaves: list[_Leaf], title: str, lang: str, params: AnalysisParams
) -> tuple[str, Counter[str]]:  # keywords stemmed (step 6)
    """Join the main chunks' lines without boilerplate lines; count their keywords."""
    kept: list[tuple[_Leaf, list[Line]]] = []
    teasers: set[int] = set()
    if params.teaser_line_filter:
        flat = [line for leaf in main_leaves for line in leaf.segment.lines]
        teasers = {
            position
            for position, line in enumerate(flat)
            if teaser_line(line, flat[position + 1] if position + 1 < len(flat) else None)
        }
    furniture = not _furniture_wraps_content(main_leaves)
    position = 0
    for leaf in main_leaves:
        lines = []
        for line in leaf.segment.lines:
            if position not in teasers and not boilerplate_line(
                line, title, params, furniture=furniture
            ):
                lines.append(line)
            position += 1
        if lines:
            kept.append((leaf, lines))
    if params.orphan_heading_filter:
        kept = _drop_orphan_headings(kept)
    if params.edge_trim_chars or params.edge_link_trim:
        remaining = sum(len(lines) for _leaf, lines in kept)
        for position in (0, -1):
            while remaining > 1 and edge_line(kept[position][1][position], params):
                del kept[position][1][position]
                remaining -= 1
                if not kept[position][1]:
                    del kept[position]
    texts: list[str] = []
    keywords: Counter[str] = Counter()
    for leaf, lines in kept:
        text = "\n".join(line.text for line in lines)
        texts.append(text)
        if len(lines) == len(leaf.segment.lines):
            keywords.update(leaf.keywords)
        else:
            keywords.update(textlib.keyword_tokens(text, lang, stem=params.stem_chunk_keywords))
    if not params.stem_chunk_keywords:
        keywords = textlib.stem_counts(keywords, lang)
    return "\n".join(texts), keywords


# --- the analysis ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Leaf:
    segment: Segment
    index: int  # position in the page's node list (document order)
    text: str
    start: int
    end: int
    keywords: Counter[str] = dataclasses.field(init=False)  # set with the features
    n_keywords: int = 0
    n_link_keywords: int = 0
    title_counts: dict[str, int] = dataclasses.field(init=False)
    fate: str = KEPT
    reason: str = ""
    hlp: float = 0.0
    ns: float = 0.0
    relevancy: float = 0.0
    frequency: float = 0.0
    position_ratio: float = 0.0
    position: int = 0
    weight: float = 0.0


def new_template_memory(params: AnalysisParams) -> SiteTemplateMemory:
    """Return an empty per-site template memory sized by the params."""
    return SiteTemplateMemory(
        params.template_min_pages, params.template_memory_sites, params.template_memory_chunks
    )


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
    with _collector_paused():
        return _analyse_page(
            html, url, params or _DEFAULT_PARAMS, encoding, content_type, language, site_memory
        )


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while one page is analysed.

    The analysis allocates thousands of short-lived containers (segments, keyword counters,
    chunk records) that form no reference cycles: reference counting frees them when it returns.
    Collections in between would only promote them and rescan every long-lived object (NLTK's
    import alone leaves ~80,000), about a tenth of the analysis time.
    """
    if not gc.isenabled():  # paused by the caller (or a concurrent analysis): leave it so
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _analyse_page(
    html: str | bytes,
    url: str | None,
    params: AnalysisParams,
    encoding: str | None,
    content_type: str | None,
    language: str | None,
    site_memory: SiteTemplateMemory | None,
) -> PageAnalysis:
    if len(html) > params.max_page_bytes:
        raise PageError(
            "too_large", f"the page has {len(html):,} bytes, over WEBSIM_MAX_PAGE_BYTES"
        )
    root = parse_document(html, encoding=encoding, content_type=content_type)
    title = page_title(root)
    declared = declared_language(root)
    page_box = parse_box(f"0,0,{root.get('data-websim-page', '')}")
    links = tuple(outgoing_links(root, url))
    remove_invisible(root, params.noscript_keep_chars)
    tree = _Tree(segment_page(root))

    leaves = _collect_leaves(tree.nodes)
    lang = (
        params.language
        or textlib.language_code(language)
        or textlib.language_code(declared)
        or textlib.detect_language(_language_sample(leaves))
    )
    _leaf_features(leaves, title, lang, page_box, params)
    if params.noise_filter:
        hints = _markup_hints(tree, leaves, params) if params.markup_hints else None
        _remove_noise(leaves, params, hints)
    if params.duplicate_filter:
        _remove_duplicates(leaves, params.duplicate_threshold)
    if params.template_filter and site_memory is not None:
        _remove_template(leaves, _site_of(url), site_memory)

    main_ids, main_leaves = _choose_main_chunks(tree, leaves, params)
    main_text, keywords = _main_content(main_leaves, title, lang, params)
    chunks = _chunk_records(tree, leaves, {leaf.index for leaf in main_leaves})
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


def _leaf_features(
    leaves: list[_Leaf],
    title: str,
    lang: str,
    page_box: tuple[float, float, float, float] | None,
    params: AnalysisParams,
) -> None:
    """Compute each leaf chunk's keywords and the paper's features (steps 2 and 5)."""
    stem = params.stem_chunk_keywords
    title_keywords = list(dict.fromkeys(textlib.keyword_tokens(title, lang, stem=stem)))
    page_images = sum(leaf.segment.n_images for leaf in leaves)
    total_chars = leaves[-1].end if leaves else 0
    linked = [leaf for leaf in leaves if leaf.segment.has_links]
    link_keywords = textlib.keyword_token_lists(
        [leaf.segment.link_text for leaf in linked], lang, stem=False
    )
    for leaf, tokens in zip(linked, link_keywords, strict=True):
        leaf.n_link_keywords = len(tokens)
    leaf_keywords = textlib.keyword_token_lists([leaf.text for leaf in leaves], lang, stem=stem)
    top_keywords, margin, threshold = (
        params.top_keywords,
        params.position_margin,
        params.position_threshold,
    )
    for leaf, tokens in zip(leaves, leaf_keywords, strict=True):
        segment = leaf.segment
        keywords = leaf.keywords = Counter(tokens)
        leaf.n_keywords = len(tokens)
        title_counts = leaf.title_counts = (
            {term: keywords[term] for term in title_keywords if term in keywords}
            if tokens and title_keywords
            else {}
        )
        leaf.hlp = hyperlink_percentage(leaf.n_link_keywords, leaf.n_keywords)
        leaf.ns = noise_score(segment.n_images, page_images)
        leaf.relevancy = title_word_relevancy(title_counts, title_keywords)
        leaf.frequency = keyword_frequency_score(keywords, top_keywords)
        if page_box is not None and segment.box is not None:
            leaf.position_ratio = box_position_ratio(
                segment.box, (page_box[2], page_box[3]), margin
            )
        else:
            leaf.position_ratio = interval_position_ratio(leaf.start, leaf.end, total_chars, margin)
        leaf.position = position_feature(leaf.position_ratio, threshold)
        leaf.weight = chunk_weight(leaf.relevancy, leaf.frequency, leaf.position, params)


class _Tree:
    """The chunk tree flattened in document (pre-)order, with each node's parent index."""

    def __init__(self, root: Segment) -> None:
        self.nodes: list[Segment] = []
        self.parents: list[int] = []
        stack: list[tuple[Segment, int]] = [(root, -1)]
        while stack:  # no recursion: 5,000-deep pages
            node, parent = stack.pop()
            index = len(self.nodes)
            self.nodes.append(node)
            self.parents.append(parent)
            if node.children:
                stack.extend([(child, index) for child in reversed(node.children)])
        self.ends = [index + size for index, size in enumerate(self.totals([1] * len(self.nodes)))]

    def totals(self, own: list[float] | list[int]) -> list[float]:
        """Sum a per-node value over each node's subtree."""
        total = [float(value) for value in own]
        parents = self.parents
        for index in range(len(total) - 1, 0, -1):
            total[parents[index]] += total[index]
        return total


def _collect_leaves(nodes: list[Segment]) -> list[_Leaf]:
    """Return the leaf chunks with text or images, with their span in the page's visible text."""
    leaves: list[_Leaf] = []
    offset = 0
    for index, segment in enumerate(nodes):
        if segment.children:
            continue
        text = segment.text
        if not text and not segment.n_images:
            continue
        leaves.append(_Leaf(segment, index, text, offset, offset + len(text)))
        offset += len(text) + 1
    return leaves


def _language_sample(leaves: list[_Leaf]) -> str:
    longest = sorted(leaves, key=lambda leaf: len(leaf.text), reverse=True)[:8]
    return "\n".join(leaf.text for leaf in longest)


# A content-named container overrules its furniture-named ancestor when it holds at least this
# share of the ancestor's text (the story inside a "with-sidebar" wrapper, not one teaser of a
# related-posts box).
_CONTENT_NAME_SHARE = 0.5


def _markup_hints(tree: _Tree, leaves: list[_Leaf], params: AnalysisParams) -> list[str] | None:
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
    tree: _Tree, size: list[float], params: AnalysisParams, ignored: str
) -> list[str]:
    """Spread each furniture hint from its container over its subtree (see ``_markup_hints``)."""
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


def _remove_noise(leaves: list[_Leaf], params: AnalysisParams, hints: list[str] | None) -> None:
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
    tree: _Tree, leaves: list[_Leaf], params: AnalysisParams
) -> tuple[list[str], list[_Leaf]]:
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
    tree: _Tree, best: int, kept: list[_Leaf], main_leaves: list[_Leaf], params: AnalysisParams
) -> list[_Leaf]:
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
            and leaf.hlp <= params.expansion_link_threshold
            and leaf.n_keywords >= params.expansion_min_keywords
        )
    ]


def _cut_tail(main_leaves: list[_Leaf], share: float) -> list[_Leaf]:
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
    tree: _Tree, best: int, kept: list[_Leaf], main_leaves: list[_Leaf], params: AnalysisParams
) -> list[_Leaf]:
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
        if leaf.hlp > params.expansion_link_threshold:
            break  # link text (a tag list, a teaser) ends the page header
        if any(
            prose_line(line) and line.text.endswith(_SENTENCE_ENDS) for line in leaf.segment.lines
        ):
            return [leaf, *main_leaves]
        # A link-poor block that is no running text (a photo caption or credit) is passed.
    return main_leaves


_new_object = object.__new__
_CONTAINER_FIELDS: dict[str, Any] = {
    "text": "",
    "n_keywords": 0,
    "n_link_keywords": 0,
    "n_images": 0,
    "hyperlink_percentage": 0.0,
    "noise_score": 0.0,
    "title_keywords": {},
    "title_word_relevancy": 0.0,
    "keyword_frequency": 0.0,
    "position_ratio": 0.0,
    "position_feature": 0,
    "fate": CONTAINER,
    "reason": "",
    "is_main": False,
}


def _rounded(value: float) -> float:
    """Round a feature to 6 decimals for its record; 0 and 1, the most common, need no rounding."""
    return value if value == 0.0 or value == 1.0 else round(value, 6)


def _chunk_records(tree: _Tree, leaves: list[_Leaf], main: set[int]) -> tuple[Chunk, ...]:
    """Build the ``Chunk`` records, each from all its fields at once (no frozen per-field
    setattr)."""
    by_index: list[_Leaf | None] = [None] * len(tree.nodes)
    kept_weight = [0.0] * len(tree.nodes)
    for chunk_leaf in leaves:
        by_index[chunk_leaf.index] = chunk_leaf
        if chunk_leaf.fate == KEPT:
            kept_weight[chunk_leaf.index] = chunk_leaf.weight
    weightage = tree.totals(kept_weight)
    records: list[Chunk] = []
    for order, node in enumerate(tree.nodes):
        leaf = by_index[order]
        if leaf is None and not node.children:
            continue
        fields: dict[str, Any] = {
            "chunk_id": node.chunk_id,
            "parent_id": node.parent_id,
            "rule": node.rule,
            "tag": node.tag,
            "depth": node.depth,
            "order": order,
        }
        if leaf is not None:
            fields.update(
                text=leaf.text,
                n_keywords=leaf.n_keywords,
                n_link_keywords=leaf.n_link_keywords,
                n_images=node.n_images,
                hyperlink_percentage=_rounded(leaf.hlp),
                noise_score=_rounded(leaf.ns),
                title_keywords=leaf.title_counts,
                title_word_relevancy=_rounded(leaf.relevancy),
                keyword_frequency=_rounded(leaf.frequency),
                position_ratio=_rounded(leaf.position_ratio),
                position_feature=leaf.position,
                weight=_rounded(leaf.weight),
                fate=leaf.fate,
                reason=leaf.reason,
                is_main=order in main,
            )
        else:
            fields.update(_CONTAINER_FIELDS)
            fields["title_keywords"] = {}
            fields["weight"] = _rounded(weightage[order])
        chunk: Chunk = _new_object(Chunk)
        chunk.__dict__.update(fields)
        records.append(chunk)
    return tuple(records)
