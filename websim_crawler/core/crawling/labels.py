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
    """Score how plainly an element says "next page": its label, title, class or number."""
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
    if label == str(page_number + 1):
        return 3.0
    return 0.0


def is_pager_label(label: str) -> bool:
    """Tell whether a link label belongs to a pager: a page number, arrows, "Next", "Previous"."""
    words = _strip_edges(label)
    return (bool(label) and not words) or words.isdigit() or words in _PAGER_WORDS
