"""DIV chunk segmentation (VDEC phase 1): a tree of main chunks and leaf chunks (sub-chunks).

A ``<div>`` that holds other containers is a main chunk; one that holds none is a leaf chunk.
HTML5 sections (``main``, ``article``, ``section``, ``aside``, ``header``, ``footer``, ``nav``),
table cells, lists and forms are containers too, so pages laid out without divs still segment.
Text that sits in a main chunk outside its child containers (including text outside any div)
becomes a ``loose-text`` leaf at its place in the document, so no visible text is lost.
The walk is iterative: 5,000-deep nesting needs no recursion.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

import lxml.etree

# Container tag -> the rule that makes it a chunk.
CONTAINER_RULES = {
    "div": "div",
    "main": "html5",
    "article": "html5",
    "section": "html5",
    "aside": "html5",
    "header": "html5",
    "footer": "html5",
    "nav": "html5",
    "td": "table-cell",
    "th": "table-cell",
    "ul": "list",
    "ol": "list",
    "dl": "list",
    "form": "form",
}
# Elements that break lines when rendered; their boundaries separate words and paragraphs.
BLOCK_TAGS = frozenset(
    {
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "dt",
        "dd",
        "tr",
        "br",
        "hr",
        "blockquote",
        "pre",
        "table",
        "caption",
        "figure",
        "figcaption",
        "address",
        "center",
        "fieldset",
        "legend",
        "details",
        "summary",
        "body",
    }
    | set(CONTAINER_RULES)
)
IMAGE_TAGS = frozenset({"img", "picture", "image"})
# Words of class/id names and ARIA roles that mark page furniture rather than content.
BOILERPLATE_WORDS = frozenset(
    [
        "ad",
        "ads",
        "advert",
        "advertisement",
        "author",
        "banner",
        "breadcrumb",
        "breadcrumbs",
        "byline",
        "caption",
        "copyright",
        "credit",
        "credits",
        "date",
        "timestamp",
        "comment",
        "comments",
        "complementary",
        "consent",
        "contentinfo",
        "cookie",
        "cookies",
        "dateline",
        "disqus",
        "footer",
        "kommentar",
        "kommentare",
        "masthead",
        "menu",
        "meta",
        "modal",
        "nav",
        "navbar",
        "navigation",
        "newsletter",
        "pagination",
        "popular",
        "popup",
        "promo",
        "recommended",
        "related",
        "reply",
        "respond",
        "share",
        "sharedaddy",
        "sharing",
        "sidebar",
        "signup",
        "social",
        "sponsored",
        "subscribe",
        "tags",
        "toolbar",
        "trending",
        "widget",
        "widgets",
    ]
)
# Furniture words no content wrapper is named after: their hint holds whatever the size.
STRONG_BOILERPLATE_WORDS = frozenset(
    ["comment", "comments", "disqus", "kommentar", "kommentare", "reply", "respond"]
)
# Class names made only of these words mark content, which no boilerplate class overrules.
CONTENT_WORDS = frozenset(["article", "body", "content", "entry", "main", "post", "story", "text"])
BOILERPLATE_TAGS = frozenset({"nav", "aside", "footer"})
_NAME_WORD_RE = re.compile(r"[a-z]+|[A-Z][a-z]*")


def _trie_pattern(words: Iterable[str]) -> str:
    """Return a regex matching any of the words that branches once per letter (a trie), which
    ``re`` scans several times faster than a plain alternation of the words."""
    rests: dict[str, list[str]] = {}
    ends = False
    for word in words:
        if word:
            rests.setdefault(word[0], []).append(word[1:])
        else:
            ends = True
    if not rests:
        return ""
    branches = [re.escape(letter) + _trie_pattern(rest) for letter, rest in sorted(rests.items())]
    pattern = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return f"(?:{pattern})?" if ends else pattern


# Any furniture or content word inside a lower-cased class/id string (a superset test).
_NAME_CANDIDATE_RE = re.compile(_trie_pattern(BOILERPLATE_WORDS | CONTENT_WORDS))
# Runs of white space ([ \t\n\r\f\v\u00a0\u200b]) that collapse to one space, except a lone
# plain space: it would be replaced by itself, and it is most of the gaps between words.
_SPACE_RE = re.compile(
    r"[\t\n\r\f\v\u00a0\u200b][ \t\n\r\f\v\u00a0\u200b]*| [ \t\n\r\f\v\u00a0\u200b]+"
)
_BOX_RE = re.compile(r"^\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*$")


# Flags of a piece of text: inside a hyperlink, a heading, inline furniture, a caption.
LINK, HEADING, FURNITURE, CAPTION = 1, 2, 4, 8
HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
CAPTION_TAGS = frozenset({"figcaption", "caption"})
INLINE_FURNITURE_TAGS = frozenset({"time"})
# Separates the blocks of a segment's text (the parser drops NUL characters from pages).
BREAK = "\x00"

# What the walk does with an element, by tag, as bits (one dictionary lookup per element).
_CONTAINER, _BLOCK, _IMAGE, _IMAGE_INPUT, _TITLE_HEADING = 16, 32, 64, 128, 256
_KIND: dict[object, int] = {}
for _tag in BLOCK_TAGS:
    _KIND[_tag] = _BLOCK
for _tag in CONTAINER_RULES:
    _KIND[_tag] = _CONTAINER
for _tag in IMAGE_TAGS:
    _KIND[_tag] = _IMAGE
for _tag in HEADING_TAGS:
    _KIND[_tag] |= HEADING
for _tag in ("h1", "h2", "h3"):
    _KIND[_tag] |= _TITLE_HEADING
for _tag in CAPTION_TAGS:
    _KIND[_tag] |= CAPTION
for _tag in INLINE_FURNITURE_TAGS:
    _KIND[_tag] = _KIND.get(_tag, 0) | FURNITURE
_KIND["a"] = LINK
_KIND["input"] = _IMAGE_INPUT
_INLINE_FLAGS = LINK | HEADING | FURNITURE | CAPTION


class Line(NamedTuple):
    """One rendered line (block) of a chunk with the shares of its characters by kind."""

    text: str
    link_share: float
    furniture_share: float
    caption_share: float
    heading: bool


class Segment:
    """A node of the chunk tree: a container or a loose-text run (a leaf has no children).

    Its own text is kept as ``texts`` (strings, ``BREAK`` between blocks) plus ``flagged``:
    index into ``texts``, flags, index, flags... of the pieces inside links, headings, furniture
    or captions (pairs laid out flat). What a segment does not hold is an empty tuple rather than
    a list of its own: fewer objects for the garbage collector to track.
    """

    __slots__ = (
        "_lines",
        "boilerplate_hint",
        "box",
        "children",
        "chunk_id",
        "content_named",
        "depth",
        "flagged",
        "heading",
        "n_images",
        "parent_id",
        "rule",
        "tag",
        "texts",
    )

    def __init__(
        self,
        chunk_id: str,
        rule: str,
        tag: str,
        depth: int,
        parent_id: str | None,
        box: tuple[float, float, float, float] | None = None,
        boilerplate_hint: str = "",
        children: Sequence[Segment] = (),
    ) -> None:
        self.chunk_id = chunk_id
        self.rule = rule
        self.tag = tag
        self.depth = depth
        self.parent_id = parent_id
        self.box = box
        self.boilerplate_hint = boilerplate_hint
        self.content_named = False  # a class/id made only of content words (main-story)
        self.texts: Sequence[str] = ()
        self.flagged: Sequence[int] = ()
        self.n_images = 0
        self.children = children
        self.heading = False
        self._lines: tuple[Line, ...] | None = None

    def __repr__(self) -> str:
        return f"Segment({self.chunk_id!r}, {self.rule!r}, children={len(self.children)})"

    @property
    def lines(self) -> tuple[Line, ...]:
        """Return the segment's own lines (one per block), spaces collapsed, blanks dropped."""
        if self._lines is None:
            self._lines = _build_lines(self.texts, self.flagged)
        return self._lines

    @property
    def text(self) -> str:
        """Return the segment's own text, one line per block, spaces collapsed."""
        if self._lines is not None:
            return "\n".join(line.text for line in self._lines)
        # The lines' texts without their shares (most chunks never need the shares).
        if not self.texts:
            return ""
        raw_lines = _SPACE_RE.sub(" ", "".join(self.texts)).split(BREAK)
        if len(raw_lines) == 1:
            return raw_lines[0].strip()
        return "\n".join([line for raw in raw_lines if (line := raw.strip())])

    @property
    def has_links(self) -> bool:
        """Tell whether any of the segment's own text is inside a hyperlink."""
        return any(flags & LINK for flags in self.flagged[1::2])

    @property
    def link_text(self) -> str:
        """Return the text of the segment's own hyperlinks (white space as in the page)."""
        texts = self.texts
        flagged = self.flagged
        pieces = zip(flagged[::2], flagged[1::2], strict=True)
        return " ".join([texts[index] for index, flags in pieces if flags & LINK])


