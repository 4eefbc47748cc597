"""The clustering pipeline: collect each page's keywords, cluster them when the crawl closes.

Enabled by ``WEBSIM_CLUSTERS_OUTPUT``; place it after ``PageAnalysisPipeline`` (which writes the
``keywords`` it reads; an item without keywords is analysed in the worker pool). The clustering
runs in a thread so the reactor keeps serving; the stage's contract (JOBDIR journal, failed
output) is ``pipelines._collection``.
"""

from __future__ import annotations

import logging
from typing import Any

from websim_crawler.config import WebsimConfig
from websim_crawler.core.clustering import (
    ClusteringResult,
    DocumentCollector,
    cluster_documents,
    render_html,
    write_report,
)
from websim_crawler.core.stages import ClusterRecord
from websim_crawler.pipelines._collection import CollectionPipeline

logger = logging.getLogger(__name__)


class ClusteringPipeline(CollectionPipeline):
    """Collect (url, kind, keywords, keyword forms) of each item; write the report at the end.

    The forms come ready on the prepared record (tokenised in a worker); ``add`` appends.
    """

    name = "cluster"
    section = "clustering"
    output_setting = "WEBSIM_CLUSTERS_OUTPUT"
    record_fields = tuple(ClusterRecord.__annotations__)
    stage: DocumentCollector

    @classmethod
    def outputs_of(cls, config: WebsimConfig) -> list[str]:
        """Return the JSON report and the HTML report, when asked for."""
        params = config.clustering
        return [path for path in (params.output, params.html_output) if path]

    @classmethod
    def log_enabled(cls, config: WebsimConfig) -> None:
        """Log the clustering's kind and outputs."""
        params = config.clustering
        logger.info(
            "websim clustering enabled: %s pages -> %s%s",
            params.kind,
            params.output,
            f" and {params.html_output}" if params.html_output else "",
        )

    def build_stage(self, config: WebsimConfig) -> DocumentCollector:
        """Return the collector of the pages to cluster."""
        return DocumentCollector(config.clustering.kind)

    def finish_and_write(self) -> ClusteringResult:
        """Cluster the collected pages and write the report files atomically."""
        params = self.config.clustering
        pages, input_report = self.stage.finish()
        result = cluster_documents(pages, params, input_report)
        html = render_html(result) if params.html_output else ""
        write_report(self.output, result, params.html_output, html)
        return result

    def report(self, result: Any) -> None:
        """Set the clustering's stats and log where the report is."""
        stats = self.crawler.stats
        assert stats is not None
        for reason, count in result.input_report.skipped.items():
            stats.set_value(f"websim/cluster/skipped/{reason}", count)
        stats.set_value("websim/cluster/documents", len(result.urls))
        stats.set_value("websim/cluster/n_clusters", result.n_clusters)
        if "n_iter" in result.validity:
            stats.set_value("websim/cluster/n_iter", result.validity["n_iter"])
        logger.info(
            "websim clustering: %d page(s) in %d cluster(s) written to %s",
            len(result.urls),
            result.n_clusters,
            self.output,
        )
