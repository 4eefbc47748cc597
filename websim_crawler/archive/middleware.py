"""The downloader middleware that keeps every fetched response in WARC files.

Enabled by ``WEBSIM_WARC_OUTPUT`` (the add-on lists it; ``-a warc=FOLDER`` on the websim
spiders sets it). It sits at 890 in ``DOWNLOADER_MIDDLEWARES``: its ``process_request`` runs after
cookies, user agent and proxy headers are set, and its ``process_response`` before redirects
(600) and decompression (590), so redirects, retried errors and compressed bodies are kept as
they came, and after the HTTP cache (900), whose cached answers are not fetches and are skipped.

A response is handed on only once its records are on the disk (written and synced by the writer
thread): the engine finishes a request, and a leasing frontier (JOBDIR or Redis) releases it,
only after that. A kill therefore loses no acknowledged fetch; the next run repairs a file cut
mid-record (``core.archive.files``). A write that fails stops the crawl as a failed feed does: no
lease is released from then on, so the fetches not on the disk are crawled again on resume.
"""

from __future__ import annotations

import base64
import importlib.metadata
import json
import logging
import socket
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from warcio.timeutils import datetime_to_iso_date

from websim_crawler import __version__
from websim_crawler.archive.writer import WarcWriterThread, Written
from websim_crawler.config import websim_config
from websim_crawler.core.archive.files import recover_folder
from websim_crawler.core.archive.records import WARC_VERSION, Capture, header_pairs
from websim_crawler.core.io import check_output_path
from websim_crawler.errors import OutputPathError
from websim_crawler.frontier.release import keep_leases

logger = logging.getLogger(__name__)

WARC_WRITE_FAILED = "warc_write_failed"  # the finish reason of a crawl whose WARC write failed
MIDDLEWARE_ORDER = 890
# Scrapy settings worth knowing when reading the archive later (the warcinfo record).
_SETTINGS_OF_INTEREST = (
    "USER_AGENT",
    "ROBOTSTXT_OBEY",
    "DOWNLOAD_MAXSIZE",
    "DOWNLOAD_TIMEOUT",
    "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "DEPTH_LIMIT",
    "CLOSESPIDER_PAGECOUNT",
    "AUTOTHROTTLE_ENABLED",
    "JOBDIR",
)


