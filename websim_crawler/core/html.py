"""Decode and parse HTML robustly: any encoding, broken markup, deep nesting, binary guards."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from charset_normalizer import from_bytes
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    to_unicode,
)

from websim_crawler.core.urls import absolute_url
from websim_crawler.errors import PageError

# Elements whose content is never visible text (a noscript may be: see ``remove_invisible``).
INVISIBLE_TAGS = (
    "script",
    "style",
    "template",
    "head",
    "iframe",
    "object",
    "embed",
    "svg",
    "math",
    "canvas",
    "select",
    "option",
    "datalist",
    "textarea",
    "button",
)
_BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b")
_BINARY_TEXT_MAGIC = tuple(magic.decode("latin-1") for magic in _BINARY_MAGIC)
_XML_DECLARATION_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_MAX_REPLACEMENT_RATIO = 0.001
_BROWSER_DEFAULT_ENCODING = "cp1252"
# How sure a decoding is (the ``encoding_confidence`` item field): a BOM or a declaration the
# bytes agree with; detection on a clean text; or doubtful (undecodable bytes or a messy guess).
DECLARED, DETECTED, DOUBTFUL = "declared", "detected", "doubtful"
ENCODING_CONFIDENCES = (DECLARED, DETECTED, DOUBTFUL)
_WIDE_ENCODINGS = frozenset(
    ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
# UTF-16/32 without a BOM: the NUL share of the code-unit bytes that ASCII leaves zero, and the
# most the other byte may have.
_MIN_WIDE_NUL_SHARE = 0.3
_MAX_WIDE_LOW_NUL_SHARE = 0.05
# charset-normalizer's own threshold: a guess messier than this is doubtful.
_MAX_DETECTION_CHAOS = 0.2
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
_SNIFF_BYTES = 4096
_COUNTING_SLICE = 256 * 1024  # characters fed to the parser between two element counts
# The Wayback Machine inserts its replay toolbar (links to the archive, capture dates) between
# these comments in every archived capture it serves; it is not part of the archived page.
_REPLAY_TOOLBAR_RE = re.compile(
    r"<!--\s*BEGIN WAYBACK TOOLBAR INSERT\s*-->.*?<!--\s*END WAYBACK TOOLBAR INSERT\s*-->",
    re.DOTALL,
)
# XPaths are compiled once (``smart_strings=False``: attribute values as plain strings).
# The attributes that hide an element, in document order: libxml2 scans attributes faster than
# it tests a predicate on every element.
_HIDING_ATTRIBUTES_XPATH = lxml.etree.XPath("//@hidden | //@aria-hidden")
# The first match of each in document order: ``/descendant::x[1]`` (unlike ``//x``) lets libxml2
# stop at the first one instead of collecting all of them.
_TITLE_XPATHS = tuple(
    lxml.etree.XPath(expression, smart_strings=False)
    for expression in (
        "/descendant::title[1]",
        "/descendant::meta[@property='og:title'][@content][1]/@content",
        "/descendant::h1[1]",
    )
)
_LANGUAGE_META_XPATH = lxml.etree.XPath("//meta[@http-equiv and @content]")


@dataclass(frozen=True)
class DecodedPage:
    """A page's text, the encoding it was decoded with and how sure that is."""

    text: str
    encoding: str
    confidence: str


def decode_html(data: bytes, content_type: str | None = None, encoding: str | None = None) -> str:
    """Decode page bytes (see ``decode_page``) and return the text; raise ``PageError``."""
    return decode_page(data, content_type, encoding).text


def decode_page(
    data: bytes, content_type: str | None = None, encoding: str | None = None
) -> DecodedPage:
    """Decode page bytes by BOM, header, declared charset or detection, the WHATWG way.

    ``encoding`` overrides the header. A UTF-16/32 header is believed only when the bytes are
    laid out that way (no BOM and ASCII-like bytes: not UTF-16); a ``<meta>`` that names UTF-16
    means UTF-8 (it was read from ASCII-compatible bytes) and one naming UTF-32 is ignored, as
    in browsers. A declared charset that the bytes contradict (many undecodable sequences) is
    overruled by detection (charset-normalizer). Raise ``PageError`` for empty or binary pages.
    """
    if not data or data.isspace():
        raise PageError("empty", "the page has no content")
    bom_encoding, bom = read_bom(data)
    if bom_encoding is not None and bom is not None:
        return DecodedPage(data[len(bom) :].decode(bom_encoding, "replace"), bom_encoding, DECLARED)
    head = data[:_SNIFF_BYTES]
    header = _codec_name(encoding) if encoding else http_content_type_encoding(content_type)
    if header is not None and _codec_name(header) in _WIDE_ENCODINGS:
        layout = _wide_layout(head, 4 if _codec_name(header).startswith("utf-32") else 2)
        if layout is not None:
            return _checked(data.decode(layout, "replace"), layout, DECLARED)
        header = None  # no BOM and ASCII-like bytes: the header is wrong
    if head.lstrip().startswith(_BINARY_MAGIC) or b"\x00" in head:
        raise PageError("binary", "the page is binary data, not HTML")
    declared = header or _meta_encoding(data)
    if declared is not None:
        text = to_unicode(data, declared)
        if not _has_many_replacements(text):
            return _checked(text, declared, DECLARED)
    guess, chaos = _detect_encoding(data)
    detected = _codec_name(guess) if guess else None
    if detected is None:
        return _checked(to_unicode(data, declared or "utf-8"), declared or "utf-8", DOUBTFUL)
    text = data.decode(detected, errors="replace")
    return _checked(text, detected, DETECTED if chaos <= _MAX_DETECTION_CHAOS else DOUBTFUL)


