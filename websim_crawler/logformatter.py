"""Scrapy's ``LOG_FORMATTER`` for websim items: one short line per item, never its HTML.

Scrapy's default formatter prints every scraped or dropped item whole (HTML, chunks and all) at
its default log level; this one prints the URL, the kind, the length of the main text and the
number of keywords. Use it in any project: ``LOG_FORMATTER =
"websim_crawler.logformatter.ItemSummaryLogFormatter"``. :func:`report_errors_plainly` makes a
start-up ``WebsimError`` or a download failure one log line instead of a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy import Spider
from scrapy import exceptions as scrapy_exceptions
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from websim_crawler.errors import WebsimError

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


# Download failures whose message says it all (refused, unresolvable host, timeout, lost data):
# Scrapy logs them with a traceback of its own machinery, which tells a user nothing more.
_DOWNLOAD_ERRORS = (
    scrapy_exceptions.DownloadConnectionRefusedError,
    scrapy_exceptions.CannotResolveHostError,
    scrapy_exceptions.DownloadTimeoutError,
    scrapy_exceptions.DownloadFailedError,
    scrapy_exceptions.ResponseDataLossError,
    ConnectionError,
    TimeoutError,
)


class _PlainErrors(logging.Filter):
    """Turn a logged traceback of a ``WebsimError`` or a download failure into one line.

    A ``WebsimError`` is shown under the project's logger name (``[websim_crawler]``), not under
    the event loop's that happened to log it (``[asyncio]``).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, WebsimError):
            record.msg = "%s: %s"
            record.args = (type(error).__name__, error)
            record.name = "websim_crawler"  # the project's error, not asyncio's or Twisted's
        elif not isinstance(error, _DOWNLOAD_ERRORS):
            return True
        record.exc_info = None
        record.exc_text = None
        return True


_PLAIN_ERRORS = _PlainErrors()


def report_errors_plainly() -> None:
    """Make start-up ``WebsimError``s and download failures show as one line, not a traceback.

    ``scrapy crawl`` logs an exception raised while the spider is built through asyncio's
    "Task exception was never retrieved" (or Twisted's "Unhandled error"); the message already
    names the argument and the fix, so the traceback only hides it. Scrapy's robots.txt
    middleware and scraper log an unreachable page's connection error with its traceback too.
    """
    for logger_name in (
        "asyncio",
        "twisted",
        "scrapy.downloadermiddlewares.robotstxt",
        "scrapy.core.scraper",
    ):
        target = logging.getLogger(logger_name)
        if _PLAIN_ERRORS not in target.filters:
            target.addFilter(_PLAIN_ERRORS)
