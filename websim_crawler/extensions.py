"""Extensions: ``StatsFile`` (``WEBSIM_STATS_OUTPUT``) writes every stat of a crawl to a JSON file
atomically when the spider closes, for monitoring and CI."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from websim_crawler.config import websim_config
from websim_crawler.core.io import atomic_write_json

logger = logging.getLogger(__name__)


class StatsFile:
    """Extension: write the crawl's stats to ``WEBSIM_STATS_OUTPUT`` (JSON) when it closes."""

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        """Build the extension; ``NotConfigured`` unless ``WEBSIM_STATS_OUTPUT`` is set."""
        path = websim_config(crawler).reliability.stats_output
        if not path:
            raise NotConfigured("WEBSIM_STATS_OUTPUT is not set")
        extension = cls(crawler, path)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider: Spider, reason: str) -> None:
        """Write every stat (dates as ISO 8601 text) to the file, atomically."""
        assert self.crawler.stats is not None
        stats = {key: _json_safe(value) for key, value in self.crawler.stats.get_stats().items()}
        stats.setdefault("finish_reason", reason)
        try:
            atomic_write_json(self.path, dict(sorted(stats.items())))
        except OSError as exc:
            logger.error("cannot write the crawl stats to %s: %s", self.path, exc)


def _json_safe(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return str(value)