def _build_lines(texts: Sequence[str], flagged: Sequence[int]) -> tuple[Line, ...]:
    raw_lines = "".join(texts).split(BREAK)
    if not flagged:  # plain text
        return tuple(
            Line(line, 0.0, 0.0, 0.0, False)
            for raw in raw_lines
            if (line := _SPACE_RE.sub(" ", raw).strip())
        )
    # Characters of each raw line inside links, furniture, captions; headings.
    breaks = (
        [index for index, text in enumerate(texts) if text == BREAK] if len(raw_lines) > 1 else []
    )
    counts = [[0, 0, 0, False] for _raw in raw_lines]
    for index, flags in zip(flagged[::2], flagged[1::2], strict=True):
        size = len(texts[index])
        count = counts[bisect_left(breaks, index)]
        if flags & LINK:
            count[0] += size
        if flags & FURNITURE:
            count[1] += size
        if flags & CAPTION:
            count[2] += size
        if flags & HEADING:
            count[3] = True
    lines: list[Line] = []
    for raw, (link, furniture, caption, heading) in zip(raw_lines, counts, strict=True):
        line = _SPACE_RE.sub(" ", raw).strip()
        if not line:
            continue
        if link or furniture or caption:
            scale = 1.0 / len(raw)
            lines.append(
                Line(line, link * scale, furniture * scale, caption * scale, bool(heading))
            )
        else:
            lines.append(Line(line, 0.0, 0.0, 0.0, bool(heading)))
    return tuple(lines)


