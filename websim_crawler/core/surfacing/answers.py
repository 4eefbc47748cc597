"""What each query of a surfacing crawl brought back, as the planner keeps and reports it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict, cast

_MIN_CAP_EVIDENCE = 2  # answers that stop at one length before it is taken as the site's cap
_MIN_PAGER_CAP_EVIDENCE = 3  # the same, from the pager's end alone (no counts stated)


class QueryLogEntry(TypedDict):
    """One asked query as the stats and report show it."""

    query: str
    new: int
    shown: int
    matches: int | None
    pages: int
    capped: bool
    failed: bool


class EventCounts(TypedDict):
    """The counts a result page states, as a ``page`` event keeps them (``ResultCount``)."""

    matches: int | None
    shown_cap: int | None
    total: int | None


class SurfacingEvent(TypedDict):
    """One event of a surfacing crawl's journal (a JOBDIR line, an item of the Redis list), as
    the spider writes it and ``QueryPlanner.replay`` reads it back: ``event`` says which."""

    event: Literal["chosen", "page", "record_terms", "failed", "finished"]
    query: NotRequired[str]  # every event but ``record_terms``
    records: NotRequired[dict[str, str]]  # page: record key -> its snippet
    count: NotRequired[EventCounts]  # page
    has_next: NotRequired[bool]  # page
    entries: NotRequired[int]  # page: results listed
    key: NotRequired[str]  # record_terms: the record
    words: NotRequired[list[str]]  # record_terms: its page's keywords


def journal_event(value: object) -> SurfacingEvent | None:
    """Return a journal item's decoded JSON as an event, ``None`` when it is no JSON object
    (skipped by the journals' readers)."""
    return cast("SurfacingEvent", value) if isinstance(value, dict) else None


@dataclass
class Asked:
    """What one asked query brought back, as it comes in."""

    query: str
    frequency_when_asked: int  # its document frequency among records reached when chosen
    records_when_asked: int  # records reached when it was chosen
    records: set[int] = field(default_factory=set)
    entries: int = 0  # results listed: more than its records where one is listed several times
    new: int = 0
    pages: int = 0
    matches: int | None = None
    stated_cap: int | None = None
    failed: bool = False
    finished: bool = False
    more_pages: bool = False  # the last result page fetched had a way to the next one

    @property
    def shown(self) -> int:
        """Return how many results the answer listed, in the unit a site counts its matches
        in (Sphinx lists a page once per matching section and counts each)."""
        return max(len(self.records), self.entries)

    def log_entry(self, capped: bool) -> QueryLogEntry:
        """Return the query with what it brought, as the stats and report show it."""
        return QueryLogEntry(
            query=self.query,
            new=self.new,
            shown=len(self.records),
            matches=self.matches,
            pages=self.pages,
            capped=capped,
            failed=self.failed,
        )


@dataclass(frozen=True)
class CoveragePoint:
    """Records reached after ``requests`` result pages (a point of the coverage curve)."""

    requests: int
    records: int


def observed_cap(answers: Iterable[Asked], page_size: int) -> int | None:
    """Return the answer length several finished answers stopped at while stating more
    matches, or, on a site that states no counts, by the pager's end at the longest length
    seen (several answers of several pages of ``page_size``, all ending at one length, none
    longer); else ``None``."""
    finished = [asked for asked in answers if asked.finished and not asked.more_pages]
    stated = Counter(
        asked.shown
        for asked in finished
        if asked.matches is not None and asked.matches > asked.shown
    )
    if stated:
        length, times = stated.most_common(1)[0]
        return length if times >= _MIN_CAP_EVIDENCE else None
    lengths = Counter(len(asked.records) for asked in finished if asked.matches is None)
    if not lengths:
        return None
    longest = max(lengths)
    if longest >= 2 * max(page_size, 1) and lengths[longest] >= _MIN_PAGER_CAP_EVIDENCE:
        return longest
    return None
