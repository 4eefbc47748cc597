"""The near-duplicate pipeline: index each page's sentences, find the pairs when the crawl closes.

Enabled by ``WEBSIM_NEARDUP_OUTPUT``; place it after ``PageAnalysisPipeline`` (whose ``chunks``
it reads; items without chunks are analysed from their HTML). Each item adds its long sentences
to the on-disk index; the pairs are found and classified in a thread at the end, and the report
is written atomically.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.io import atomic_write_json, check_output_path
from websim_crawler.core.neardup import NearDuplicateFinder, NeardupReport
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)


class NearDuplicatePipeline:
    """Feed every item to a ``NearDuplicateFinder``; write the pairs report at the end."""

    def __init__(self, crawler: Crawler, config: WebsimConfig) -> None:
        self.crawler = crawler
        self.params = config.neardup
        self.finder = NearDuplicateFinder(
            config.neardup, html_field=config.items.html_field, analysis_params=config.analysis
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        """Build the pipeline; ``NotConfigured`` unless ``WEBSIM_NEARDUP_OUTPUT`` is set."""
        config = websim_config(crawler)
        params = config.neardup
        if not params.output:
            raise NotConfigured("WEBSIM_NEARDUP_OUTPUT is not set")
        check_output_path(params.output)  # a folder or a read-only place stops the crawl now
        logger.info(
            "websim near duplicates enabled (%s method, L=%d, F=%d) -> %s",
            params.method,
            params.min_sentence_chars,
            params.max_sentence_frequency,
            params.output,
        )
        return cls(crawler, config)

    def process_item(self, item: Any) -> Any:
        """Add the item's sentences to the index; the item passes on unchanged."""
        stats = self.crawler.stats
        assert stats is not None
        reason = self.finder.add_item(ItemAdapter(item))
        if reason is None:
            stats.inc_value("websim/neardup/pages/indexed")
        else:
            stats.inc_value(f"websim/neardup/pages/skipped/{reason}")
        return item

    async def close_spider(self) -> None:
        """Find and classify the pairs in a thread and write the report atomically."""
        stats = self.crawler.stats
        assert stats is not None
        try:
            report: NeardupReport = await maybe_deferred_to_future(
                deferToThread(self._finish_and_write)
            )
        except (WebsimError, OSError) as exc:
            stats.inc_value("websim/neardup/failed")
            logger.error(
                "websim near duplicates failed, %s not written: %s", self.params.output, exc
            )
            return
        finally:
            self.finder.close()
        stats.set_value("websim/neardup/pairs", len(report.pairs))
        for name, count in report.stats["classes"].items():
            stats.set_value(f"websim/neardup/class/{name}", count)
        logger.info(
            "websim near duplicates: %d pair(s) among %d page(s) written to %s",
            len(report.pairs),
            report.stats["pages"]["indexed"],
            self.params.output,
        )

    def _finish_and_write(self) -> NeardupReport:
        report = self.finder.finish()
        assert self.params.output is not None
        atomic_write_json(self.params.output, report.to_dict())
        return report
