"""The words of pagers: how plainly a link or a control says "next page", and pager labels.

Many languages, arrows and page numbers; the result-page navigation and the record links read it.
"""

from __future__ import annotations

from lxml import etree

_NEXT_WORDS = frozenset(
    {
        "next", "next page", "next results", "more", "more results", "older", "older posts",
        "weiter", "nächste", "nächste seite", "suivant", "page suivante", "siguiente",
        "successivo", "volgende", "próxima", "下一页", "下一頁", "次へ", "次のページ", "다음",
    }
)  # fmt: skip
_PAGER_WORDS = _NEXT_WORDS | {
    "previous", "prev", "previous page", "back", "newer", "first", "last", "first page",
    "last page", "zurück", "précédent", "anterior", "上一页", "前へ",
}  # fmt: skip
_NEXT_ARROWS = {"›": 5.0, ">": 5.0, "→": 5.0, "»": 4.0, ">>": 4.0, "⟩": 5.0}
_EDGE_MARKS = frozenset("«»‹›<>→←|.:…-")


def _strip_edges(label: str) -> str:
    """Strip white space, arrows and punctuation from both ends, in one pass over each end (a
    regular expression anchored at the end retries from every character of a long run)."""
    start, end = 0, len(label)
    while start < end and (label[start].isspace() or label[start] in _EDGE_MARKS):
        start += 1
    while end > start and (label[end - 1].isspace() or label[end - 1] in _EDGE_MARKS):
        end -= 1
    return label[start:end]


def next_label_score(element: etree._Element, page_number: int) -> float:
    """Score how plainly an element says "next page": its label, title, class, or its number
    when it stands in a run of page numbers (``in_pager_run``)."""
    label = " ".join(" ".join(element.itertext()).split()).lower() or (
        (element.get("value") or "").strip().lower() if element.tag == "input" else ""
    )
    described = " ".join((element.get("title") or "", element.get("aria-label") or "")).lower()
    words = _strip_edges(label)
    if words in _NEXT_WORDS or _strip_edges(described) in _NEXT_WORDS:
        return 8.0
    if "next" in (element.get("class") or "").lower():
        return 6.0
    if label in _NEXT_ARROWS:
        return _NEXT_ARROWS[label]
    if label == str(page_number + 1) and in_pager_run(element):
        return 3.0
    return 0.0


def pager_label_kind(label: str) -> str | None:
    """Say what a pager label is: ``number`` ("2"), ``control`` ("Next", "« Previous", "›"), or
    ``None``. Alone it proves nothing (a record may be labelled "2"): see ``in_pager_run``."""
    words = page_label_words(label)
    if words.isascii() and words.isdigit():
        return "number"
    if (label and not words) or words in _PAGER_WORDS:
        return "control"
    return None


def page_label_words(label: str) -> str:
    """Return a label without the arrows, bars and dots around it ("‹ 2 ›" -> "2")."""
    return _strip_edges(label)


_RUN_CHILDREN_CAP = 100  # children of a pager container that are read
PAGER_LABEL_CAP = 40  # characters: a longer text is no pager label


def _short_label(element: etree._Element) -> str:
    """Return an element's folded text if it is short enough to be a pager label, else ``""``."""
    pieces: list[str] = []
    length = 0
    for piece in element.itertext():
        length += len(piece)
        if length > PAGER_LABEL_CAP * 4:  # white space of indented markup included
            return ""
        pieces.append(piece)
    label = " ".join(" ".join(pieces).split()).lower()
    return label if len(label) <= PAGER_LABEL_CAP else ""


def in_pager_run(element: etree._Element) -> bool:
    """Tell whether a page-number element sits in a pager: beside another page number (a link
    or the current page, marked as text) or a next/previous control, in the same container.

    A lone number is a label, not a pager: a table row's link to record "17" is no page 17.
    """
    container = element.getparent()
    for _ in range(3):  # climb out of wrappers holding only this element (li > a, span > a)
        if container is None:
            return False
        if len(container) > 1:
            break
        container = container.getparent()
    if container is None:
        return False
    numbers = controls = 0
    for position, child in enumerate(container):
        if position >= _RUN_CHILDREN_CAP:
            break
        if not isinstance(child.tag, str):
            continue
        kind = pager_label_kind(_short_label(child))
        numbers += kind == "number"
        controls += kind == "control"
    return numbers >= 2 or (numbers >= 1 and controls >= 1)
