"""The ``compare`` spider: fetch two pages and yield their four-stage similarity report.

``scrapy crawl compare -a url1=URL -a url2=URL [-a mode=combined|cascade|full] [-a render=1]
-O report.jsonl``; with ``render=1`` both pages are rendered by Chromium and screenshotted, so
the visual stage runs. The spider yields one item of kind ``comparison``; it runs no item
pipelines (the report is not a page), and does the page analysis itself through the core.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http import Response

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.similarity.params import MODES
from websim_crawler.errors import ConfigError
from websim_crawler.spiders._base import WebsimSpider
from websim_crawler.spiders.args import parse_http_url

if TYPE_CHECKING:
    from websim_crawler.core.similarity.comparison import PageFeatures

logger = logging.getLogger(__name__)


class CompareSpider(WebsimSpider):
    """Fetch ``url1`` and ``url2`` and compare them stage by stage."""

    name = "compare"
    # No item pipelines (the report is not a page): None keeps the add-on from adding the analysis.
    custom_settings = {  # noqa: RUF012 (Scrapy reads a plain dict)
        "ITEM_PIPELINES": {"websim_crawler.pipelines.PageAnalysisPipeline": None}
    }

    def __init__(
        self,
        url1: str | None = None,
        url2: str | None = None,
        mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if url1 is None or url2 is None:
            raise ConfigError("compare: -a url1=URL and -a url2=URL are both required")
        if mode is not None and mode not in MODES:
            raise ConfigError(f"compare: -a mode must be one of {MODES}, got {mode!r}")
        self.urls = (
            parse_http_url(self.name, "url1", url1),
            parse_http_url(self.name, "url2", url2),
        )
        self.mode = mode
        self.features: dict[int, PageFeatures] = {}
        self.config = WebsimConfig()

    def configure(self) -> None:
        """Read the similarity settings; rendering always takes a screenshot here."""
        self.config = websim_config(self.crawler)
        self.render_params = dataclasses.replace(self.render_params, screenshot=True)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Request both pages (not filtered: the two URLs may be the same page)."""
        for slot, url in enumerate(self.urls):
            request = self.page_request(
                url, self.parse_page, kind="page", meta={"websim_slot": slot}
            )
            yield request.replace(dont_filter=True)

    def parse_page(self, response: Response) -> Iterator[Any]:
        """Keep one page's features; when both are in, yield the comparison report."""
        # Imported here: Scrapy imports every spider module for any crawl, and the similarity
        # stages (POT, SciPy) take longer to import than the deepweb crawl of a small site.
        from websim_crawler.core.similarity.comparison import compare_pages, features_from_item
        from websim_crawler.core.similarity.questions import COMPARE_QUESTION, ask

        root = self.html_root(response)
        if root is None:
            return
        item = self.page_item(response, root, kind="page", query=None, page=None)
        self.features[response.meta["websim_slot"]] = features_from_item(
            dict(item), self.config.similarity
        )
        if len(self.features) < 2:
            return
        params = ask(self.config.similarity, COMPARE_QUESTION)
        report = compare_pages(self.features[0], self.features[1], self.mode, params)
        self.count(f"websim/compare/{report.verdict}")
        logger.info(
            "compare (%s): %s (decided by %s; stopped at %s)",
            report.question,
            report.verdict,
            ", ".join(report.decided_by) or "no stage",
            report.stopped_at,
        )
        yield {"kind": "comparison", **report.to_dict()}
