"""Release a scheduler's lease on a request once the engine is completely done with it.

A leasing scheduler (the Redis worker's, or the JOBDIR one) keeps every request it hands out in
an in-flight record until the request is finished: downloaded, its callback or errback run, its
items through the pipelines and written by the feed exporter, its follow-up requests (links,
retries, redirects) scheduled. Scrapy's engine keeps exactly that set, ``_Slot.inprogress``: a
request enters it when taken from the scheduler and leaves it only after all of the above (or
after a failure, a drop by a middleware, an error in a callback). :func:`release_when_done`
watches that set; a request's lease id travels in its meta under :data:`LEASE`.

Scrapy has no public signal for "request finished"; the engine slot is internal, so the hook
checks its shape when installed and fails loudly rather than silently losing leases.

Once a feed write has failed (:func:`keep_leases`), no lease is released any more: the items of
the requests finished from then on are not in the feed, so those requests stay in flight and are
crawled again (a resumed JOBDIR crawl requeues them; a Redis worker gives them back at close).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler

from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

LEASE = "websim_lease"
"""Request meta key: the lease id a leasing scheduler gave the request."""


class _ReleasingSet(set[Request]):
    """The engine's in-progress set, calling ``release`` for each leased request it drops."""

    def __init__(
        self, requests: Iterable[Request], release: Callable[[Request], None], stats: Any
    ) -> None:
        super().__init__(requests)
        self.release = release
        self.stats = stats
        self.keeping = False  # a feed write failed: finished requests stay leased

    def remove(self, request: Request) -> None:
        super().remove(request)
        if LEASE not in request.meta:
            return
        if self.keeping:
            if self.stats is not None:
                self.stats.inc_value("websim/feed/requests_kept")
            return
        try:
            self.release(request)
        except Exception:  # a lost release means a recrawl, never a lost page
            logger.exception("cannot release the lease of %s", request)


def release_when_done(crawler: Crawler, release: Callable[[Request], None]) -> None:
    """Call ``release(request)`` for each leased request the engine has finished with."""
    slot: Any = getattr(crawler.engine, "_slot", None)
    inprogress = getattr(slot, "inprogress", None)
    if not isinstance(inprogress, set):
        raise WebsimError(
            "request leases need Scrapy's engine in-progress set (ExecutionEngine._slot."
            "inprogress), which this Scrapy version does not have; run without JOBDIR and Redis"
        )
    if not isinstance(inprogress, _ReleasingSet):
        slot.inprogress = _ReleasingSet(inprogress, release, crawler.stats)


def keep_leases(crawler: Crawler) -> None:
    """Release no more leases: the requests the engine finishes from now on stay in flight.

    For a failed feed write: the items of those requests did not reach the feed, so the next
    run of the JOBDIR, or another Redis worker, must crawl them again. Without a leasing
    scheduler nothing is kept (and nothing could be resumed).
    """
    inprogress = getattr(getattr(crawler.engine, "_slot", None), "inprogress", None)
    if isinstance(inprogress, _ReleasingSet):
        inprogress.keeping = True


def held_leases(crawler: Crawler) -> set[str]:
    """Return the lease ids of the requests the engine is working on now."""
    slot: Any = getattr(crawler.engine, "_slot", None)
    inprogress = getattr(slot, "inprogress", None) or ()
    return {str(request.meta[LEASE]) for request in inprogress if LEASE in request.meta}
