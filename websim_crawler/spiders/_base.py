"""What the websim spiders share: settings, rendering, page items and failure counting."""

from __future__ import annotations

import functools
import logging
from typing import Any, Self

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from websim_crawler.browser.page import PARTIAL_META, REFUSED_META
from websim_crawler.browser.playwright_wiring import (
    close_kept_page,
    render_meta,
    rendered_screenshot,
)
from websim_crawler.components import ADDON, PAGE_ANALYSIS, addon_enabled, listed
from websim_crawler.config import websim_config
from websim_crawler.config.crawl import CrawlParams
from websim_crawler.config.distributed import DistributedParams
from websim_crawler.config.render import RenderParams
from websim_crawler.core.crawling.refusals import RefusedUrls
from websim_crawler.core.crawling.render_choice import PageYield, page_yield
from websim_crawler.core.html import HtmlTree, opened_tags_over, outgoing_links, page_title
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.surfacing.params import SurfacingParams
from websim_crawler.core.urls import hostname_of, origin_of
from websim_crawler.items import PageItem
from websim_crawler.logformatter import report_errors_plainly
from websim_crawler.middlewares.adaptive_rendering import KEEP_PAGE_META, PAGE_KIND_META
from websim_crawler.middlewares.response_decoding import CONFIDENCE_META
from websim_crawler.middlewares.retry_after import failure_message, failure_reason
from websim_crawler.spiders.args import check_arguments_known, parse_flag

logger = logging.getLogger(__name__)


