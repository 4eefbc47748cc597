"""The ``site`` spider: crawl one site by its links, for sites without a search form.

``scrapy crawl site -a start_url=URL [-a max_pages=N] [-a render=1] [-s DEPTH_LIMIT=N]
-O pages.jsonl``; every page becomes an item of kind ``page``. As a distributed worker
(``-s WEBSIM_REDIS_URL=...``) it also takes start URLs seeded in Redis (``websim seed site``)
and follows each one's links within that start URL's site; ``max_pages`` counts the pages of a
start URL over all workers (in Redis, ``WEBSIM_REDIS_GLOBAL_LIMITS``), or per worker.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import scrapy
from scrapy.http import Response

from websim_crawler.core.html import outgoing_links
from websim_crawler.core.urls import looks_like_page, same_host_port
from websim_crawler.distributed import BUDGET
from websim_crawler.errors import ConfigError
from websim_crawler.spiders._base import WebsimSpider
from websim_crawler.spiders.args import parse_count, parse_http_url

logger = logging.getLogger(__name__)

_MAX_PAGES_LIMIT = 10_000_000
_START_URL = "websim_start_url"  # request meta: the start URL whose site the page belongs to


class SiteSpider(WebsimSpider):
    """Follow the links of one site (same host, ``DEPTH_LIMIT``) up to ``max_pages`` pages."""

    name = "site"
    seed_field = "url"  # a bare seed in Redis is a start URL

    def __init__(
        self, start_url: str | None = None, max_pages: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.start_url = (
            parse_http_url(self.name, "start_url", start_url) if start_url is not None else None
        )
        self.max_pages_argument = (
            parse_count(self.name, "max_pages", max_pages, maximum=_MAX_PAGES_LIMIT)
            if max_pages is not None
            else None
        )
        self.max_pages = self.max_pages_argument or self.params.site_max_pages
        self.requested: set[str] = set()
        self.shared_budget = False  # True: max_pages is counted over all workers, in Redis

    def configure(self) -> None:
        """Take ``max_pages`` from ``WEBSIM_SITE_MAX_PAGES`` unless ``-a max_pages`` was given."""
        if self.start_url is None and not self.seeded:
            raise ConfigError("site: -a start_url=URL is required (where the crawl begins)")
        if self.start_url is not None and not self.seeded:
            self.restrict_to_site(self.start_url)
        self.max_pages = self.max_pages_argument or self.params.site_max_pages
        self.shared_budget = self.seeded and self.distributed.global_limits
        logger.info(
            "site: crawling %s, up to %d pages",
            self.start_url or "the start URLs seeded in Redis",
            self.max_pages,
        )

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Request the start page (filtered, so links back to it are not fetched twice)."""
        if self.start_url is not None:
            yield self.start_request(self.start_url)

    def seed_requests(self, seed: Mapping[str, Any]) -> Iterator[scrapy.Request]:
        """Turn a start URL seeded in Redis (``{"url": ...}``) into its request."""
        yield self.start_request(parse_http_url(self.name, "start_url", seed.get("url")))

    def start_request(self, url: str) -> scrapy.Request:
        """Build the (filtered) request of a start page."""
        self.requested.add(url)
        return self.page_request(url, self.parse_page, kind="page", meta=self.budget_meta(url))

    def budget_meta(self, start_url: str) -> dict[str, Any]:
        """Return the meta of a page request of ``start_url``'s site (its shared budget too)."""
        meta: dict[str, Any] = {_START_URL: start_url}
        if self.shared_budget:
            meta[BUDGET] = [start_url, self.max_pages]
        return meta

    def parse_page(self, response: Response) -> Iterator[Any]:
        """Yield the page and requests for its same-site links not requested yet."""
        root = self.html_root(response)
        if root is None:
            return
        links = outgoing_links(root, response.url)
        yield self.page_item(response, root, kind="page", query=None, page=None, links=links)
        start_url = response.meta.get(_START_URL) or self.start_url or response.url
        for url in links:
            if not self.shared_budget and len(self.requested) >= self.max_pages:
                self.count("websim/crawl/page_limit_reached")
                return
            if url in self.requested or not same_host_port(url, start_url):
                continue
            if not looks_like_page(url):
                continue
            self.requested.add(url)
            yield self.page_request(
                url, self.parse_page, kind="page", meta=self.budget_meta(start_url)
            )
