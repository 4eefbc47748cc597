"""The match stage: every crawled page matched against a reference index of known pages.

Enable it with ``WEBSIM_MATCH_INDEX=refs.idx`` (an index built with ``websim index``) and the
``ITEM_PIPELINES`` entry ``websim_crawler.pipelines.matching.MatchPipeline`` after the analysis
pipeline (its keywords and links are reused), or through ``WebsimAddon``. Each item gets its
``WEBSIM_MATCH_TOP`` best references for the question asked (``WEBSIM_SIMILARITY_QUESTION``;
``auto``: looks-alike) in its ``reference_matches`` field. The page's features are prepared
where it is parsed, once: by the analysis worker with the item's analysis (the stages' prepared
record, ``StageRecords``), or in the records' own pool for an item that did not come through
the analysis; the crawl's process parses no HTML, and matches in a thread, never on the
reactor. Stats: ``websim/match/pages``, ``websim/match/similar`` (pages with a similar
reference), ``websim/match/skipped/<reason>``, ``websim/match/references``,
``websim/match/links_capped``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.reference_index import Match, ReferenceIndex
from websim_crawler.core.similarity.portable import features_from_dict
from websim_crawler.core.stages import StageRecord
from websim_crawler.pipelines._collection import stage_records_of

logger = logging.getLogger(__name__)

MATCHES_FIELD = "reference_matches"


class MatchPipeline:
    """Add each page's best references of the index to the item, with stats."""

    def __init__(self, crawler: Crawler, config: WebsimConfig, index: ReferenceIndex) -> None:
        self.crawler = crawler
        self.config = config
        self.index = index
        self._lock = threading.Lock()  # one query at a time: the index caches decoded pages
        self.records = stage_records_of(crawler)
        self.records.enable("similarity")  # the features, prepared where the page is parsed

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MatchPipeline:
        """Load the index (an unreadable one stops the crawl at start); ``NotConfigured``
        without ``WEBSIM_MATCH_INDEX``."""
        config = websim_config(crawler)
        if not config.matching.index:
            raise NotConfigured("WEBSIM_MATCH_INDEX is not set")
        index = ReferenceIndex.load(config.matching.index, config.similarity, config.matching)
        logger.info("websim match enabled: %d references in %s", len(index), config.matching.index)
        assert crawler.stats is not None
        crawler.stats.set_value("websim/match/references", len(index))
        return cls(crawler, config, index)

    async def process_item(self, item: Any) -> Any:
        """Match the page and write its best references (an unmatchable page is counted)."""
        stats = self.crawler.stats
        assert stats is not None
        adapter = ItemAdapter(item)
        features = None
        if adapter.get(self.config.items.html_field):
            record: StageRecord | str = await self.records.prepared(item)
            features = None if isinstance(record, str) else record.get("similarity_features")
            reason = record if isinstance(record, str) else record.get("similarity_skipped")
        else:
            reason = "no_html"
        if features is None:
            stats.inc_value(f"websim/match/skipped/{reason or 'no_features'}")
            return item
        matches = await maybe_deferred_to_future(deferToThread(self._match, features))
        if isinstance(adapter.item, dict) or MATCHES_FIELD in adapter.field_names():
            adapter[MATCHES_FIELD] = [match.to_dict() for match in matches]
        stats.inc_value("websim/match/pages")
        if self.index.capped_link_queries:
            stats.set_value("websim/match/links_capped", self.index.capped_link_queries)
        if self.index.capped_brand_queries:
            stats.set_value("websim/match/brand_capped", self.index.capped_brand_queries)
        if any(match.verdict == "similar" for match in matches):
            stats.inc_value("websim/match/similar")
        return item

    def _match(self, features: dict[str, Any]) -> list[Match]:
        page = features_from_dict(features)
        with self._lock:
            return self.index.query(page)