def _codec_name(label: str) -> str:
    """Return Python's name of an encoding label (``UTF16`` -> ``utf-16``), else the label."""
    try:
        return codecs.lookup(label).name
    except LookupError:
        return label.lower()


def _meta_encoding(data: bytes) -> str | None:
    """Return the charset of the page's markup, mapped by the WHATWG prescan rules."""
    declared = html_body_declared_encoding(data)
    if declared is None:
        return None
    name = _codec_name(declared)
    if name.startswith("utf-16"):
        return "utf-8"
    return None if name.startswith("utf-32") else declared


def _wide_layout(head: bytes, width: int) -> str | None:
    """Return ``utf-16-le``/``-be`` (or ``utf-32``) when NUL bytes sit where ASCII code units
    of that width put them, else ``None`` (ASCII-compatible bytes are not UTF-16)."""
    head = head[: len(head) - len(head) % width]
    units = len(head) // width
    if units < 2:
        return None
    nul_share = [head[offset::width].count(0) / units for offset in range(width)]
    family = f"utf-{8 * width}"
    high = nul_share[1:] if width == 4 else nul_share[1:2]
    if min(high) >= _MIN_WIDE_NUL_SHARE and nul_share[0] < _MAX_WIDE_LOW_NUL_SHARE:
        return f"{family}-le"
    low = nul_share[:3] if width == 4 else nul_share[:1]
    if min(low) >= _MIN_WIDE_NUL_SHARE and nul_share[-1] < _MAX_WIDE_LOW_NUL_SHARE:
        return f"{family}-be"
    return None


def _has_many_replacements(text: str) -> bool:
    return "\ufffd" in text and text.count("\ufffd") > _MAX_REPLACEMENT_RATIO * len(text) + 2


def _checked(text: str, encoding: str, confidence: str) -> DecodedPage:
    """Mark a decoding doubtful when replacement characters remain in the text."""
    doubtful = confidence == DOUBTFUL or _has_many_replacements(text)
    return DecodedPage(text, encoding, DOUBTFUL if doubtful else confidence)


def _detect_encoding(data: bytes) -> tuple[str | None, float]:
    """Guess the encoding and its chaos (0 = clean); among equally clean guesses prefer
    windows-1252.

    Short texts often decode without a flaw in several single-byte encodings; browsers fall
    back to windows-1252 for undeclared Western pages (WHATWG Encoding), so it wins ties.
    """
    matches = from_bytes(data[:200_000])
    best = matches.best()
    if best is None:
        return None, 1.0
    for match in matches:
        if match.encoding == _BROWSER_DEFAULT_ENCODING and match.chaos <= best.chaos:
            return _BROWSER_DEFAULT_ENCODING, match.chaos
    return str(best.encoding), best.chaos


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


def parse_document(
    html: str | bytes,
    encoding: str | None = None,
    content_type: str | None = None,
    max_elements: int | None = None,
) -> lxml.etree._Element:
    """Parse a page like ``parse_html`` into plain ``lxml.etree`` elements (faster to walk).

    ``lxml.html`` looks up a Python element class for every element it hands out; the page
    analysis needs none of the ``HtmlElement`` methods. A page with more than ``max_elements``
    elements raises ``PageError("too_many_elements")`` as soon as the parser reaches the one
    over the limit, before the rest of it takes memory.
    """
    return _parse_page(html, encoding, content_type, lxml.etree.HTMLParser, max_elements)


def opened_tags(text: str) -> int:
    """Count the ``<`` of the markup that close nothing: an upper bound on the elements that
    parsing it makes (besides the few a parser adds itself), found at the speed of memory."""
    return text.count("<") - text.count("</")


