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

import copy
import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from websim_crawler.core import text as textlib
from websim_crawler.core.html import (
    DOUBTFUL,
    check_page_size,
    declared_language,
    decode_page,
    doubtful_text,
    outgoing_links,
    page_title,
    parse_plain_tree,
    remove_invisible,
)
from websim_crawler.core.page.chunks import (
    CHUNK_DETAILS,
    ChunkTree,
    LeafChunk,
    PageAnalysis,
    chunk_records,
)
from websim_crawler.core.page.features import (
    chunk_weight,
    hyperlink_percentage,
    keyword_frequency_score,
    noise_score,
    position_feature,
    title_word_relevancy,
)
from websim_crawler.core.page.filters import (
    markup_hints,
    remove_duplicates,
    remove_noise,
    remove_template,
)
from websim_crawler.core.page.main_chunks import choose_main_chunks
from websim_crawler.core.page.main_text import main_content
from websim_crawler.core.page.params import DEFAULT_PARAMS, AnalysisParams
from websim_crawler.core.page.position import box_position_ratio, interval_position_ratio
from websim_crawler.core.page.segment import Segment, parse_box, segment_page
from websim_crawler.core.page.site_memory import TemplateMemory, template_key
from websim_crawler.core.urls import host_port_of


def analyse_page(
    html: str | bytes,
    url: str | None = None,
    *,
    params: AnalysisParams | None = None,
    encoding: str | None = None,
    content_type: str | None = None,
    language: str | None = None,
    site_memory: TemplateMemory | None = None,
    chunk_detail: str = "full",
    page_kind: str | None = None,
    keep_tree: bool = False,
) -> PageAnalysis:
    """Analyse one page; raise ``PageError`` (with a stats reason) for pages that cannot be.

    Takes the page as HTML text (``str``) or undecoded ``bytes`` (``encoding`` or
    ``content_type`` tell their charset, else it is detected) and its URL; returns a frozen
    ``PageAnalysis`` (main text, keywords, chunks with their fate).

    ``chunk_detail`` (``CHUNK_DETAILS``) says which chunk records to build: every chunk, the
    main-content chunks, or none, when the caller keeps no more (``WEBSIM_CHUNK_DETAIL``).
    ``page_kind`` (an item's ``kind``) keeps the site template memory of each kind apart.
    ``keep_tree``: the analysis' ``tree`` is the parsed page as the parser gave it (a copy, the
    analysis prunes its own), so what else is derived from the page needs no second parse.
    """
    if chunk_detail not in CHUNK_DETAILS:
        raise ValueError(f"chunk_detail must be one of {CHUNK_DETAILS}, not {chunk_detail!r}")
    with _collector_paused():
        return _analyse_page(
            html,
            url,
            params or DEFAULT_PARAMS,
            encoding,
            content_type,
            language,
            site_memory,
            chunk_detail,
            page_kind,
            keep_tree,
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
    site_memory: TemplateMemory | None,
    chunk_detail: str,
    page_kind: str | None,
    keep_tree: bool,
) -> PageAnalysis:
    limits = params.parse_limits
    check_page_size(html, limits)
    page_encoding: str | None = None  # how bytes were decoded; text came decoded
    confidence: str | None = None
    if isinstance(html, bytes):
        decoded = decode_page(html, content_type, encoding)
        page_encoding, confidence = decoded.encoding, decoded.confidence
        root = parse_plain_tree(decoded, limits=limits)
    else:
        if doubtful_text(html):
            confidence = DOUBTFUL
        root = parse_plain_tree(html, limits=limits)
    parsed = copy.deepcopy(root) if keep_tree else None  # before the analysis prunes it
    title = page_title(root)
    declared = declared_language(root)
    page_box = parse_box(f"0,0,{root.get('data-websim-page', '')}")
    links = tuple(outgoing_links(root, url))
    remove_invisible(root, params.noscript_keep_chars)
    tree = ChunkTree(segment_page(root))
    del root  # the segments hold their own text: the parsed tree is freed before the features

    leaves = _collect_leaves(tree.nodes)
    lang = (
        params.language
        or textlib.language_code(language)
        or textlib.language_code(declared)
        or textlib.detect_language(_language_sample(leaves))
    )
    _leaf_features(leaves, title, lang, page_box, params)
    if params.noise_filter:
        hints = markup_hints(tree, leaves, params) if params.markup_hints else None
        remove_noise(leaves, params, hints)
    if params.duplicate_filter:
        remove_duplicates(leaves, params.duplicate_threshold)
    if params.template_filter and site_memory is not None:
        remove_template(leaves, template_key(host_port_of(url), page_kind), site_memory)

    main_ids, main_leaves = choose_main_chunks(tree, leaves, params)
    main_text, keywords = main_content(main_leaves, title, lang, params)
    chunks = chunk_records(tree, leaves, {leaf.index for leaf in main_leaves}, chunk_detail)
    return PageAnalysis(
        url=url,
        title=title,
        language=lang,
        chunks=chunks,
        main_chunk_ids=tuple(main_ids),
        main_text=main_text,
        keywords=textlib.keyword_words(keywords, main_text, lang, params.stemmer),
        keyword_stems=dict(keywords.most_common()),
        links=links,
        encoding=page_encoding,
        encoding_confidence=confidence,
        chunk_detail=chunk_detail,
        fates=dict(Counter(leaf.fate for leaf in leaves)),
        tree=parsed,
    )


def _leaf_features(
    leaves: list[LeafChunk],
    title: str,
    lang: str,
    page_box: tuple[float, float, float, float] | None,
    params: AnalysisParams,
) -> None:
    """Compute each leaf chunk's keywords and the paper's features (steps 2 and 5)."""
    stem, stemmer_name = params.stem_chunk_keywords, params.stemmer
    title_keywords = list(
        dict.fromkeys(textlib.keyword_tokens(title, lang, stem=stem, stemmer_name=stemmer_name))
    )
    page_images = sum(leaf.segment.n_images for leaf in leaves)
    total_chars = leaves[-1].end if leaves else 0
    linked = [leaf for leaf in leaves if leaf.segment.has_links]
    link_keywords = textlib.keyword_token_lists(
        [leaf.segment.link_text for leaf in linked], lang, stem=False, stemmer_name=stemmer_name
    )
    for leaf, tokens in zip(linked, link_keywords, strict=True):
        leaf.n_link_keywords = len(tokens)
    leaf_keywords = textlib.keyword_token_lists(
        [leaf.text for leaf in leaves], lang, stem=stem, stemmer_name=stemmer_name
    )
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
        leaf.hyperlink_percentage = hyperlink_percentage(leaf.n_link_keywords, leaf.n_keywords)
        leaf.noise_score = noise_score(segment.n_images, page_images)
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


def _collect_leaves(nodes: list[Segment]) -> list[LeafChunk]:
    """Return the leaf chunks with text or images, with their span in the page's visible text."""
    leaves: list[LeafChunk] = []
    offset = 0
    for index, segment in enumerate(nodes):
        if segment.children:
            continue
        text = segment.text
        if not text and not segment.n_images:
            continue
        leaves.append(LeafChunk(segment, index, text, offset, offset + len(text)))
        offset += len(text) + 1
    return leaves


def _language_sample(leaves: list[LeafChunk]) -> str:
    longest = sorted(leaves, key=lambda leaf: len(leaf.text), reverse=True)[:8]
    return "\n".join(leaf.text for leaf in longest)
