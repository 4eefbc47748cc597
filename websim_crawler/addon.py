"""All of websim's Scrapy wiring in one add-on, ``websim_crawler.addon.WebsimAddon``.

The project's settings list it, and the websim spiders add it to any project that runs them. It
puts in place, each only where the project has not chosen otherwise:

- the page components: the analysis pipeline (300), Retry-After (560) and browser-like decoding
  (585) downloader middlewares, the origin-aware offsite filter in the place of Scrapy's, the
  capped robots.txt parser, item-by-item durable feeds encoded by orjson, the one-line item log
  formatter and the JOBDIR scheduler;
- rendering (scrapy-playwright with the browser module) when a websim spider is asked to render
  (``-a render=1|auto``);
- each optional component once its output setting is given (``OPTIONAL_COMPONENTS``: the
  collection stages, the match stage, the stats file, the WARC writer), and no other: listed
  regardless, each would log a "Disabled ... is not set" warning on every crawl;
- the scrapy-redis frontier when ``WEBSIM_REDIS_URL`` is set (``distributed.wiring``).

A stage whose output setting is set but which is not in the crawl (the add-on left out, say by an
``ADDONS = {}`` below the settings that enable it, as Scrapy's project template has) is refused at
start in one line naming it (``components.check_outputs_running``, called by ``scrapy crawl`` of
``websim_crawler.commands`` and by the analysis pipeline): its output would silently never be
written.
"""

from __future__ import annotations

from typing import Self

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from websim_crawler.browser.playwright_wiring import enable_rendering
from websim_crawler.components import OPTIONAL_COMPONENTS, PAGE_ANALYSIS
from websim_crawler.distributed.wiring import JOBDIR_SCHEDULER, wire_distributed
from websim_crawler.middlewares.robots_parser import CAPPED_ROBOTS_PARSER, SCRAPY_ROBOTS_PARSER
from websim_crawler.spiders._base import WebsimSpider

# The components every crawl with websim gets: (component setting, component, order).
PAGE_COMPONENTS = (
    ("ITEM_PIPELINES", PAGE_ANALYSIS, 300),
    # Retries of 429/503 answers wait for their Retry-After (up to WEBSIM_RETRY_AFTER_MAX s).
    ("DOWNLOADER_MIDDLEWARES", "websim_crawler.middlewares.retry_after.RetryAfterMiddleware", 560),
    # After decompression (590): decode pages as browsers do (middlewares/response_decoding.py).
    (
        "DOWNLOADER_MIDDLEWARES",
        "websim_crawler.middlewares.response_decoding.PageDecodingMiddleware",
        585,
    ),
    # At the crawl's end: the pages refused for their own bounds, apart from those deferred.
    ("EXTENSIONS", "websim_crawler.extensions.RefusalSummary", 500),
)
SCRAPY_OFFSITE = "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware"
ORIGIN_OFFSITE = "websim_crawler.middlewares.site_origin.SiteOriginOffsiteMiddleware"
OFFSITE_ORDER = 50  # Scrapy's own place for its offsite filter (DOWNLOADER_MIDDLEWARES_BASE)
# Settings whose Scrapy default gives way (a value the project or command line chose stays).
DEFAULT_CHOICES = {
    "SCHEDULER": JOBDIR_SCHEDULER,
    # Scraped and dropped items logged as one line (URL, kind, main text, keywords), not whole.
    "LOG_FORMATTER": "websim_crawler.logformatter.ItemSummaryLogFormatter",
}
# Feeds written item by item (a killed crawl leaves valid JSON Lines) and encoded by orjson
# (Scrapy's exporter cost the crawl's process as much as a download): websim_crawler/feeds.py.
FEED_COMPONENTS = {
    "FEED_STORAGES": {
        scheme: "websim_crawler.feeds.DurableFileFeedStorage" for scheme in ("", "file")
    },
    "FEED_EXPORTERS": {
        name: "websim_crawler.feeds.OrjsonLinesItemExporter"
        for name in ("jsonlines", "jsonl", "jl")
    },
}
ADAPTIVE_RENDERING = "websim_crawler.middlewares.adaptive_rendering.AdaptiveRendering"
ADAPTIVE_RENDERING_ORDER = 580


class WebsimAddon:
    """Wire websim's components into a crawl (see the module's text for what and when).

    Takes a Scrapy ``Crawler`` (``ADDONS = {"websim_crawler.WebsimAddon": 0}`` in a project's
    settings); ``update_settings`` changes the crawl's ``Settings`` in place and returns ``None``.
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the add-on for ``crawler`` (its spider is built: rendering is its choice)."""
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        """Add the components (one the project lists or disables already stays as it is)."""
        for component_setting, component, order in PAGE_COMPONENTS:
            _add(settings, component_setting, component, order)
        middlewares = settings["DOWNLOADER_MIDDLEWARES"]
        if SCRAPY_OFFSITE not in middlewares and ORIGIN_OFFSITE not in middlewares:
            middlewares[SCRAPY_OFFSITE] = None
            middlewares[ORIGIN_OFFSITE] = OFFSITE_ORDER
        if settings.get("ROBOTSTXT_PARSER") == SCRAPY_ROBOTS_PARSER:
            settings.set("ROBOTSTXT_PARSER", CAPPED_ROBOTS_PARSER, priority="addon")
        for name, value in DEFAULT_CHOICES.items():
            if not settings.getpriority(name):  # still Scrapy's default
                settings.set(name, value, priority="addon")
        for name, components in FEED_COMPONENTS.items():
            for key, component in components.items():
                if key not in settings[name]:
                    settings[name][key] = component
        for output, (component_setting, component, order) in OPTIONAL_COMPONENTS.items():
            if settings.get(output):
                _add(settings, component_setting, component, order)
        self._wire_rendering(settings)
        wire_distributed(settings)  # inert while WEBSIM_REDIS_URL is unset

    def _wire_rendering(self, settings: BaseSettings) -> None:
        """Route downloads through the browser when the crawl's websim spider renders."""
        spider = self.crawler.spider if self.crawler is not None else None
        if not isinstance(spider, WebsimSpider) or not spider.render:
            return
        assert self.crawler is not None
        enable_rendering(self.crawler, spider.name, spider.render_params)
        if spider.render_auto:
            _add(settings, "DOWNLOADER_MIDDLEWARES", ADAPTIVE_RENDERING, ADAPTIVE_RENDERING_ORDER)


def _add(settings: BaseSettings, component_setting: str, component: str, order: int) -> None:
    """Put ``component`` in ``component_setting`` unless the project lists it (or ``None``)."""
    components = settings[component_setting]
    if component not in components:
        components[component] = order
