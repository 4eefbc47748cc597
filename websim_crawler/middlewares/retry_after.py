"""Why a request failed, as a short stats slug, and the wait a 429/503 answer asks for.

``failure_reason`` names each way a fetch can fail (``http_503``, ``timeout``, ``too_large``,
``decompression_bomb``, ``redirect_loop``, ``truncated``, ``connection_lost`` ...); the spiders
count ``websim/pages/failed/<reason>``. ``RetryAfterMiddleware`` makes Scrapy's retry of a
429/503 wait for its ``Retry-After`` (``WEBSIM_RETRY_AFTER_MAX``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus

from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    UnsupportedURLSchemeError,
)
from scrapy.http import Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.error import ConnectionLost, TimeoutError
from twisted.internet.task import deferLater
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from websim_crawler.config import websim_config

_REASONS_BY_TYPE: tuple[tuple[type[BaseException], str], ...] = (
    (DownloadTimeoutError, "timeout"),
    (TimeoutError, "timeout"),
    (DownloadCancelledError, "too_large"),  # the HTTP handler cancels only over DOWNLOAD_MAXSIZE
    (ResponseDataLossError, "truncated"),
    (DownloadConnectionRefusedError, "connection_refused"),
    (CannotResolveHostError, "dns"),
    (DownloadFailedError, "connection_lost"),
    (ResponseFailed, "connection_lost"),
    (ConnectionLost, "connection_lost"),
    (UnsupportedURLSchemeError, "unsupported_scheme"),
)
_IGNORED_BECAUSE = (
    ("max redirections", "redirect_loop"),
    ("during decompression", "decompression_bomb"),
    ("robots.txt", "robots_txt"),
    ("offsite", "offsite"),
)


def failure_reason(failure: Failure) -> str:
    """Return the stats slug of a failed request: ``http_<status>`` or the kind of failure."""
    error = failure.value
    if isinstance(error, HttpError) and error.response is not None:
        return f"http_{error.response.status}"
    for error_type, reason in _REASONS_BY_TYPE:
        if isinstance(error, error_type):
            return reason
    if isinstance(error, IgnoreRequest):
        message = str(error).lower()
        for clue, reason in _IGNORED_BECAUSE:
            if clue in message:
                return reason
        return "ignored"
    name = type(error).__name__ if error is not None else "unknown"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().removesuffix("_error")


def failure_message(failure: Failure) -> str:
    """Return what a person reads about a failed request: ``HTTP 404 Not Found``, or the error.

    Scrapy's ``HttpError`` says only "Ignoring non-200 response", without the status.
    """
    error = failure.value
    if isinstance(error, HttpError) and error.response is not None:
        status = error.response.status
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "(an unknown status)"
        return f"HTTP {status} {phrase}"
    return failure.getErrorMessage()


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Read a Retry-After header: delay seconds or an HTTP date (RFC 9110, section 10.2.3)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class RetryAfterMiddleware:
    """Make Scrapy's retry of a 429/503 answer wait for its Retry-After header.

    Sits just before ``RetryMiddleware`` on the response path: it waits (without blocking
    other requests) and hands the answer on to be retried. A server asking for more than
    ``WEBSIM_RETRY_AFTER_MAX`` seconds is not retried; that answer is counted and given up.
    """

    def __init__(self, crawler: Crawler, longest_wait: float) -> None:
        self.crawler = crawler
        self.longest_wait = longest_wait
        self.max_retry_times = crawler.settings.getint("RETRY_TIMES")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RetryAfterMiddleware:
        """Build the middleware from the crawl settings."""
        return cls(crawler, websim_config(crawler).reliability.retry_after_max)

    async def process_response(self, request: Request, response: Response) -> Response:
        """Wait for Retry-After when a retry will follow; refuse waits that are too long."""
        if response.status not in (429, 503) or request.meta.get("dont_retry", False):
            return response
        retries_left = request.meta.get("max_retry_times", self.max_retry_times) - (
            request.meta.get("retry_times", 0)
        )
        header = response.headers.get(b"Retry-After")
        delay = retry_after_seconds(header.decode("latin-1") if header else None)
        if delay is None or delay <= 0 or retries_left <= 0:
            return response
        stats = self.crawler.stats
        assert stats is not None
        if delay > self.longest_wait:
            stats.inc_value("websim/retry_after/too_long")
            request.meta["dont_retry"] = True
            return response
        stats.inc_value("websim/retry_after/waited")
        from twisted.internet import reactor  # the running one, installed by Scrapy

        await maybe_deferred_to_future(deferLater(reactor, delay, lambda: None))
        return response
