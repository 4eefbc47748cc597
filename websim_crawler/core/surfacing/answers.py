"""What each query of a surfacing crawl brought back, as the planner keeps and reports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict


class QueryLogEntry(TypedDict):
    """One asked query as the stats and report show it."""

    query: str
    new: int
    shown: int
    matches: int | None
    pages: int
    capped: bool
    failed: bool


@dataclass
class Asked:
    """What one asked query brought back, as it comes in."""

    query: str
    frequency_when_asked: int  # its document frequency among records reached when chosen
    records_when_asked: int  # records reached when it was chosen
    records: set[int] = field(default_factory=set)
    new: int = 0
    pages: int = 0
    matches: int | None = None
    stated_cap: int | None = None
    failed: bool = False
    finished: bool = False
    more_pages: bool = False  # the last result page fetched had a way to the next one


@dataclass(frozen=True)
class CoveragePoint:
    """Records reached after ``requests`` result pages (a point of the coverage curve)."""

    requests: int
    records: int
