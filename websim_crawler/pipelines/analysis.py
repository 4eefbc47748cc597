"""The page analysis pipeline: segmentation, noise/duplicate removal, weighting, keywords.

One pipeline rather than one per step: the steps share one parsed tree and its chunks, which
are not JSON-safe and would have to be re-parsed by every later pipeline. Each step keeps its
own switch (``WEBSIM_NOISE_FILTER``, ``WEBSIM_DUPLICATE_FILTER``, ``WEBSIM_TEMPLATE_FILTER``).
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.page import (
    PageAnalysis,
    SiteTemplateMemory,
    analyse_page,
    new_template_memory,
)
from websim_crawler.errors import PageError
from websim_crawler.jobdir import load_state, save_state

logger = logging.getLogger(__name__)

RESULT_FIELDS = ("title", "language", "main_text", "keywords", "chunks", "links")
SITE_MEMORY_STATE = "site-memory"  # JOBDIR/websim-site-memory.json


class PageAnalysisPipeline:
    """Analyse the HTML of each item and write title, language, main text, keywords, chunks."""

    def __init__(self, crawler: Crawler, config: WebsimConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.site_memory = new_template_memory(config.analysis)
        saved = load_state(crawler.settings, SITE_MEMORY_STATE, SiteTemplateMemory.from_dict)
        if saved is not None:  # a resumed JOBDIR crawl
            self.site_memory = saved
        self._warned_fields: set[str] = set()

    def close_spider(self) -> None:
        """Save the per-site template memory into JOBDIR, if any, for a resumed crawl."""
        save_state(self.crawler.settings, SITE_MEMORY_STATE, self.site_memory.to_dict())

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageAnalysisPipeline:
        """Build the pipeline from the crawler's settings (bad values raise ``ConfigError``)."""
        logger.info("websim page analysis enabled")
        return cls(crawler, websim_config(crawler))

    def process_item(self, item: Any) -> Any:
        """Analyse one item's page; drop it with a counted reason when it cannot be analysed."""
        stats = self.crawler.stats
        assert stats is not None
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        stats.inc_value("websim/pages/seen")
        html = adapter.get(self.config.items.html_field)
        if not isinstance(html, (str, bytes)):
            stats.inc_value("websim/pages/dropped/no_html")
            raise DropItem(f"no_html: no HTML in field {self.config.items.html_field!r} ({url})")
        try:
            analysis = analyse_page(
                html,
                url if isinstance(url, str) else None,
                params=self.config.analysis,
                site_memory=self.site_memory,
            )
        except PageError as exc:
            stats.inc_value(f"websim/pages/dropped/{exc.reason}")
            raise DropItem(f"{exc.reason}: {exc} ({url})") from exc
        self._write_fields(adapter, analysis)
        stats.inc_value("websim/pages/analysed")
        for fate, count in analysis.counts().items():
            stats.inc_value(f"websim/chunks/{fate}", count)
            stats.inc_value("websim/chunks/total", count)
        if not analysis.main_text:
            stats.inc_value("websim/pages/no_main_text")
        return item

    def _write_fields(self, adapter: ItemAdapter, analysis: PageAnalysis) -> None:
        record = analysis.to_dict(self.config.items.chunk_detail)  # as websim extract writes
        values: dict[str, Any] = {
            "language": analysis.language,
            "main_text": analysis.main_text,
            "keywords": analysis.keywords,
        }
        if "chunks" in record:
            values["chunks"] = record["chunks"]
        if not adapter.get("title"):
            values["title"] = analysis.title
        if not adapter.get("links"):
            values["links"] = list(analysis.links)
        declared = None if isinstance(adapter.item, dict) else set(adapter.field_names())
        for name, value in values.items():
            if declared is not None and name not in declared:
                self._warn_undeclared(name)
                continue
            adapter[name] = value
        if self.config.items.drop_html and (
            declared is None or self.config.items.html_field in declared
        ):
            adapter[self.config.items.html_field] = None

    def _warn_undeclared(self, name: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("websim/fields/undeclared")
        if name not in self._warned_fields:
            self._warned_fields.add(name)
            logger.warning("item class has no field %r: websim leaves it out", name)
