"""Deferred, not refused: a rendered page killed for the browser's shared memory is tried again.

The page guard fails a page whose renderer the watchdog killed only because Chromium as a
whole was over its cap (``websim/render/deferred``; see ``browser/pressure.py``). This
downloader middleware turns that failure into the same request queued again at a lower
priority (later, with fewer pages open beside it, the browser having halved its pages at once),
up to ``WEBSIM_RENDER_PRESSURE_RETRIES`` times, then once alone. The new request gets its own
lease (the old one's is released once the engine is done with it, after the new one is queued),
so a deferred page is never lost nor crawled twice.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request

from websim_crawler.browser.page import DEFERRED_STAT, REFUSED_META
from websim_crawler.browser.pressure import ALONE_META, DEFERRALS_META, next_attempt
from websim_crawler.config import websim_config
from websim_crawler.frontier.release import LEASE

logger = logging.getLogger(__name__)

# Meta of one attempt that a new attempt must not inherit: its refusal, its lease, its page.
_ATTEMPT_META = (REFUSED_META, LEASE, "playwright_page", "download_slot")


class RenderPressureRetry:
    """Queue a page deferred for browser memory pressure again (see the module docstring)."""

    def __init__(self, crawler: Crawler, retries: int) -> None:
        self.crawler = crawler
        self.retries = retries

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderPressureRetry:
        """Build the middleware from the crawl's validated settings."""
        return cls(crawler, websim_config(crawler).render.pressure_retries)

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        """Return the deferred page's next attempt; leave every other failure as it is."""
        # A crashed page fails with Playwright's own error; its guard noted why in the meta.
        stat = getattr(exception, "stat", None) or request.meta.get(REFUSED_META)
        if stat != DEFERRED_STAT:
            return None
        attempt = next_attempt(
            int(request.meta.get(DEFERRALS_META, 0)),
            bool(request.meta.get(ALONE_META)),
            self.retries,
        )
        if not attempt.retry:
            return None
        meta: dict[str, Any] = {
            key: value for key, value in request.meta.items() if key not in _ATTEMPT_META
        }
        meta[DEFERRALS_META] = attempt.deferrals
        meta[ALONE_META] = attempt.alone
        self._count(DEFERRED_STAT)
        self._count("websim/render/retried_alone" if attempt.alone else "websim/render/retried")
        logger.info(
            "rendering: %s deferred by the browser's memory cap; tried again%s (attempt %d)",
            request.url,
            " alone" if attempt.alone else " with fewer pages open",
            attempt.deferrals + 1,
        )
        return request.replace(meta=meta, dont_filter=True, priority=request.priority - 1)

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)
