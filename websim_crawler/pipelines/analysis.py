"""The page analysis pipeline: segmentation, noise/duplicate removal, weighting, keywords.

One pipeline rather than one per step: the steps share one parsed tree and its chunks, which
are not JSON-safe and would have to be re-parsed by every later pipeline. Each step keeps its
own switch (``WEBSIM_NOISE_FILTER``, ``WEBSIM_DUPLICATE_FILTER``, ``WEBSIM_TEMPLATE_FILTER``).

Pages are analysed in worker processes (``websim_crawler.workers.pool``) while Scrapy keeps
downloading; at most ``WEBSIM_ANALYSIS_MAX_PENDING`` are in flight, and items come back in the
order their analysis ends.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredSemaphore
from twisted.internet.threads import deferToThread

from websim_crawler.components import check_outputs_running
from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.html import DOUBTFUL
from websim_crawler.core.page import AnalysisRecord, SiteTemplateMemory
from websim_crawler.frontier.jobdir_state import load_state, save_state
from websim_crawler.pipelines._collection import outcome_of, stage_records_of
from websim_crawler.workers.pool import DEFERRAL_RETRIES, AnalysisPool

logger = logging.getLogger(__name__)

SITE_MEMORY_STATE = "site-memory"  # JOBDIR/websim-site-memory.json
# Item fields the end-of-crawl stages read beside what the analysis writes.
STAGE_ITEM_FIELDS = ("kind", "links", "screenshot", "title")


class PageAnalysisPipeline:
    """Analyse the HTML of each item and write title, language, main text, keywords, chunks."""

    def __init__(self, crawler: Crawler, config: WebsimConfig) -> None:
        self.crawler = crawler
        self.config = config
        # A resumed JOBDIR crawl takes back its per-site template memory.
        saved = load_state(crawler.settings, SITE_MEMORY_STATE, SiteTemplateMemory.from_dict)
        # The workers also prepare each page's record for the end-of-crawl stages that are on.
        self.stage_records = stage_records_of(crawler)
        self.pool = AnalysisPool(config.analysis, config.pool, saved)
        self._warned_fields: set[str] = set()
        self._slots = DeferredSemaphore(config.pool.max_pending)
        self._waiting = 0  # pages handed to the pool or waiting for a slot
        self._drained: list[Deferred[None]] = []  # fired when the last of them is done
        self._starting: Deferred[None] | None = None  # the workers starting, in a thread

    async def open_spider(self) -> None:
        """Start the workers in a thread while the crawl fetches its first pages (a fork server
        and its imports take a few tenths of a second that would otherwise stall the reactor
        on the first page)."""
        if self.pool.workers:
            self._starting = deferToThread(self.pool.start)

    async def close_spider(self) -> None:
        """Wait for every page handed to the pool, stop the workers, save the template memory
        (JOBDIR)."""
        if self._starting is not None:
            await maybe_deferred_to_future(self._starting)
        if self._waiting:
            drained: Deferred[None] = Deferred()
            self._drained.append(drained)
            await maybe_deferred_to_future(drained)
        await maybe_deferred_to_future(deferToThread(self.pool.close))
        save_state(self.crawler.settings, SITE_MEMORY_STATE, self.pool.site_memory.to_dict())

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageAnalysisPipeline:
        """Build the pipeline from the crawler's settings (bad values raise ``ConfigError``)."""
        config = websim_config(crawler)
        check_outputs_running(crawler.settings)
        logger.info("websim page analysis enabled (%s)", _workers_text(config.pool.worker_count()))
        return cls(crawler, config)

    async def process_item(self, item: Any) -> Any:
        """Analyse one item's page; drop it with a counted reason when it cannot be analysed."""
        stats = self.crawler.stats
        assert stats is not None
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        url = url if isinstance(url, str) else None
        stats.inc_value("websim/pages/seen")
        kind = adapter.get("kind") if isinstance(adapter.get("kind"), str) else None
        html = adapter.get(self.config.items.html_field)
        if not isinstance(html, (str, bytes)):
            stats.inc_value("websim/pages/dropped/no_html")
            raise DropItem(f"no_html: no HTML in field {self.config.items.html_field!r} ({url})")
        plan, fields = self.stage_records.plan, None
        if plan.enabled:  # what the stages read beside the analysis
            fields = {name: adapter.get(name) for name in STAGE_ITEM_FIELDS}
        if self.pool.workers:
            self._waiting += 1
            try:
                await maybe_deferred_to_future(self._slots.acquire())
                if self._starting is not None:
                    await maybe_deferred_to_future(self._starting)
                try:
                    future = self.pool.submit(
                        html, url, page_kind=kind, fields=fields, stage_plan=plan
                    )
                    outcome = await outcome_of(future)
                finally:
                    self._slots.release()
            finally:
                self._waiting -= 1
                if not self._waiting:
                    for drained in self._drained:
                        drained.callback(None)
                    self._drained.clear()
        else:  # in this process: nothing to wait for
            outcome = self.pool.submit(
                html, url, page_kind=kind, fields=fields, stage_plan=plan
            ).result()
        if outcome.deferred:  # slowed by the crowd, not by itself: tried again
            stats.inc_value("websim/analysis/deferred", outcome.deferred)
            if outcome.deferred >= DEFERRAL_RETRIES:
                stats.inc_value("websim/analysis/retried_alone")
        if outcome.dropped or outcome.failed or outcome.record is None:
            fate = f"dropped/{outcome.dropped}" if outcome.dropped else f"failed/{outcome.failed}"
            stats.inc_value(f"websim/pages/{fate}")
            raise DropItem(f"{outcome.dropped or outcome.failed}: {outcome.message} ({url})")
        self._write_fields(adapter, outcome.record)
        self.stage_records.put(item, outcome.stage_record)
        self._write_confidence(adapter, outcome.record, url)
        stats.inc_value("websim/pages/analysed")
        for fate, count in outcome.counts.items():
            stats.inc_value(f"websim/chunks/{fate}", count)
            stats.inc_value("websim/chunks/total", count)
        if not outcome.record["main_text"]:
            stats.inc_value("websim/pages/no_main_text")
        return item

    def _write_fields(self, adapter: ItemAdapter, record: AnalysisRecord) -> None:
        values: dict[str, Any] = {
            "language": record["language"],
            "main_text": record["main_text"],
            "keywords": record["keywords"],
            "keyword_stems": record["keyword_stems"],
        }
        if "chunks" in record:
            values["chunks"] = record["chunks"]
        if not adapter.get("title"):
            values["title"] = record["title"]
        if not adapter.get("links"):
            values["links"] = list(record["links"])
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

    def _write_confidence(
        self, adapter: ItemAdapter, record: AnalysisRecord, url: str | None
    ) -> None:
        """Write and count how the analysis decoded the page, unless the spider already said
        (``decoding.PageDecodingMiddleware``: the same vocabulary and stats)."""
        confidence = record.get("encoding_confidence")
        if confidence is None or adapter.get("encoding_confidence") is not None:
            return
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"websim/pages/encoding/{confidence}")
        if confidence == DOUBTFUL:
            logger.warning(
                "%s: doubtful decoding (%s); the text may hold wrong characters",
                url,
                record.get("encoding") or "text given decoded",
            )
        if isinstance(adapter.item, dict) or "encoding_confidence" in adapter.field_names():
            adapter["encoding_confidence"] = confidence
        else:
            self._warn_undeclared("encoding_confidence")

    def _warn_undeclared(self, name: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("websim/fields/undeclared")
        if name not in self._warned_fields:
            self._warned_fields.add(name)
            logger.warning("item class has no field %r: websim leaves it out", name)


def _workers_text(workers: int) -> str:
    return f"{workers} worker processes" if workers else "in the crawl's process"