def _parse_page(
    html: str | bytes,
    encoding: str | None,
    content_type: str | None,
    parser_class: type[lxml.etree.HTMLParser],
    max_elements: int | None = None,
) -> lxml.etree._Element:
    if isinstance(html, bytes):
        text = decode_html(html, content_type, encoding)
    else:
        text = html
        head = text[:_SNIFF_BYTES]
        if "\x00" in head or head.lstrip().startswith(_BINARY_TEXT_MAGIC):
            raise PageError("binary", "the page is binary data, not HTML")
    text = _XML_DECLARATION_RE.sub("", text, count=1)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "WAYBACK TOOLBAR INSERT" in text:
        text = _REPLAY_TOOLBAR_RE.sub("", text)
    if not text or text.isspace():
        raise PageError("empty", "the page has no content")
    # Every element starts with "<": a page with fewer is under any element limit.
    if max_elements is not None and opened_tags(text) > max_elements:
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
    """Remove the tags nested deeper than ``max_depth`` (their text stays where it was)."""
    pieces: list[str] = []
    stack: list[tuple[str, bool]] = []
    position = 0
    for match in _TAG_RE.finditer(text):
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(3)
        keep = True
        if not closing and not self_closing and name not in _VOID_TAGS:
            keep = len(stack) < max_depth
            stack.append((name, keep))
        elif closing and any(open_name == name for open_name, _kept in stack):
            while stack:
                open_name, keep = stack.pop()
                if open_name == name:
                    break
        if not keep:
            pieces.append(text[position : match.start()])
            position = match.end()
    pieces.append(text[position:])
    return "".join(pieces)


def page_title(root: lxml.etree._Element) -> str:
    """Return the page title: ``<title>``, else ``og:title``, else the first ``<h1>``."""
    for xpath in _TITLE_XPATHS:
        found = xpath(root)
        if found:
            value = found[0] if isinstance(found[0], str) else "".join(found[0].itertext())
            title = " ".join(str(value).split())
            if title:
                return title
    return ""


def declared_language(root: lxml.etree._Element) -> str | None:
    """Return the language the page declares (``<html lang>`` or Content-Language meta)."""
    lang = root.get("lang") or root.get("xml:lang")
    if lang:
        return lang
    found = _LANGUAGE_META_XPATH(root)
    for meta in found:
        if meta.get("http-equiv", "").lower() == "content-language":
            return str(meta.get("content"))
    return None


def remove_invisible(root: lxml.etree._Element, noscript_keep_chars: int = 0) -> None:
    """Drop elements that never show text (scripts, styles, head...) and hidden inputs.

    A ``<noscript>`` holding at least ``noscript_keep_chars`` characters of text (0: none) is
    kept: it is the page's content, a script-free copy of a script-rendered post or the rest of
    a page that an unclosed element inside it swallowed (``<noscript><div></noscript>``).
    """
    doomed = [
        element
        for element in root.iter("noscript", "input")
        if element is not root
        and (
            (element.get("type") or "").lower() == "hidden"
            if element.tag == "input"
            else not (
                noscript_keep_chars
                and _text_size(element, noscript_keep_chars) >= noscript_keep_chars
            )
        )
    ]
    hidden = None
    for attribute in _HIDING_ATTRIBUTES_XPATH(root):
        if attribute.attrname == "hidden" or attribute == "true":
            element = attribute.getparent()
            if element is not hidden and element is not root:
                doomed.append(element)
                hidden = element
    # The other invisible elements go in one pass of libxml2, their tails left in place.
    lxml.etree.strip_elements(root, *INVISIBLE_TAGS, with_tail=False)
    for element in doomed:
        parent = element.getparent()
        if parent is not None:
            _drop_keeping_tail(parent, element)


def _text_size(element: lxml.etree._Element, enough: int) -> int:
    """Count an element's characters of text, stopping once there are ``enough``."""
    size = 0
    for text in element.itertext():
        size += len(text)
        if size >= enough:
            break
    return size


def _drop_keeping_tail(parent: lxml.etree._Element, element: lxml.etree._Element) -> None:
    """Remove an element and its content; the text after it stays in place."""
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _document_elements(root: lxml.etree._Element, *tags: str) -> Iterator[lxml.etree._Element]:
    """Iterate the elements with these tags in the root's whole document, in document order
    (one pass of libxml2, like ``//tag``; markup after ``</html>`` can sit beside the root)."""
    for preceding in reversed(list(root.itersiblings(preceding=True))):
        yield from preceding.iter(*tags)
    yield from root.iter(*tags)
    for following in root.itersiblings():
        yield from following.iter(*tags)


def document_base_url(root: lxml.etree._Element, page_url: str | None) -> str:
    """Return the URL a page's relative links resolve against (HTML's document base URL).

    That is the first ``<base href>`` of the document resolved against the page URL, else the
    page URL (``""`` when there is none); a base href that cannot be resolved is ignored.
    """
    base = page_url or ""
    for element in _document_elements(root, "base"):
        href = element.get("href")
        if href is not None:
            try:
                return urljoin(base, href.strip())
            except ValueError:  # an unclosed IPv6 bracket: no usable base
                return base
    return base


def outgoing_links(root: lxml.etree._Element, base_url: str | None) -> list[str]:
    """Return the page's absolute http(s) link targets, in order, without fragments or repeats.

    Each ``<a>``/``<area>`` href is resolved by ``core.urls.absolute_url`` against
    ``document_base_url``, as the crawl resolves the links it follows.
    """
    base = document_base_url(root, base_url)
    seen: dict[str, None] = {}
    for element in _document_elements(root, "a", "area"):
        href = element.get("href")
        if href is not None:
            absolute = absolute_url(href, base)
            if absolute is not None:
                seen.setdefault(absolute, None)
    return list(seen)