def boilerplate_hint(element: lxml.etree._Element, tag: str) -> str:
    """Return why the markup marks an element as page furniture (tag, role, class/id), or ""."""
    if tag in BOILERPLATE_TAGS:
        return tag
    return _attribute_hint(element.get("role"), element.get("class"), element.get("id"))


def content_named(element: lxml.etree._Element) -> bool:
    """Tell whether a class or the id of an element is made only of content words."""
    return _content_named(element.get("class"), element.get("id"))


def _content_named(classes: str | None, identifier: str | None) -> bool:
    return bool(
        (classes and _names_words(classes)[0]) or (identifier and _names_words(identifier)[0])
    )


@lru_cache(maxsize=65_536)  # pages repeat their class names: one C lookup per element
def _attribute_hint(role: str | None, classes: str | None, identifier: str | None) -> str:
    """Return the furniture word of a role or the class/id names, "" when none or a name marks
    content."""
    if role:
        lowered = role.lower()
        if lowered in BOILERPLATE_WORDS:
            return lowered
    class_content, class_found = _names_words(classes) if classes else (False, "")
    if class_content:
        return ""
    if not identifier:
        return class_found
    id_content, id_found = _names_words(identifier)
    return "" if id_content else class_found or id_found


@lru_cache(maxsize=65_536)
def _names_words(names: str) -> tuple[bool, str]:
    """Return whether a name of ``names`` is made only of content words, and the furniture
    word of the first name holding one."""
    if not _NAME_CANDIDATE_RE.search(names.lower()):
        return False, ""  # no furniture or content word anywhere: the common case
    found = ""
    for name in names.split():
        words = set(map(str.lower, _NAME_WORD_RE.findall(name)))
        if words and words <= CONTENT_WORDS:
            return True, ""
        if not found:
            furniture = words & BOILERPLATE_WORDS
            if furniture:
                found = min(furniture)  # the first in alphabetical order
    return False, found


def child_id(parent: Segment, number: int) -> str:
    """Name chunks as the paper does: C1..Cn under the page, C2.1.. under C2."""
    return f"C{number}" if parent.parent_id is None else f"{parent.chunk_id}.{number}"


def parse_box(value: str | None) -> tuple[float, float, float, float] | None:
    """Parse a ``data-websim-box="x,y,w,h"`` attribute written by the rendering crawl."""
    if not value:
        return None
    match = _BOX_RE.match(value)
    if not match:
        return None
    x, y, width, height = (float(group) for group in match.groups())
    return (x, y, width, height)


