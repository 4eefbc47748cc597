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
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import lxml.etree
import lxml.html

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
_SPACE_RE = re.compile(r"[ \t\r\f\v\u00a0\u200b]+")
_BOX_RE = re.compile(r"^\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*$")


# Flags of a piece of text: inside a hyperlink, a heading, inline furniture, a caption.
LINK, HEADING, FURNITURE, CAPTION = 1, 2, 4, 8
HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
CAPTION_TAGS = frozenset({"figcaption", "caption"})
INLINE_FURNITURE_TAGS = frozenset({"time"})
_BREAK = ("\n", 0)


@dataclass(frozen=True)
class Line:
    """One rendered line (block) of a chunk with the shares of its characters by kind."""

    text: str
    link_share: float
    furniture_share: float
    caption_share: float
    heading: bool


@dataclass
class Segment:
    """A node of the chunk tree while it is built: a container or a loose-text run."""

    chunk_id: str
    rule: str
    tag: str
    depth: int
    parent_id: str | None
    pieces: list[tuple[str, int]] = field(default_factory=list)
    n_images: int = 0
    children: list[Segment] = field(default_factory=list)
    box: tuple[float, float, float, float] | None = None
    heading: bool = False
    boilerplate_hint: str = ""

    @property
    def is_leaf(self) -> bool:
        """Tell whether this segment holds no child chunk."""
        return not self.children

    @cached_property
    def lines(self) -> tuple[Line, ...]:
        """Return the segment's own lines (one per block), spaces collapsed, blanks dropped."""
        lines: list[Line] = []
        parts: list[str] = []
        total = link = furniture = caption = 0
        heading = False
        for text, flags in (*self.pieces, _BREAK):
            if flags or text != "\n":
                parts.append(text)
                size = len(text)
                total += size
                if flags:
                    link += size if flags & LINK else 0
                    furniture += size if flags & FURNITURE else 0
                    caption += size if flags & CAPTION else 0
                    heading = heading or bool(flags & HEADING)
                continue
            line = _SPACE_RE.sub(" ", "".join(parts)).strip()
            if line:
                scale = 1.0 / total
                lines.append(Line(line, link * scale, furniture * scale, caption * scale, heading))
            parts, total, link, furniture, caption, heading = [], 0, 0, 0, 0, False
        return tuple(lines)

    @property
    def text(self) -> str:
        """Return the segment's own text, one line per block, spaces collapsed."""
        return "\n".join(line.text for line in self.lines)

    @property
    def link_text(self) -> str:
        """Return the text of the segment's own hyperlinks."""
        return clean_text(" ".join(text for text, flags in self.pieces if flags & LINK))


def clean_text(raw: str) -> str:
    """Collapse spaces within lines and drop blank lines."""
    lines = (_SPACE_RE.sub(" ", line).strip() for line in raw.split("\n"))
    return "\n".join(line for line in lines if line)


def boilerplate_hint(element: lxml.html.HtmlElement, tag: str) -> str:
    """Return why the markup marks an element as page furniture (tag, role, class/id), or ""."""
    if tag in BOILERPLATE_TAGS:
        return tag
    role = element.get("role")
    if role and role.lower() in BOILERPLATE_WORDS:
        return role.lower()
    classes, identifier = element.get("class"), element.get("id")
    if not classes and not identifier:
        return ""
    return _names_hint(classes or "", identifier or "")


@lru_cache(maxsize=65_536)
def _names_hint(classes: str, identifier: str) -> str:
    """Return the furniture word of class/id names, "" when none or a name marks content."""
    found = ""
    for name in f"{classes} {identifier}".split():
        words = {word.lower() for word in _NAME_WORD_RE.findall(name)}
        if words and words <= CONTENT_WORDS:
            return ""
        if not found:
            found = next((word for word in sorted(words) if word in BOILERPLATE_WORDS), "")
    return found


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


