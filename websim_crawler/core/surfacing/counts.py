"""What a result page says about its own size: "Showing 11-20 of the first 50 of 137 results".

Pure: reads the visible text of an ``lxml.html`` tree. Search applications word it in many ways
(Django's admin "13 results (360 total)", MediaWiki's "Results 1 - 20 of 45", Sphinx's "found
13 pages", German "Treffer 1-10 von 137"); the first statement found in document order wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from websim_crawler.core.html import visible_text
from websim_crawler.core.surfacing.answers import EventCounts

_TEXT_CHARS = 20_000  # characters of a page's visible text looked at (counts sit near the top)
_NUMBER = r"(\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+|\d+)"
_UNITS = (
    r"(?:results?|matches|match|hits?|records?|items?|entries|entry|documents?|pages?|rows?|"
    r"articles?|titles?|books?|Treffer|Ergebnisse|Ergebnissen|Einträge|Datensätze|résultats?|"
    r"resultados?|risultati)"
)
_RANGE = re.compile(
    _NUMBER + r"\s*(?:-|–|—|to|bis|à|a)\s*" + _NUMBER + r"\s+(?:of|von|sur|de|di)\s+"
    r"(?:(?:the\s+)?(?:first|top|ersten)\s+" + _NUMBER + r"\s+(?:of|von|sur|de)\s+)?"
    r"(?:about\s+|approximately\s+|ca\.\s+|etwa\s+|environ\s+)?" + _NUMBER,
    re.IGNORECASE,
)
_FIRST_OF = re.compile(
    r"(?:first|top|ersten)\s+" + _NUMBER + r"\s+(?:of|von|sur|de)\s+(?:about\s+)?" + _NUMBER,
    re.IGNORECASE,
)
_TOTAL = re.compile(r"\(\s*" + _NUMBER + r"\s+(?:total|in all|insgesamt|au total)\s*\)", re.I)
_COUNT = re.compile(
    r"(?<![\w\-–])(?:about\s+|found\s+|of\s+|von\s+|approximately\s+)?" + _NUMBER + r"\s+" + _UNITS
    + r"\b",
    re.IGNORECASE,
)  # fmt: skip


@dataclass(frozen=True)
class ResultCount:
    """What a result page says of its query's answer.

    ``matches``: how many records match the query in the whole database; ``shown_cap``: how
    many of them the site shows at most ("the first 50 of 137"), ``None`` when it does not say;
    ``database_total``: the size of the whole database when the page states it ("(360 total)").
    """

    matches: int | None = None
    shown_cap: int | None = None
    database_total: int | None = None

    @classmethod
    def of_event(cls, count: EventCounts | None) -> ResultCount:
        """Return the counts a journaled result page event keeps (``matches``, ``shown_cap``,
        ``total``)."""
        if count is None:
            return cls()
        return cls(count.get("matches"), count.get("shown_cap"), count.get("total"))


def result_count(root: etree._Element) -> ResultCount:
    """Return the counts a result page states (all ``None`` when it states none)."""
    text = visible_text(root, _TEXT_CHARS)
    return result_count_of_text(text)


def result_count_of_text(text: str) -> ResultCount:
    """Return the counts stated in a page's visible text (see ``ResultCount``)."""
    total_match = _TOTAL.search(text)
    database_total = _number(total_match.group(1)) if total_match else None
    ranged = _RANGE.search(text)
    if ranged is not None:
        first, last = _number(ranged.group(1)), _number(ranged.group(2))
        cap = _number(ranged.group(3)) if ranged.group(3) else None
        matches = _number(ranged.group(4))
        if first <= last <= max(matches, cap or 0):
            return ResultCount(matches, cap, database_total)
    first_of = _FIRST_OF.search(text)
    if first_of is not None:
        return ResultCount(_number(first_of.group(2)), _number(first_of.group(1)), database_total)
    counted = _COUNT.search(text)
    if counted is not None:
        return ResultCount(_number(counted.group(1)), None, database_total)
    return ResultCount(None, None, database_total)


def _number(text: str) -> int:
    return int(re.sub(r"\D", "", text))