def _open_run(container: Segment, children: list[Segment], texts: list[str]) -> Segment:
    """Open a loose-text run in a container (``children`` is its list): text beside its child
    containers, whose pieces go to ``texts``."""
    run = Segment(
        child_id(container, len(children) + 1),
        "loose-text",
        container.tag,
        container.depth + 1,
        container.chunk_id,
        container.box,
    )
    run.texts = texts
    children.append(run)
    return run


def _close(container: Segment) -> None:
    children = container.children
    if len(children) == 1 and children[0].rule == "loose-text":
        # A container with only its own text is itself the leaf chunk.
        run = children[0]
        container.texts, container.flagged = run.texts, run.flagged
        container.n_images, container.heading = run.n_images, run.heading
        container.children = ()
    if container.rule == "div":
        container.rule = "div-main" if container.children else "div-leaf"


def segment_page(root: lxml.etree._Element) -> Segment:
    """Segment a cleaned page tree (see ``html.remove_invisible``) into a chunk tree.

    One pass of ``iterwalk`` over the tree; each element costs one lookup of its tag's kind,
    kept on a stack for its end event. Text goes to the open run of the innermost container:
    entering a child container closes it, so there is at most one open run at a time.
    """
    body = root.find("body")
    if body is None:
        body = root
    children: list[Segment] = []  # the innermost container's
    box = parse_box(body.get("data-websim-box"))
    tree = Segment("C0", "body", "body", 0, None, box, children=children)
    stack = [(tree, children)]
    container = tree
    run: Segment | None = None  # the open loose-text run, its texts and flagged pieces
    texts: list[str] = []
    flagged: list[int] = []
    flags = 0
    kind_of = _KIND.get
    kinds = [kind_of(body.tag, 0)]  # the kind of each element entered and not yet left
    entered: list[tuple[lxml.etree._Element, int]] = []  # (element, flags before it)
    events = lxml.etree.iterwalk(body, events=("start", "end"))
    next(events)  # the body itself
    text = body.text
    if text and not text.isspace():
        texts = [text]
        run = _open_run(tree, children, texts)
    for event, element in events:
        if event == "start":
            tag = element.tag
            kind = kind_of(tag, 0)
            kinds.append(kind)
            classes, identifier = element.get("class"), element.get("id")
            if kind & _CONTAINER:
                run = None  # text after this container starts a new run
                role, box = element.get("role"), element.get("data-websim-box")
                if tag in BOILERPLATE_TAGS:
                    hint = tag
                elif role or classes or identifier:
                    hint = _attribute_hint(role, classes, identifier)
                else:
                    hint = ""
                inner: list[Segment] = []
                segment = Segment(
                    child_id(container, len(children) + 1),
                    CONTAINER_RULES[tag],
                    tag,
                    container.depth + 1,
                    container.chunk_id,
                    (box and parse_box(box)) or container.box,
                    hint,
                    inner,
                )
                if not hint and (classes or identifier):
                    segment.content_named = _content_named(classes, identifier)
                children.append(segment)
                container, children = segment, inner
                stack.append((segment, inner))
            else:
                if kind & _BLOCK and run is not None:
                    texts.append(BREAK)
                added = kind & _INLINE_FLAGS
                if (
                    (classes or identifier)
                    and type(tag) is str
                    and _attribute_hint(element.get("role"), classes, identifier)
                ):
                    added |= FURNITURE
                if added:
                    entered.append((element, flags))
                    flags |= added
                if kind & (_IMAGE | _TITLE_HEADING) or (
                    kind & _IMAGE_INPUT and element.get("type") == "image"
                ):
                    if run is None:
                        texts = []
                        run = _open_run(container, children, texts)
                    if kind & _TITLE_HEADING:
                        run.heading = True
                    else:
                        run.n_images += 1
            text = element.text
        else:
            kind = kinds.pop()
            if entered and entered[-1][0] is element:
                flags = entered.pop()[1]
            if kind & _CONTAINER:
                _close(stack.pop()[0])
                container, children = stack[-1]
                run = None  # the container's run closed when the child container began
            elif kind & _BLOCK and run is not None:
                texts.append(BREAK)
            text = element.tail
        if text:
            if run is None:
                if text.isspace():
                    continue  # white space between containers opens no chunk
                texts = []
                run = _open_run(container, children, texts)
            if flags:
                if not run.flagged:
                    flagged = []
                    run.flagged = flagged
                flagged.extend((len(texts), flags))
            texts.append(text)
    for open_container, _children in reversed(stack[1:]):
        _close(open_container)
    return tree
