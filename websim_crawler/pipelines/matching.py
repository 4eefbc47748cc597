"""The match stage: every crawled page matched against a reference index of known pages.

Enable it with ``WEBSIM_MATCH_INDEX=refs.idx`` (an index built with ``websim index``) and the
``ITEM_PIPELINES`` entry ``websim_crawler.pipelines.matching.MatchPipeline`` after the analysis
pipeline (its keywords and links are reused), or through ``WebsimAddon``. Each item gets its
``WEBSIM_MATCH_TOP`` best references for the question asked (``WEBSIM_SIMILARITY_QUESTION``;
``auto``: looks-alike) in its ``reference_matches`` field; the page is parsed and matched in a
thread, never on the reactor. Stats: ``websim/match/pages``, ``websim/match/similar`` (pages
with a similar reference), ``websim/match/skipped/<reason>``, ``websim/match/references``.
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
from websim_crawler.core.similarity.collection import record_problem
from websim_crawler.core.similarity.comparison import features_from_item

logger = logging.getLogger(__name__)

MATCHES_FIELD = "reference_matches"


class MatchPipeline:
    """Add each page's best references of the index to the item, with stats."""

    def __init__(self, crawler: Crawler, config: WebsimConfig, index: ReferenceIndex) -> None:
        self.crawler = crawler
        self.config = config
        self.index = index
        self._lock = threading.Lock()  # one query at a time: the index caches decoded pages

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
        fields = {
            "url": adapter.get("url"),
            "html": adapter.get(self.config.items.html_field),
            "links": adapter.get("links"),
            "keywords": adapter.get("keywords"),
            "keyword_stems": adapter.get("keyword_stems"),
            "screenshot": adapter.get("screenshot"),
        }
        reason = record_problem(fields) or (None if fields["html"] else "no_html")
        if reason is not None:
            stats.inc_value(f"websim/match/skipped/{reason}")
            return item
        matches = await maybe_deferred_to_future(deferToThread(self._match, fields))
        if isinstance(adapter.item, dict) or MATCHES_FIELD in adapter.field_names():
            adapter[MATCHES_FIELD] = [match.to_dict() for match in matches]
        stats.inc_value("websim/match/pages")
        if any(match.verdict == "similar" for match in matches):
            stats.inc_value("websim/match/similar")
        return item

    def _match(self, fields: dict[str, Any]) -> list[Match]:
        page = features_from_item(fields, self.config.similarity, self.config.analysis)
        with self._lock:
            return self.index.query(page)
