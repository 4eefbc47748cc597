"""Scrapy's ``LOG_FORMATTER`` for websim items: one short line per item, never its HTML.

Scrapy's default formatter prints every scraped or dropped item whole (HTML, chunks and all) at
its default log level; this one prints the URL, the kind, the length of the main text and the
number of keywords. Use it in any project: ``LOG_FORMATTER =
"websim_crawler.logformatter.ItemSummaryLogFormatter"``.
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy import Spider
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

_Source = Response | Failure | None  # what an item came from


def item_summary(item: Any, response_url: str | None = None) -> str:
    """Return one short line about an item: URL (unless the response's), kind, main-text
    length, keyword count."""
    if not is_item(item):
        return f"{type(item).__name__} object"
    adapter = ItemAdapter(item)
    url = adapter.get("url")
    parts: list[str] = [] if url and url == response_url else [str(url or "(no url)")]
    if adapter.get("kind"):
        parts.append(f"kind={adapter['kind']}")
    main_text = adapter.get("main_text")
    if isinstance(main_text, str):
        parts.append(f"main_text={len(main_text)} chars")
    keywords = adapter.get("keywords")
    if isinstance(keywords, dict):
        parts.append(f"keywords={len(keywords)}")
    return " ".join(parts)


class ItemSummaryLogFormatter(LogFormatter):
    """Log scraped, dropped and failed items as one line each (see ``item_summary``)."""

    def scraped(self, item: Any, response: _Source, spider: Spider) -> LogFormatterResult:
        """Log a scraped item as its summary line."""
        result = super().scraped(item, response, spider)
        result["msg"] = "Scraped from %(src)s: %(item)s"
        summary = item_summary(item, response.url if isinstance(response, Response) else None)
        result["args"] = {**result["args"], "item": summary}  # type: ignore[dict-item]
        return result

    def dropped(
        self, item: Any, exception: BaseException, response: _Source, spider: Spider
    ) -> LogFormatterResult:
        """Log a dropped item as the reason and its summary line."""
        result = super().dropped(item, exception, response, spider)
        result["msg"] = "Dropped: %(exception)s [%(item)s]"
        result["args"] = {**result["args"], "item": item_summary(item)}  # type: ignore[dict-item]
        return result

    def item_error(
        self, item: Any, exception: BaseException, response: _Source, spider: Spider
    ) -> LogFormatterResult:
        """Log an item a pipeline failed on as its summary line (the traceback follows)."""
        result = super().item_error(item, exception, response, spider)
        result["args"] = {**result["args"], "item": item_summary(item)}  # type: ignore[dict-item]
        return result
