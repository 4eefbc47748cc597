"""The main content's text: its lines, less the boilerplate lines inside it (beyond the paper)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from websim_crawler.core import text as textlib
from websim_crawler.core.page.chunks import LeafChunk
from websim_crawler.core.page.params import AnalysisParams
from websim_crawler.core.page.segment import Line

_COPYRIGHT_RE = re.compile(
    r"©|\(c\)\s*(?:19|20)\d\d|\bcopyright\b|all rights reserved|alle rechte vorbehalten"
    r"|tous droits réservés|wszelkie prawa zastrzeżone|todos los derechos reservados"
    r"|tutti i diritti riservati|alle rechten voorbehouden",
    re.IGNORECASE,
)
_COPYRIGHT_MAX_CHARS = 200
SENTENCE_ENDS = (".", "!", "?", "。", "！", "？", "…", '"', "”", "»", ")")


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
        and (len(line.text) >= _PROSE_MIN_CHARS or line.text.endswith(SENTENCE_ENDS))
    )


def _drop_orphan_headings(
    kept: list[tuple[LeafChunk, list[Line]]],
) -> list[tuple[LeafChunk, list[Line]]]:
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
    return len(text) < max_chars and not text.endswith(SENTENCE_ENDS)


def edge_line(line: Line, params: AnalysisParams) -> bool:
    """Tell whether the edge trim drops a first or last line of the main content."""
    if params.edge_trim_chars and short_edge_line(line.text, params.edge_trim_chars):
        return True
    return params.edge_link_trim and line.link_share >= _TEASER_LINK_SHARE and not line.heading


# Furniture-named inline elements holding more than this share of the main content's characters
# wrap the article rather than mark bylines or dates.
_FURNITURE_WRAPPER_SHARE = 0.5


def _furniture_wraps_content(main_leaves: list[LeafChunk]) -> bool:
    """Tell whether most of the main content lies inside furniture-named inline elements."""
    furniture = total = 0.0
    for leaf in main_leaves:
        for line in leaf.segment.lines:
            size = len(line.text)
            total += size
            furniture += size * line.furniture_share
    return furniture > _FURNITURE_WRAPPER_SHARE * total


def main_content(
    main_leaves: list[LeafChunk], title: str, lang: str, params: AnalysisParams
) -> tuple[str, Counter[str]]:  # keywords stemmed (step 6)
    """Join the main chunks' lines without boilerplate lines; count their keywords."""
    kept: list[tuple[LeafChunk, list[Line]]] = []
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
            keywords.update(
                textlib.keyword_tokens(
                    text, lang, stem=params.stem_chunk_keywords, stemmer_name=params.stemmer
                )
            )
    if not params.stem_chunk_keywords:
        keywords = textlib.stem_counts(keywords, lang, params.stemmer)
    return "\n".join(texts), keywords