class _Builder:
    def __init__(self, body: lxml.html.HtmlElement) -> None:
        self.root = Segment(
            "C0", "body", "body", 0, None, box=parse_box(body.get("data-websim-box"))
        )
        self.stack: list[Segment] = [self.root]
        self.runs: dict[str, Segment] = {}
        self.flags = 0
        self.depths = {LINK: 0, HEADING: 0, FURNITURE: 0, CAPTION: 0}

    def enter(self, flag: int) -> None:
        self.depths[flag] += 1
        self.flags |= flag

    def leave(self, flag: int) -> None:
        self.depths[flag] -= 1
        if not self.depths[flag]:
            self.flags &= ~flag

    def _current_run(self) -> Segment:
        """Return the open loose-text run of the innermost container, opening one if needed."""
        container = self.stack[-1]
        run = self.runs.get(container.chunk_id)
        if run is None:
            run = Segment(
                chunk_id=child_id(container, len(container.children) + 1),
                rule="loose-text",
                tag=container.tag,
                depth=container.depth + 1,
                parent_id=container.chunk_id,
                box=container.box,
            )
            container.children.append(run)
            self.runs[container.chunk_id] = run
        return run

    def add_text(self, text: str | None) -> None:
        if not text:
            return
        if not text.strip() and self.stack[-1].chunk_id not in self.runs:
            return  # white space between containers opens no chunk
        # Source line breaks are spaces; blocks break lines.
        self._current_run().pieces.append((text.replace("\n", " "), self.flags))

    def add_break(self) -> None:
        container = self.stack[-1]
        run = self.runs.get(container.chunk_id)
        if run is not None:
            run.pieces.append(_BREAK)

    def open_container(self, element: lxml.html.HtmlElement, tag: str) -> None:
        parent = self.stack[-1]
        self.runs.pop(parent.chunk_id, None)  # text after this container starts a new run
        rule = CONTAINER_RULES[tag]
        segment = Segment(
            chunk_id=child_id(parent, len(parent.children) + 1),
            rule=rule,
            tag=tag,
            depth=parent.depth + 1,
            parent_id=parent.chunk_id,
            box=parse_box(element.get("data-websim-box")) or parent.box,
            boilerplate_hint=boilerplate_hint(element, tag),
        )
        parent.children.append(segment)
        self.stack.append(segment)

    def close_container(self) -> None:
        closed = self.stack.pop()
        run = self.runs.pop(closed.chunk_id, None)
        if run is not None and len(closed.children) == 1 and closed.children[0] is run:
            # A container with only its own text is itself the leaf chunk.
            closed.pieces = run.pieces
            closed.n_images, closed.heading = run.n_images, run.heading
            closed.children = []
        if closed.rule == "div" and closed.children:
            closed.rule = "div-main"
        elif closed.rule == "div":
            closed.rule = "div-leaf"


def _inline_flags(element: lxml.html.HtmlElement, tag: str) -> int:
    """Return the flags an element that is not a chunk gives the text inside it."""
    flags = 0
    if tag == "a":
        flags |= LINK
    if tag in HEADING_TAGS:
        flags |= HEADING
    if tag in CAPTION_TAGS:
        flags |= CAPTION
    if tag in INLINE_FURNITURE_TAGS or (
        (element.get("class") or element.get("id")) and boilerplate_hint(element, tag)
    ):
        flags |= FURNITURE
    return flags


def segment_page(root: lxml.html.HtmlElement) -> Segment:
    """Segment a cleaned page tree (see ``html.remove_invisible``) into a chunk tree."""
    body = root.find("body")
    if body is None:
        body = root
    builder = _Builder(body)
    entered: list[tuple[lxml.html.HtmlElement, int]] = []
    for event, element in lxml.etree.iterwalk(body, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""  # the parser lower-cases
        if event == "start":
            if element is body:
                builder.add_text(element.text)
                continue
            if tag in CONTAINER_RULES:
                builder.open_container(element, tag)
            else:
                if tag in BLOCK_TAGS:
                    builder.add_break()
                flags = _inline_flags(element, tag)
                if flags:
                    entered.append((element, flags))
                    for flag in (LINK, HEADING, FURNITURE, CAPTION):
                        if flags & flag:
                            builder.enter(flag)
            if tag in IMAGE_TAGS or (tag == "input" and element.get("type") == "image"):
                builder._current_run().n_images += 1
            if tag in ("h1", "h2", "h3"):
                builder._current_run().heading = True
            builder.add_text(element.text)
        else:
            if element is body:
                continue
            if entered and entered[-1][0] is element:
                flags = entered.pop()[1]
                for flag in (LINK, HEADING, FURNITURE, CAPTION):
                    if flags & flag:
                        builder.leave(flag)
            if tag in CONTAINER_RULES:
                builder.close_container()
            elif tag in BLOCK_TAGS:
                builder.add_break()
            builder.add_text(element.tail)
    while len(builder.stack) > 1:
        builder.close_container()
    return builder.root
