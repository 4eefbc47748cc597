"""Drop what a browser never shows: scripts, styles, hidden elements and inputs."""

from __future__ import annotations

import lxml.etree

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
# XPaths are compiled once (``smart_strings=False``: attribute values as plain strings).
# The attributes that hide an element, in document order: libxml2 scans attributes faster than
# it tests a predicate on every element.
_HIDING_ATTRIBUTES_XPATH = lxml.etree.XPath("//@hidden | //@aria-hidden")


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


# Elements whose text a reader of the page never sees, for ``visible_text`` (which reads the
# tree as it is, without removing anything).
_NOT_READ_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title"})


def visible_text(
    root: lxml.etree._Element, max_chars: int = 20_000, max_elements: int = 20_000
) -> str:
    """Return the start of a page's visible text (scripts, styles and the head left out),
    whitespace collapsed: at most ``max_chars`` characters from at most ``max_elements``
    elements, so a huge page costs no more than a small one. The tree is not changed."""
    pieces: list[str] = []
    length = 0
    hidden: set[lxml.etree._Element] = set()
    for visited, element in enumerate(root.iter()):
        if visited >= max_elements or length >= max_chars:
            break
        parent = element.getparent()
        if not isinstance(element.tag, str) or element.tag in _NOT_READ_TAGS or parent in hidden:
            hidden.add(element)
        tail_shown = parent is None or parent not in hidden
        for piece in (
            None if element in hidden else element.text,
            element.tail if tail_shown else None,
        ):
            if piece and piece.strip():
                pieces.append(piece.strip())
                length += len(pieces[-1])
    return " ".join(" ".join(pieces).split())[:max_chars]
