"""A result page that says it found nothing ("No results", "Nothing was found").

Search applications answer an empty query, or a pager followed past the last result, with a
page saying so; such a page is counted as an empty result page, not as a page whose records
were missed. The words are read from the page's visible text outside its scripts and styles,
at most ``_TEXT_CAP`` characters of it, in a few languages.
"""

from __future__ import annotations

import re

from lxml import etree

_TEXT_CAP = 20_000  # characters of a page's text read for the words
_ELEMENT_CAP = 20_000  # elements of a page read for its text
_NOT_TEXT = frozenset({"script", "style", "noscript", "template", "head", "title"})
_NO_RESULTS = re.compile(
    r"\b(?:no (?:search )?(?:results?|matches|matching (?:pages|documents|records|entries|items)"
    r"|(?:pages|documents|records|entries|items|hits) (?:were )?found)"
    r"|(?:there (?:were|are) )?no results? (?:matching|for|found)"
    r"|nothing (?:was |has been )?found|found nothing|did not match any|didn't match any"
    r"|0 (?:results|matches|hits|records|documents)|zero results"
    r"|keine (?:treffer|ergebnisse)|aucun résultat|ningún resultado|sin resultados"
    r"|nessun risultato|geen resultaten|nenhum resultado)\b",
    re.IGNORECASE,
)


def says_no_results(root: etree._Element) -> bool:
    """Tell whether a page's visible text says its search found nothing."""
    pieces: list[str] = []
    length = 0
    hidden: set[etree._Element] = set()
    for visited, element in enumerate(root.iter()):
        if visited >= _ELEMENT_CAP or length >= _TEXT_CAP:
            break
        parent = element.getparent()
        if not isinstance(element.tag, str) or element.tag in _NOT_TEXT or parent in hidden:
            hidden.add(element)
        tail_shown = parent is None or parent not in hidden
        for piece in (
            None if element in hidden else element.text,
            element.tail if tail_shown else None,
        ):
            if piece and piece.strip():
                pieces.append(piece.strip())
                length += len(pieces[-1])
    return _NO_RESULTS.search(" ".join(" ".join(pieces).split())[:_TEXT_CAP]) is not None
