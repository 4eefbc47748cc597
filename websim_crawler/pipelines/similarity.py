"""The pairwise similarity stage: at the end of a crawl, write the collection's similar pairs.

Enable it with ``WEBSIM_SIMILARITY_OUTPUT=pairs.json`` and ``ITEM_PIPELINES`` entry
``websim_crawler.pipelines.similarity.SimilarityPipeline`` (after the analysis pipeline, so the
items carry their keywords). Each page is parsed once when it passes; the pairs are found in a
thread when the spider closes and written atomically.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.io import atomic_write_json, check_output_path
from websim_crawler.core.similarity.collection import PageCollector
from websim_crawler.core.similarity.pairs import find_similar_pairs

logger = logging.getLogger(__name__)


class SimilarityPipeline:
    """Collect each page's similarity features; find and write the similar pairs at the end."""

    def __init__(self, crawler: Crawler, config: WebsimConfig, output: str) -> None:
        self.crawler = crawler
        self.config = config
        self.output = output
        self.collector = PageCollector(
            config.similarity, config.analysis, html_field=config.items.html_field
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimilarityPipeline:
        """Build the stage; ``NotConfigured`` when ``WEBSIM_SIMILARITY_OUTPUT`` is unset."""
        config = websim_config(crawler)
        output = config.similarity.output
        if not output:
            raise NotConfigured("WEBSIM_SIMILARITY_OUTPUT is not set")
        check_output_path(output)  # a folder or a read-only place stops the crawl now
        logger.info("websim pairwise similarity enabled, writing %s", output)
        return cls(crawler, config, output)

    def process_item(self, item: Any) -> Any:
        """Keep the page's features (parsed once); the item passes unchanged."""
        stats = self.crawler.stats
        assert stats is not None
        features = self.collector.add(ItemAdapter(item))
        if isinstance(features, str):
            stats.inc_value(f"websim/similarity/skipped/{features}")
            return item
        for problem in features.problems:
            stats.inc_value(f"websim/similarity/problems/{problem.split(':', 1)[0]}")
        stats.inc_value("websim/similarity/pages")
        return item

    async def close_spider(self) -> None:
        """Find the similar pairs in a thread and write them atomically."""
        result = await maybe_deferred_to_future(threads.deferToThread(self._find_and_write))
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value("websim/similarity/candidate_pairs", result[0])
        stats.set_value("websim/similarity/similar_pairs", result[1])
        stats.set_value("websim/similarity/identical_groups", result[2])
        stats.set_value("websim/similarity/capped_buckets", result[3])

    def _find_and_write(self) -> tuple[int, int, int, int]:
        pairs = find_similar_pairs(self.collector.pages, self.config.similarity)
        atomic_write_json(self.output, pairs.to_dict())
        logger.info(
            "wrote %d similar pairs of %d pages (%d candidate pairs) to %s",
            len(pairs.pairs),
            pairs.pages,
            pairs.candidate_pairs,
            self.output,
        )
        return (
            pairs.candidate_pairs,
            len(pairs.pairs),
            len(pairs.identical_groups),
            pairs.capped_buckets,
        )
