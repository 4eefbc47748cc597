"""The near-duplicate pipeline: index each page's sentences, find the pairs when the crawl closes.

Enabled by ``WEBSIM_NEARDUP_OUTPUT``; place it after ``PageAnalysisPipeline``, whose workers
split each page's content region into sentences and hash them (an item that comes without the
analysis is prepared in the worker pool too). Each item adds its long sentences to the on-disk
index; the pairs are found and classified in a thread at the end, and the report is written
atomically. The stage's contract (JOBDIR journal, failed output) is ``pipelines._collection``.
"""

from __future__ import annotations

import logging

from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.neardup import NearDuplicateFinder, NeardupReport
from websim_crawler.core.stages import NeardupRecord
from websim_crawler.pipelines._collection import CollectionPipeline

logger = logging.getLogger(__name__)


class NearDuplicatePipeline(CollectionPipeline):
    """Feed every item to a ``NearDuplicateFinder``; write the pairs report at the end."""

    name = "neardup"
    section = "neardup"
    output_setting = "WEBSIM_NEARDUP_OUTPUT"
    record_fields = tuple(NeardupRecord.__annotations__)
    stage: NearDuplicateFinder

    @classmethod
    def log_enabled(cls, config: WebsimConfig) -> None:
        """Log the method and its parameters."""
        params = config.neardup
        logger.info(
            "websim near duplicates enabled (%s method, L=%d, F=%d) -> %s",
            params.method,
            params.min_sentence_chars,
            params.max_sentence_frequency,
            params.output,
        )

    def build_stage(self, config: WebsimConfig) -> NearDuplicateFinder:
        """Return the finder with its temporary index."""
        return NearDuplicateFinder(
            config.neardup, html_field=config.items.html_field, analysis_params=config.analysis
        )

    def count_taken(self, reason: str | None) -> None:
        """Count a page indexed or skipped by reason."""
        assert self.crawler.stats is not None
        if reason is None:
            self.crawler.stats.inc_value("websim/neardup/pages/indexed")
        else:
            self.crawler.stats.inc_value(f"websim/neardup/pages/skipped/{reason}")

    def finish_and_write(self) -> NeardupReport:
        """Find and classify the pairs and write the report atomically."""
        report = self.stage.finish()
        atomic_write_json(self.output, report.to_dict())
        return report

    def report(self, result: NeardupReport) -> None:
        """Set the pair counts and log where the report is."""
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value("websim/neardup/pairs", len(result.pairs))
        for name, count in result.stats["classes"].items():
            stats.set_value(f"websim/neardup/class/{name}", count)
        logger.info(
            "websim near duplicates: %d pair(s) among %d page(s) written to %s",
            len(result.pairs),
            result.stats["pages"]["indexed"],
            self.output,
        )
