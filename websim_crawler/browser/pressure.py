"""Shared bounds defer, own bounds refuse: how many pages render at once under memory pressure.

A page whose own renderer is over the per-page memory (``WEBSIM_RENDER_MAX_PAGE_MEMORY``) when
the browser is over its cap broke its own bound: it is refused. A page killed only because the
browser as a whole was over its cap (several ordinary pages at once) is deferred: the number of
pages open at once is halved, and the page goes back to the queue, marked with how often it was
deferred; after ``WEBSIM_RENDER_PRESSURE_RETRIES`` deferrals it is rendered alone (no other page
open), and only a page that fails alone is refused. The number of pages open at once grows back
by one after each ``_RECOVERY_PAGES`` pages rendered without pressure.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

DEFERRALS_META = "websim_render_deferrals"  # request meta: times the page was deferred
ALONE_META = "websim_render_alone"  # request meta: render this page with no other page open
_RECOVERY_PAGES = 8


@dataclass(frozen=True)
class Deferral:
    """What to do with a page killed for the browser's shared memory: retry it (alone or not),
    or refuse it (it failed alone)."""

    retry: bool
    alone: bool
    deferrals: int


def next_attempt(deferrals: int, alone: bool, retries: int) -> Deferral:
    """Decide the next attempt of a page killed for shared pressure after ``deferrals`` ones.

    Retried with fewer pages beside it up to ``retries`` times, then once alone; a page that
    was alone when killed is not retried (the bound it broke held alone).
    """
    if alone:
        return Deferral(retry=False, alone=True, deferrals=deferrals)
    if deferrals < retries:
        return Deferral(retry=True, alone=False, deferrals=deferrals + 1)
    return Deferral(retry=True, alone=True, deferrals=deferrals + 1)


class PageAdmission:
    """Admit pages into the browser: at most ``allowed`` open at once, a page alone by itself.

    ``allowed`` starts at ``WEBSIM_RENDER_MAX_PAGES``, is halved by each pressure kill (at least
    one) and grows back by one after ``_RECOVERY_PAGES`` pages closed without one. A page to
    render alone waits until every other page has closed, and no page opens while it is open or
    waiting.
    """

    def __init__(self, max_pages: int) -> None:
        self.max_pages = max_pages
        self.allowed = max_pages
        self.open_pages = 0
        self.alone_open = False
        self.alone_waiting = 0
        self.calm_pages = 0
        self.condition = asyncio.Condition()

    def pressure(self) -> None:
        """A page was killed for shared pressure: halve the pages allowed at once."""
        self.allowed = max(1, self.allowed // 2)
        self.calm_pages = 0

    def _may_open(self, alone: bool) -> bool:
        if self.alone_open:
            return False
        if alone:
            return self.open_pages == 0
        return self.alone_waiting == 0 and self.open_pages < self.allowed

    async def enter(self, alone: bool) -> None:
        """Wait until a page (alone or not) may open, and count it open."""
        async with self.condition:
            self.alone_waiting += alone
            try:
                await self.condition.wait_for(lambda: self._may_open(alone))
            finally:
                self.alone_waiting -= alone
            self.open_pages += 1
            self.alone_open = alone

    async def leave(self, alone: bool) -> None:
        """Count a page closed; grow the pages allowed back after calm pages."""
        async with self.condition:
            self.open_pages -= 1
            if alone:
                self.alone_open = False
            self.calm_pages += 1
            if self.calm_pages >= _RECOVERY_PAGES and self.allowed < self.max_pages:
                self.allowed += 1
                self.calm_pages = 0
            self.condition.notify_all()
