"""Extensions: ``StatsFile`` (``WEBSIM_STATS_OUTPUT``) writes every stat of a crawl to a JSON file
atomically when the spider closes, for monitoring and CI (and a surfacing crawl's coverage curve
beside it, as PNG); ``RefusalSummary`` tells, in one line at
the crawl's end, which pages were refused for their own bounds and which were only deferred."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from itemadapter import ItemAdapter
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from websim_crawler.config import websim_config
from websim_crawler.core.crawling.refusals import RefusedUrls, refusal_summary, refused_counts
from websim_crawler.core.io import atomic_write_bytes, atomic_write_json

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
        if stats.get("websim/surfacing/curve"):
            self.write_coverage_curve(stats)

    def write_coverage_curve(self, stats: dict[str, Any]) -> None:
        """Draw a surfacing crawl's records against result pages, with the estimate, into
        ``<stats file>.surfacing.png``."""
        from websim_crawler.core.surfacing import coverage_png

        points = [(float(x), float(y)) for x, y in stats["websim/surfacing/curve"]]
        bounds = [stats.get(f"websim/surfacing/estimate{end}") for end in ("", "_low", "_high")]
        numbers = [float(bound) for bound in bounds if isinstance(bound, (int, float))]
        estimate = (numbers[0], numbers[1], numbers[2]) if len(numbers) == 3 else None
        picture = coverage_png(
            {"records reached": points},
            title=f"{stats.get('websim/surfacing/queries', 0)} queries; stopped: "
            f"{stats.get('websim/surfacing/stopped', '')}",
            x_label="result pages",
            y_max=max((y for _, y in points), default=1.0),
            estimate=estimate,
        )
        path = f"{self.path}.surfacing.png"
        try:
            atomic_write_bytes(path, picture)
        except OSError as exc:
            logger.error("cannot write the coverage curve to %s: %s", path, exc)


class RefusalSummary:
    """Extension: at the crawl's end, one line of the pages refused for their own bounds (by
    reason, with their first URLs) apart from those deferred and retried under the crawl's
    pressure (``core.crawling.refusal_summary``); a warning when any page was refused."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.refused = RefusedUrls()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RefusalSummary:
        """Build the extension and connect it to the item and close signals."""
        extension = cls(crawler)
        crawler.signals.connect(extension.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def item_dropped(self, item: Any, response: Any, exception: Exception, spider: Spider) -> None:
        """Note a page the analysis dropped (``DropItem("<reason>: ...")``) under its reason."""
        url = ItemAdapter(item).get("url") if ItemAdapter.is_item(item) else None
        url = url if isinstance(url, str) else getattr(response, "url", None)
        self.refused.note(str(exception).split(":", 1)[0], url)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        """Log the line (with the URLs the spider's errbacks noted, when it is one of ours)."""
        assert self.crawler.stats is not None
        stats = self.crawler.stats.get_stats()
        noted = getattr(spider, "refused", None)
        if isinstance(noted, RefusedUrls):
            for why, urls in noted.by_reason.items():
                for url in urls:
                    self.refused.note(why, url)
        line = refusal_summary(stats, self.refused)
        if line is not None:
            level = logging.WARNING if refused_counts(stats) else logging.INFO
            logger.log(level, "%s: %s", spider.name, line)


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