class WebsimSpider(scrapy.Spider):
    """Base of the websim spiders: reads ``CrawlParams``, renders on ``-a render=1``."""

    params: CrawlParams = CrawlParams()
    max_elements = AnalysisParams().max_elements
    render_params: RenderParams = RenderParams()
    surfacing_params: SurfacingParams = SurfacingParams()
    distributed: DistributedParams = DistributedParams()
    seeded = False  # True when WEBSIM_REDIS_URL is set: seeds come from Redis (websim seed)
    site_origins: frozenset[str] = frozenset()  # scheme://host[:port] the crawl stays on

    def __init__(
        self, *args: Any, render: object = "0", warc: object = None, **kwargs: Any
    ) -> None:
        check_arguments_known(type(self), self.name, kwargs)
        super().__init__(*args, **kwargs)
        # -a warc=FOLDER: WEBSIM_WARC_OUTPUT, the folder of the crawl's WARC files
        self.warc = str(warc).strip() if warc is not None else ""
        # render=auto: the browser is there, and AdaptiveRendering picks the pages it renders.
        self.render_auto = str(render).strip().lower() == "auto"
        self.render = self.render_auto or parse_flag(self.name, "render", render, "1, 0 or auto")
        self.refused = RefusedUrls()  # the first URLs refused for their own bounds, by reason

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """Bring the websim add-on into any project that runs these spiders (it wires the
        origin-aware offsite filter, the capped robots.txt parser, rendering...)."""
        super().update_settings(settings)
        if ADDON not in settings["ADDONS"] and not addon_enabled(settings):
            settings["ADDONS"][ADDON] = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        """Build the spider, read its settings and switch rendering on when asked."""
        report_errors_plainly()
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.warc:  # the add-on, applied after the spider is built, enables the writer
            crawler.settings.set("WEBSIM_WARC_OUTPUT", spider.warc, priority="spider")
        config = websim_config(crawler)
        spider.params = config.crawl
        spider.max_elements = config.analysis.max_elements
        spider.render_params = config.render
        spider.surfacing_params = config.surfacing
        spider.distributed = config.distributed
        spider.seeded = config.distributed.redis_url is not None
        spider.configure()  # the add-on, applied next, wires rendering when the spider renders
        return spider

    @functools.cached_property
    def analysed_downstream(self) -> bool:
        """True when the page analysis pipeline runs (known once the add-ons have run): it
        parses every page (in a worker process) and fills an item's title and links, so a page
        whose links the spider does not follow (a deepweb record) is not parsed in the crawl's
        process as well."""
        return listed(self.crawler.settings, "ITEM_PIPELINES", PAGE_ANALYSIS)

    def configure(self) -> None:
        """Resolve argument defaults that come from settings (``self.params`` is set)."""

    def restrict_to_site(self, url: str, *also: str) -> None:
        """Keep the crawl (redirects, forms, ``<base href>`` targets too) on the origin of
        ``url`` (its scheme, host and port, ``SiteOriginOffsiteMiddleware``) and of ``also``,
        further URLs the user gave (a query template)."""
        self.allowed_domains = [hostname_of(url)]
        self.site_origins = frozenset(origin_of(own) for own in (url, *also) if origin_of(own))

    def page_request(
        self, url: str, callback: Any, *, kind: str, meta: dict[str, Any] | None = None
    ) -> scrapy.Request:
        """Build a request for a page of ``kind``, rendered when asked; failures are counted."""
        return scrapy.Request(
            url,
            callback=callback,
            errback=self.count_failure,
            meta=self.request_meta(meta, kind=kind),
        )

    def request_meta(
        self, meta: dict[str, Any] | None = None, *, kind: str, keep_page: bool = False
    ) -> dict[str, Any]:
        """Return ``meta`` plus the rendering meta of a page of ``kind`` (start, results,
        record, page): rendered with ``render=1``, left to the page's group with ``render=auto``.

        ``keep_page`` hands the rendered page to the callback, which must close it (result pages
        whose "next" control is a script are followed by clicking in that page).
        """
        combined = dict(meta or {})
        if self.render_auto:
            combined.update({PAGE_KIND_META: kind, KEEP_PAGE_META: keep_page})
        elif self.render:
            combined.update(render_meta(self.name, self.render_params, keep_page=keep_page))
        return combined

    def page_yield(self, response: Response, kind: str) -> PageYield | None:
        """Measure a page for ``render=auto`` (records, text, links), or ``None`` if not HTML.

        The parse is the response's own selector, which the callback then reuses.
        """
        if not isinstance(response, HtmlResponse):
            return None
        if opened_tags_over(response.text, self.max_elements):
            return None
        root = response.selector.root
        return page_yield(root, response.url, self.records_found(root, response, kind))

    def records_found(self, root: HtmlTree, response: Response, kind: str) -> int:
        """Return how many records a page of ``kind`` leads to (0: the spider has none)."""
        return 0

    def html_root(self, response: Response) -> HtmlTree | None:
        """Return the parsed page of an HTML response, or ``None`` (counted) for anything else.

        A page whose markup opens more tags than ``WEBSIM_MAX_ELEMENTS`` is skipped unparsed:
        parsing it here would stop the crawl (and the analysis would drop it).
        """
        if isinstance(response, HtmlResponse):
            tags = opened_tags_over(response.text, self.max_elements)
            if tags:
                self.count("websim/pages/skipped/too_many_elements")
                logger.warning(
                    "skipped %s: its markup opens %d tags, over WEBSIM_MAX_ELEMENTS (%d)",
                    response.url,
                    tags,
                    self.max_elements,
                )
                return None
            return response.selector.root
        self.count("websim/pages/skipped/not_html")
        logger.info("skipped %s: not an HTML page (%s)", response.url, type(response).__name__)
        return None

    def unparsed_page_item(
        self, response: Response, *, kind: str, query: str | None, page: int | None
    ) -> PageItem | None:
        """Build the item of a page whose links are not followed, or ``None`` (counted).

        With the analysis pipeline on, the page is not parsed here: the analysis fills its
        title and links. Without it, the page is parsed as any other.
        """
        if not self.analysed_downstream:
            root = self.html_root(response)
            if root is None:
                return None
            return self.page_item(response, root, kind=kind, query=query, page=page)
        if not isinstance(response, HtmlResponse):
            self.html_root(response)  # counts and logs the page that is not HTML
            return None
        return self.page_item(response, None, kind=kind, query=query, page=page)

    def page_item(
        self,
        response: Response,
        root: HtmlTree,
        *,
        kind: str,
        query: str | None,
        page: int | None,
        links: list[str] | None = None,
    ) -> PageItem:
        """Build the ``PageItem`` of a fetched HTML page (``root`` ``None``: not parsed, title and
        links are left to the page analysis)."""
        assert isinstance(response, HtmlResponse)
        item = PageItem(
            url=response.url,
            query=query,
            page=page,
            kind=kind,
            status=response.status,
            html=response.text,
        )
        if root is not None:
            item["title"] = page_title(root)
            item["links"] = links if links is not None else outgoing_links(root, response.url)
        confidence = response.meta.get(CONFIDENCE_META)
        if confidence is not None:
            item["encoding_confidence"] = confidence
        screenshot = rendered_screenshot(response)
        if screenshot is not None:
            item["screenshot"] = screenshot
        if PARTIAL_META in response.meta:
            item["render_partial"] = bool(response.meta[PARTIAL_META])
        self.count(f"websim/pages/{kind}")
        return item

    def count_failure(self, failure: Failure) -> None:
        """Errback: count and log a page that could not be fetched."""
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        close_kept_page(request)
        refused = getattr(failure.value, "stat", None) or (
            request.meta.get(REFUSED_META) if request is not None else None
        )
        self.count(refused or f"websim/pages/failed/{failure_reason(failure)}")
        if refused:
            self.refused.note(refused.rsplit("/", 1)[-1], url)
        logger.warning("%s: could not fetch %s: %s", self.name, url, failure_message(failure))

    def count(self, key: str) -> None:
        """Add one to a crawl stat."""
        self.crawler.stats.inc_value(key)
