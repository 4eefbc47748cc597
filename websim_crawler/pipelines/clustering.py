"""The clustering pipeline: collect each page's keywords, cluster them when the crawl closes.

Enabled by ``WEBSIM_CLUSTERS_OUTPUT``; place it after ``PageAnalysisPipeline`` (which writes the
``keywords`` it reads). The clustering runs in a thread so the reactor keeps serving.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from websim_crawler.config import websim_config
from websim_crawler.core.clustering import (
    ClusteringParams,
    ClusteringResult,
    DocumentCollector,
    build_report,
    cluster_documents,
    render_html,
)
from websim_crawler.core.io import atomic_write_report, check_output_path
from websim_crawler.core.page import feature_keywords
from websim_crawler.core.text import DEFAULT_STEMMER
from websim_crawler.errors import WebsimError
from websim_crawler.frontier.jobdir_state import load_state, save_state

logger = logging.getLogger(__name__)

BUFFER_STATE = "clustering-buffer"  # JOBDIR/websim-clustering-buffer.json


class ClusteringPipeline:
    """Buffer (url, kind, keywords, keyword forms) of each item; write the report at the end."""

    def __init__(
        self, crawler: Crawler, params: ClusteringParams, stemmer_name: str = DEFAULT_STEMMER
    ) -> None:
        self.crawler = crawler
        self.params = params
        self.collector = DocumentCollector(params.kind, stemmer_name=stemmer_name)
        load_state(crawler.settings, BUFFER_STATE, self.collector.restore)  # a resumed crawl

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ClusteringPipeline:
        """Build the pipeline; ``NotConfigured`` unless ``WEBSIM_CLUSTERS_OUTPUT`` is set."""
        config = websim_config(crawler)
        params = config.clustering
        if not params.output:
            raise NotConfigured("WEBSIM_CLUSTERS_OUTPUT is not set")
        for path in (params.output, params.html_output):
            if path:
                check_output_path(path)  # a folder or a read-only place stops the crawl now
        logger.info(
            "websim clustering enabled: %s pages -> %s%s",
            params.kind,
            params.output,
            f" and {params.html_output}" if params.html_output else "",
        )
        return cls(crawler, params, config.analysis.stemmer)

    def process_item(self, item: Any) -> Any:
        """Remember the item's URL, kind and keywords; the item passes on unchanged."""
        adapter = ItemAdapter(item)
        kept = self.collector.add(
            adapter.get("url"),
            adapter.get("kind"),
            feature_keywords(adapter),
            adapter.get("main_text"),
            adapter.get("language"),
            adapter.get("title"),
        )
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(
            "websim/cluster/pages/kept" if kept else "websim/cluster/pages/skipped"
        )
        return item

    async def close_spider(self) -> None:
        """Cluster the collected pages in a thread and write the report files atomically."""
        stats = self.crawler.stats
        assert stats is not None
        save_state(self.crawler.settings, BUFFER_STATE, self.collector.to_dict())
        try:
            result: ClusteringResult = await maybe_deferred_to_future(
                deferToThread(self._cluster_and_write)
            )
        except (WebsimError, OSError) as exc:
            stats.inc_value("websim/cluster/failed")
            logger.error("websim clustering failed, %s not written: %s", self.params.output, exc)
            return
        for reason, count in result.input_report.skipped.items():
            stats.set_value(f"websim/cluster/skipped/{reason}", count)
        stats.set_value("websim/cluster/documents", len(result.documents))
        stats.set_value("websim/cluster/n_clusters", result.n_clusters)
        if "n_iter" in result.validity:
            stats.set_value("websim/cluster/n_iter", result.validity["n_iter"])
        logger.info(
            "websim clustering: %d page(s) in %d cluster(s) written to %s",
            len(result.documents),
            result.n_clusters,
            self.params.output,
        )

    def _cluster_and_write(self) -> ClusteringResult:
        result = cluster_documents(self.collector.documents, self.params, self.collector.report)
        assert self.params.output is not None
        html = render_html(result) if self.params.html_output else ""
        atomic_write_report(self.params.output, build_report(result), self.params.html_output, html)
        return result
