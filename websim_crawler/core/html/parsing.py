"""Parse HTML robustly into lxml trees: broken markup, deep nesting, element limits, no toolbar.

The package's one HTML parser: the page analysis, the similarity's layout features and every
``websim`` command parse pages here, under one set of limits (``ParseLimits``: bytes and
elements, from ``WEBSIM_MAX_PAGE_BYTES`` and ``WEBSIM_MAX_ELEMENTS``; nesting deeper than
``MAX_NESTING`` is flattened), so a page over a limit gets the same answer everywhere.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, TypeAlias

import lxml.etree
import lxml.html

from websim_crawler.core.html.decoding import DecodedPage, decode_html, looks_binary
from websim_crawler.errors import PageError

_XML_DECLARATION_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
MAX_NESTING = 1000
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][\w:-]*)(?:\s[^>]*?)?(/?)>")
_VOID_TAGS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
_TOO_DEEP: lxml.html.HtmlElement = lxml.html.HtmlElement()
_COUNTING_SLICE = 256 * 1024  # characters fed to the parser between two element counts
# The Wayback Machine inserts its replay toolbar (links to the archive, capture dates) between
# these comments in every archived capture it serves; it is not part of the archived page.
_REPLAY_TOOLBAR_RE = re.compile(
    r"<!--\s*BEGIN WAYBACK TOOLBAR INSERT\s*-->.*?<!--\s*END WAYBACK TOOLBAR INSERT\s*-->",
    re.DOTALL,
)


@dataclass(frozen=True)
class ParseLimits:
    """The limits every parse of a page obeys (``None``: no limit)."""

    max_bytes: int | None = None  # WEBSIM_MAX_PAGE_BYTES: larger pages are too_large
    max_elements: int | None = None  # WEBSIM_MAX_ELEMENTS: more elements are too_many_elements


NO_LIMITS = ParseLimits()

HtmlTree: TypeAlias = lxml.etree._Element
"""A parsed page: the root element ``parse_plain_tree`` returns (``parse_html``'s
``HtmlElement`` is one too); the type of every tree that is passed on instead of parsed again."""


def check_page_size(html: str | bytes, limits: ParseLimits) -> None:
    """Raise ``PageError("too_large")`` when the page is over ``limits.max_bytes``."""
    if limits.max_bytes is not None and len(html) > limits.max_bytes:
        raise PageError(
            "too_large", f"the page has {len(html):,} bytes, over WEBSIM_MAX_PAGE_BYTES"
        )


def parse_html(
    html: str | bytes, encoding: str | None = None, content_type: str | None = None
) -> lxml.html.HtmlElement:
    """Parse a page into an lxml tree without comments, processing instructions or the toolbar
    that the Wayback Machine inserts into archived captures.

    Broken markup parses as a browser would repair it; nesting deeper than libxml2's default
    limit is kept (``huge_tree``). Raise ``PageError`` for empty, binary or unparseable pages.
    """
    root = _parse_page(html, encoding, content_type, lxml.html.HTMLParser)
    assert isinstance(root, lxml.html.HtmlElement)
    return root


def parse_plain_tree(
    html: str | bytes | DecodedPage,
    encoding: str | None = None,
    content_type: str | None = None,
    limits: ParseLimits = NO_LIMITS,
) -> HtmlTree:
    """Parse a page like ``parse_html`` into plain ``lxml.etree`` elements (faster to walk).

    ``lxml.html`` looks up a Python element class for every element it hands out; the page
    analysis needs none of the ``HtmlElement`` methods. A page over ``limits.max_bytes`` raises
    ``PageError("too_large")`` before it is decoded (a ``DecodedPage`` was checked by its
    decoder's caller); one with more than ``limits.max_elements`` elements raises
    ``PageError("too_many_elements")`` as soon as the parser reaches the one over the limit,
    before the rest of it takes memory. A ``DecodedPage`` (``decode_page``) is parsed as its
    bytes would be.
    """
    if not isinstance(html, DecodedPage):
        check_page_size(html, limits)
    return _parse_page(html, encoding, content_type, lxml.etree.HTMLParser, limits.max_elements)


def opened_tags_over(text: str, limit: int) -> int:
    """Return the count of the ``<`` of the markup that close nothing when it is over ``limit``,
    else 0: an upper bound on the elements that parsing it makes (besides the few a parser adds
    itself), found at the speed of memory. Each opened tag takes two characters at least, so a
    text of at most ``2 * limit`` characters is under the limit without counting."""
    if len(text) <= 2 * limit:
        return 0
    opened = text.count("<") - text.count("</")
    return opened if opened > limit else 0


def _parse_page(
    html: str | bytes | DecodedPage,
    encoding: str | None,
    content_type: str | None,
    parser_class: type[lxml.etree.HTMLParser],
    max_elements: int | None = None,
) -> lxml.etree._Element:
    if isinstance(html, DecodedPage):
        text = html.text
    elif isinstance(html, bytes):
        text = decode_html(html, content_type, encoding)
    else:
        text = html
        if looks_binary(text):
            raise PageError("binary", "the page is binary data, not HTML")
    text = _XML_DECLARATION_RE.sub("", text, count=1)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "WAYBACK TOOLBAR INSERT" in text:
        text = _REPLAY_TOOLBAR_RE.sub("", text)
    if not text or text.isspace():
        raise PageError("empty", "the page has no content")
    # Every element starts with "<": a page with fewer is under any element limit.
    if max_elements is not None and opened_tags_over(text, max_elements):
        root = _parse_counting(text, max_elements)
    else:
        root = _parse_text(text, parser_class)
    if root is _TOO_DEEP:
        # libxml2 silently drops what lies deeper than its nesting limit: flatten and retry.
        root = _parse_text(flatten_deep_nesting(text, MAX_NESTING), parser_class)
    if root is None:
        raise PageError("unparseable", "the page cannot be parsed as HTML")
    return root


def _utf8(text: str) -> str | bytes:
    """Return the text as UTF-8 bytes, which libxml2 reads without converting them first."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: let lxml take the string
        return text


_PARSER_OPTIONS: dict[str, Any] = {
    "remove_comments": True,
    "remove_pis": True,
    "huge_tree": True,
    "recover": True,
    "collect_ids": False,  # no id index: nothing looks elements up by id
}


def _parse_text(text: str, parser_class: type[lxml.etree.HTMLParser]) -> lxml.etree._Element | None:
    data = _utf8(text)
    parser = parser_class(encoding="utf-8" if isinstance(data, bytes) else None, **_PARSER_OPTIONS)
    try:
        root = lxml.etree.fromstring(data, parser=parser)
    except (lxml.etree.LxmlError, ValueError) as exc:
        raise PageError("unparseable", f"the page cannot be parsed as HTML: {exc}") from exc
    return _checked_root(root, parser)


def _checked_root(
    root: lxml.etree._Element | None, parser: lxml.etree._FeedParser
) -> lxml.etree._Element | None:
    if any("Excessive depth" in error.message for error in parser.error_log):
        return _TOO_DEEP
    return root


def _parse_counting(text: str, max_elements: int) -> lxml.etree._Element | None:
    """Parse like ``_parse_text``, fed in slices while counting the elements made so far;
    raise ``PageError("too_many_elements")`` once they are over ``max_elements``."""
    data = _utf8(text)
    parser = lxml.etree.HTMLPullParser(
        events=("start",),
        encoding="utf-8" if isinstance(data, bytes) else None,
        **_PARSER_OPTIONS,
    )
    elements = 0
    try:
        for start in range(0, len(data), _COUNTING_SLICE):
            parser.feed(data[start : start + _COUNTING_SLICE])
            elements = _count_elements(parser, elements, max_elements)
        root = parser.close()
    except (lxml.etree.LxmlError, ValueError) as exc:
        raise PageError("unparseable", f"the page cannot be parsed as HTML: {exc}") from exc
    _count_elements(parser, elements, max_elements)
    return _checked_root(root, parser)


def _count_elements(parser: lxml.etree.HTMLPullParser, counted: int, max_elements: int) -> int:
    """Add the elements the parser started since the last count; raise when over the limit."""
    counted += sum(1 for _event in parser.read_events())
    if counted > max_elements:
        raise PageError(
            "too_many_elements",
            f"the page has over {max_elements:,} elements (WEBSIM_MAX_ELEMENTS)",
        )
    return counted


def flatten_deep_nesting(text: str, max_depth: int) -> str:
    """Remove the tags nested deeper than ``max_depth`` (their text stays where it was).

    Linear in the text: tags are searched only up to the last ``>`` (a ``<a x`` that no ``>``
    follows would otherwise make the search scan to the end once per ``<``), and the open
    elements of each name are counted, so a closing tag never scans the stack for its opener.
    """
    pieces: list[str] = []
    stack: list[tuple[str, bool]] = []
    open_names: Counter[str] = Counter()
    position = 0
    for match in _TAG_RE.finditer(text, 0, text.rfind(">") + 1):
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(3)
        keep = True
        if not closing and not self_closing and name not in _VOID_TAGS:
            keep = len(stack) < max_depth
            stack.append((name, keep))
            open_names[name] += 1
        elif closing and open_names[name]:
            while stack:
                open_name, keep = stack.pop()
                open_names[open_name] -= 1
                if open_name == name:
                    break
        if not keep:
            pieces.append(text[position : match.start()])
            position = match.end()
    pieces.append(text[position:])
    return "".join(pieces)
