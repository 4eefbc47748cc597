"""What a surfacing crawl chose and saw, kept in ``JOBDIR`` as it happens: a resumed crawl
(even one killed with SIGKILL, when nothing is saved at close) replays it and asks nothing twice.

One JSON object a line, appended and flushed as each event happens (``chosen``, ``page``,
``failed``, ``finished``, ``record_terms``; see ``core.surfacing.planner.QueryPlanner.replay``).
A line cut short by a kill is the last one: it is skipped, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import orjson

from websim_crawler.core.params import SettingsLike
from websim_crawler.core.surfacing import SurfacingEvent, journal_event
from websim_crawler.frontier.jobdir_state import state_path

logger = logging.getLogger(__name__)


class SurfacingJournal:
    """The surfacing events of one JOBDIR, read back once and appended to after."""

    shared = False  # one crawl process writes it (see distributed.surfacing_journal for Redis)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[bytes] | None = None
        self._read = False

    @classmethod
    def of(cls, settings: SettingsLike) -> SurfacingJournal | None:
        """Return the journal of the crawl's JOBDIR, or ``None`` without a JOBDIR."""
        path = state_path(settings, "surfacing", ".jsonl")
        return cls(path) if path is not None else None

    def new_events(self) -> list[SurfacingEvent]:
        """Return the events an earlier run of this JOBDIR wrote, once (none for a fresh crawl:
        this process applies its own events as it writes them)."""
        if self._read:
            return []
        self._read = True
        return list(self._events())

    def claim(self, query: str) -> bool:
        """Claim ``query``: always granted, this process is the only one choosing."""
        return True

    def _events(self) -> Iterator[SurfacingEvent]:
        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    event = journal_event(orjson.loads(line))
                except orjson.JSONDecodeError:
                    logger.warning(
                        "surfacing journal %s: line %d unreadable, skipped", self.path, number
                    )
                    continue
                if event is not None:
                    yield event

    def append(self, event: SurfacingEvent) -> None:
        """Write one event and flush it (the OS keeps it if the process is killed)."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("ab")
        self._handle.write(orjson.dumps(event) + b"\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