class WarcWriterMiddleware:
    """Write each fetched response and its request as WARC records; hand the response on once
    they are on the disk."""

    def __init__(self, crawler: Crawler, folder: Path, max_bytes: int) -> None:
        self.crawler = crawler
        self.folder = folder
        self.max_bytes = max_bytes
        self.default_maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self.writer: WarcWriterThread | None = None
        self.waiting: OrderedDict[int, Deferred[None]] = OrderedDict()
        self.failed = False
        from twisted.internet import reactor

        self.reactor: Any = reactor

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcWriterMiddleware:
        """Build the middleware; ``NotConfigured`` unless ``WEBSIM_WARC_OUTPUT`` is set.

        The folder is checked now (one line and exit code 1 when it cannot be written), and the
        files a killed crawl left open in it are repaired.
        """
        params = websim_config(crawler).archive
        if not params.warc_output:
            raise NotConfigured("WEBSIM_WARC_OUTPUT is not set")
        folder = Path(params.warc_output)
        if folder.exists() and not folder.is_dir():
            raise OutputPathError(f"WEBSIM_WARC_OUTPUT={folder} is a file: give a folder")
        check_output_path(folder / ".websim-warc-probe")
        middleware = cls(crawler, folder, params.warc_max_bytes)
        for recovery in recover_folder(folder):
            middleware.count("websim/warc/recovered_files")
            if recovery.dropped_bytes:
                middleware.count("websim/warc/truncated_dropped")
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def count(self, key: str, value: int = 1) -> None:
        """Add ``value`` to the stat ``key``."""
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, value)

    def spider_opened(self, spider: Spider) -> None:
        """Start the writer thread (the first file opens with the first capture)."""
        self.writer = WarcWriterThread(
            self.folder,
            spider.name,
            self.max_bytes,
            self.warcinfo(spider),
            on_written=lambda written: self.reactor.callFromThread(self._written, written),
            on_failed=lambda error: self.reactor.callFromThread(self._failed, error),
        )
        logger.info(
            "writing WARC/%s files to %s (a new file every %d bytes)",
            WARC_VERSION,
            self.folder,
            self.max_bytes,
        )

    def spider_closed(self, spider: Spider) -> None:
        """Complete the current file (every capture was on the disk before its request ended)."""
        if self.writer is not None:
            self.writer.close()

    def warcinfo(self, spider: Spider) -> dict[str, str]:
        """Return the fields of each file's ``warcinfo`` record: software, host, settings."""
        settings = self.crawler.settings
        interest = {name: settings.get(name) for name in _SETTINGS_OF_INTEREST}
        interest.update(websim_config(self.crawler).changed_settings())
        return {
            "software": f"websim-crawler/{__version__} (Scrapy {scrapy.__version__}; warcio "
            f"{importlib.metadata.version('warcio')})",
            "format": f"WARC File Format {WARC_VERSION}",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
            f"warc-format/warc-{WARC_VERSION}/",
            "hostname": socket.gethostname(),
            "isPartOf": spider.name,
            "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
            "http-header-user-agent": str(settings.get("USER_AGENT") or ""),
            "scrapy-settings": json.dumps(interest, sort_keys=True, default=str),
        }

    async def process_response(self, request: Request, response: Response) -> Response:
        """Queue the fetch's records and wait until they are on the disk; then hand it on."""
        if self.failed:
            raise IgnoreRequest("the WARC files could not be written")
        if "cached" in response.flags:  # from HttpCacheMiddleware: not fetched now
            self.count("websim/warc/skipped/cached")
            return response
        maxsize = request.meta.get("download_maxsize", self.default_maxsize)
        if maxsize and len(response.body) > maxsize:
            self.count("websim/warc/skipped/too_large")
            logger.warning(
                "not archived: %s (%d bytes, over the %d of DOWNLOAD_MAXSIZE)",
                response.url,
                len(response.body),
                maxsize,
            )
            return response
        if self.writer is None:  # responses before spider_opened: none in a crawl
            return response
        sequence = self.writer.submit(capture_of(request, response))
        done: Deferred[None] = Deferred()
        self.waiting[sequence] = done
        await maybe_deferred_to_future(done)
        return response

    def _written(self, written: Written) -> None:
        """In the reactor: count a durable group and hand its responses on."""
        self.count("websim/warc/records", written.records)
        self.count("websim/warc/bytes", written.bytes)
        if written.files:
            self.count("websim/warc/files", written.files)
        while self.waiting:
            sequence = next(iter(self.waiting))
            if sequence > written.sequence:
                break
            self.waiting.pop(sequence).callback(None)

    def _failed(self, error: OSError) -> None:
        """In the reactor: stop the crawl; no lease is released from now on."""
        self.failed = True
        logger.error(
            "cannot write the WARC files in %s: %s; stopping the crawl (the fetches from here on "
            "are not archived and stay in the frontier)",
            self.folder,
            error.strerror or error,
        )
        keep_leases(self.crawler)
        self.count("websim/warc/write_failed")
        while self.waiting:
            _, done = self.waiting.popitem(last=False)
            done.errback(IgnoreRequest("the WARC files could not be written"))
        if self.crawler.engine is not None:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=WARC_WRITE_FAILED))


def capture_of(request: Request, response: Response) -> Capture:
    """Take what a fetch sent and received, as plain data for the writer thread."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # The headers twisted's HTTP/1.1 client adds to Scrapy's: Host first, a body's length.
    request_headers = header_pairs(request.headers)
    names = {name.lower() for name, _ in request_headers}
    if b"host" not in names:
        request_headers = ((b"Host", parts.netloc.encode("ascii", "replace")), *request_headers)
    if request.body and b"content-length" not in names:
        request_headers += ((b"Content-Length", str(len(request.body)).encode("ascii")),)
    rendered = bool(request.meta.get("playwright"))
    return Capture(
        url=request.url,
        method=request.method,
        request_target=target,
        request_headers=request_headers,
        request_body=request.body,
        protocol=_status_protocol(response),
        status=response.status,
        response_headers=header_pairs(response.headers),
        body=response.body,
        date=datetime_to_iso_date(datetime.now(UTC).replace(tzinfo=None), use_micros=True),
        rendered=rendered,
        encoding=str(getattr(response, "encoding", None) or "utf-8"),
        screenshot=_screenshot(response) if rendered else None,
    )


def _status_protocol(response: Response) -> str:
    """Return the response's HTTP version for its status line: ``HTTP/1.0`` or ``HTTP/1.1``
    (an HTTP/2 answer, ``h2`` to Scrapy, is kept as HTTP/1.1: WARC has no HTTP/2 framing)."""
    protocol = str(getattr(response, "protocol", None) or "")
    return protocol if protocol in ("HTTP/1.0", "HTTP/1.1") else "HTTP/1.1"


def _screenshot(response: Response) -> bytes | None:
    # Imported here: the browser module needs the [render] extra, which only rendering needs.
    from websim_crawler.browser.playwright_wiring import rendered_screenshot

    shot = rendered_screenshot(response)
    return base64.b64decode(shot) if shot else None
