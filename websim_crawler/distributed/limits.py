"""``CLOSESPIDER_PAGECOUNT`` over all workers: responses counted with one Redis ``INCR``.

Scrapy's ``CloseSpider`` extension counts the responses of its own process. In a distributed
crawl (with ``WEBSIM_REDIS_GLOBAL_LIMITS``, the default) the add-on puts this subclass in its
place: each response adds one to ``PREFIX:SPIDER:pages``, and the worker whose response reaches
the limit, or finds it passed, closes (``closespider_pagecount``). Like Scrapy's own count, the
requests already in flight are still finished, so the crawl ends a few responses past the limit
(at most the workers' concurrency added up). Responses received while Redis is away are added
once it answers again. The other conditions (timeout, item count, error
count, pages without items) stay per worker.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.extensions.closespider import CloseSpider
from scrapy.http import Response

from websim_crawler._imports import require
from websim_crawler.config import websim_config
from websim_crawler.distributed.outage import redis_client


class GlobalCloseSpider(CloseSpider):
    """Scrapy's ``CloseSpider`` whose page count is shared by all workers through Redis."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        params = websim_config(crawler).distributed
        assert params.redis_url is not None
        self.server: Any = redis_client(params.redis_url, params.socket_timeout)
        self.redis_errors: tuple[type[Exception], ...] = (require("redis").RedisError,)
        self.params = params
        self.closing = False
        self.uncounted = 0  # responses received while Redis was away, added once it is back

    def page_count(self, response: Response, request: Request, spider: Spider) -> None:
        """Count the response in Redis; close this worker once the crawl's count is reached."""
        if not self.close_on.get("pagecount"):
            super().page_count(response, request, spider)
            return
        self.counter["pagecount_since_last_item"] += 1
        key = self.params.keys(spider.name).page_count
        try:
            self.counter["pagecount"] = int(self.server.incrby(key, self.uncounted + 1))
        except self.redis_errors:  # the scheduler rides out the outage; count it later
            self.uncounted += 1
            return
        self.uncounted = 0
        if self.counter["pagecount"] >= self.close_on["pagecount"] and not self.closing:
            self.closing = True
            assert self.crawler.stats is not None
            self.crawler.stats.set_value("websim/redis/page_count", self.counter["pagecount"])
            self._close_spider("closespider_pagecount")
            return
        no_item_limit = self.close_on["pagecount_no_item"]
        if no_item_limit and self.counter["pagecount_since_last_item"] >= no_item_limit:
            self._close_spider("closespider_pagecount_no_item")
