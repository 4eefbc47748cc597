"""What the one reader (``cli._inputs``) reads with: pages, crawl feeds and their bounds.

``read_page`` reads one page (a file, gzip bytes or an http(s) URL), ``FeedReader`` the records
of JSON Lines feeds (``.gz`` too). Every read is bounded: bytes per page
(``WEBSIM_MAX_PAGE_BYTES``, the limit a crawl's analysis applies), bytes per feed line
(``WEBSIM_MAX_RECORD_BYTES``) and the wait for a URL (``WEBSIM_FETCH_TIMEOUT``). A source that
cannot be used is a ``PageError`` (pages: counted, the others go on) or an ``InputFormatError``
naming the file and the fix. Folders, patterns and telling a file by its content are
``cli._inputs``'s.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import socket
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from websim_crawler.config import InputParams, WebsimConfig
from websim_crawler.core.io import FeedLine, ReadReport, iter_feeds
from websim_crawler.errors import InputFormatError, PageError

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 4096
_FEED_FIX = "give the JSON Lines a crawl writes with -O pages.jsonl"
# Lines left out that lose nothing: a URL read before, the last line a killed crawl cut short
# (its item was never acknowledged and is crawled again on resume).
_EXPECTED_SKIPS = frozenset({"duplicate_url", "cut_last_line"})
_FIELDS = ("url", "html", "links", "keyword_stems", "screenshot")  # what record_problem reads


def is_url(location: str) -> bool:
    """Tell whether a source is an http(s) URL rather than a path."""
    return location.startswith(("http://", "https://"))


def location_url(location: str) -> str:
    """Return the URL of a source: the URL itself, or the ``file:`` URI of a path."""
    return location if is_url(location) else Path(location).resolve().as_uri()


@dataclass(frozen=True)
class PageSource:
    """The bytes of one page and where they came from."""

    location: str
    body: bytes
    content_type: str | None
    url: str


def _is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # vanished or unreadable: reading it reports why


def read_page(location: str, config: WebsimConfig) -> PageSource:
    """Read one page (file, gzip file or URL), at most ``WEBSIM_MAX_PAGE_BYTES`` of it.

    Raise ``PageError`` with reason ``unreachable``, ``unreadable`` or ``too_large``.
    """
    limit = config.analysis.max_page_bytes
    if is_url(location):
        return _fetch(location, config.inputs.fetch_timeout, limit)
    if not _is_regular_file(Path(location)):  # a FIFO would block the read forever
        raise PageError("unreadable", f"cannot read {location}: not a regular file")
    try:
        with open(location, "rb") as handle:
            body = _bounded_read(location, handle, limit)
    except (OSError, EOFError) as exc:
        message = getattr(exc, "strerror", None) or exc
        raise PageError("unreadable", f"cannot read {location}: {message}") from exc
    return PageSource(location, body, None, location_url(location))


def _fetch(url: str, timeout: float, limit: int) -> PageSource:
    """Fetch a page over http(s) within ``timeout`` seconds for the whole response.

    The socket's own timeout bounds each read only (a server sending a byte a second never
    trips it): a timer shuts the connection's sockets down at the deadline, which ends any
    read in progress. ``urllib.request`` is imported only for URLs (start-up).
    """
    import http.client
    import ssl
    import threading
    import urllib.request

    sockets: list[socket.socket] = []

    class DeadlineHTTPConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)

    class DeadlineHTTPSConnection(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)

    class DeadlineHTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(DeadlineHTTPConnection, req)

    class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            context = ssl.create_default_context()
            return self.do_open(DeadlineHTTPSConnection, req, context=context)

    def expire() -> None:
        expired.set()
        for connection in list(sockets):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    opener = urllib.request.build_opener(DeadlineHTTPHandler, DeadlineHTTPSHandler)
    request = urllib.request.Request(url, headers={"User-Agent": "websim-crawler"})
    expired = threading.Event()
    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        with opener.open(request, timeout=timeout) as response:
            body = _bounded_read(url, response, limit)
            if expired.is_set():  # a body cut by the shutdown can look complete
                raise TimeoutError
            return PageSource(url, body, response.headers.get("Content-Type"), response.geturl())
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
        if expired.is_set():
            message = f"no complete response within {timeout:g} s (WEBSIM_FETCH_TIMEOUT)"
            raise PageError("unreachable", f"cannot fetch {url}: {message}") from exc
        raise PageError("unreachable", f"cannot fetch {url}: {exc}") from exc
    finally:
        timer.cancel()


def _bounded_read(location: str, stream: BinaryIO, limit: int) -> bytes:
    """Read at most ``limit`` bytes of a page, decompressed when they are gzip data."""
    body = stream.read(limit + 1)
    if body[:2] == _GZIP_MAGIC and len(body) <= limit:
        body = gzip.GzipFile(fileobj=io.BytesIO(body), mode="rb").read(limit + 1)
    if len(body) > limit:
        raise PageError("too_large", f"{location} has over {limit:,} bytes (WEBSIM_MAX_PAGE_BYTES)")
    return body


class FeedReader:
    """Read the records of crawl feeds, each feed checked before the work starts.

    A feed that is missing, a folder, binary or an HTML page is reported by ``failed`` (one
    line naming it and the fix) and left out; when no feed is usable, ``InputFormatError``. A URL
    found in several records (two workers' feeds, a resumed crawl) is read once. A record whose
    url, html, links, keywords or screenshot has the wrong type is skipped as ``bad_<field>``,
    in every command alike.
    """

    def __init__(self, paths: Sequence[str], limits: InputParams, html_field: str = "html") -> None:
        self.limits = limits
        self.html_field = html_field
        self.report = ReadReport()
        self.failed: list[str] = []
        self.paths: list[str] = []
        for path in paths:
            problem = feed_problem(path)
            if problem is None:
                self.paths.append(path)
            else:
                self.failed.append(problem)
        if not self.paths:
            raise InputFormatError("; ".join(self.failed))

    def __iter__(self) -> Iterator[FeedLine]:
        """Yield the records of every feed, each URL once (the first; repeats are counted)."""
        # Imported here: the similarity package loads the optimal-transport and scipy stacks,
        # which 'websim extract' (pages, not feeds) never needs.
        from websim_crawler.core.similarity.collection import record_problem

        fields = ("url", self.html_field, "links", "keyword_stems", "screenshot")
        try:
            for record in iter_feeds(self.paths, self.report, self.limits.max_record_bytes):
                problem = record_problem(dict(zip(_FIELDS, map(record.get, fields), strict=True)))
                if problem is not None and problem.startswith("bad_"):
                    self.report.records -= 1
                    self.report.skip(problem)
                    continue
                yield record
        except InputFormatError as exc:  # a feed that broke while read (a cut gzip stream)
            self.failed.append(str(exc))

    def check_read(self) -> None:
        """Raise ``InputFormatError`` when the feeds held no record at all."""
        if self.report.records:
            return
        names = ", ".join(self.paths)
        skipped = sum(self.report.skipped.values())
        if skipped:
            malformed = sum(
                count for reason, count in self.report.skipped.items() if reason[:4] == "bad_"
            )
            what = (
                f"{skipped} line(s) are not JSON objects"
                if not malformed
                else f"{skipped} line(s) skipped, {malformed} with fields of the wrong type"
            )
            raise InputFormatError(f"{names}: no JSON Lines record ({what}); {_FEED_FIX}")
        raise InputFormatError(f"{names} is empty: no page to work on; {_FEED_FIX}")

    def problems(self) -> list[str]:
        """Return one line per unusable feed and per kind of skipped line (for stderr)."""
        lines = list(self.failed)
        malformed = {
            reason: count for reason, count in self.report.skipped.items() if reason[:4] == "bad_"
        }
        for reason, count in sorted(self.report.skipped.items()):
            if reason not in _EXPECTED_SKIPS and reason not in malformed:
                lines.append(f"{count} feed line(s) skipped: {reason.replace('_', ' ')}")
        if malformed:
            lines.append(
                f"{sum(malformed.values())} record(s) with fields of the wrong type skipped ("
                + ", ".join(f"{count} {reason}" for reason, count in sorted(malformed.items()))
                + ")"
            )
        return lines


def feed_problem(path: str) -> str | None:
    """Return why ``path`` is not a readable JSON Lines feed (with the fix), or ``None``."""
    feed = Path(path)
    if feed.is_dir():
        return f"{path} is a folder: give the crawl feed file in it (pages.jsonl)"
    try:
        with open(feed, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
        if head[:2] == _GZIP_MAGIC:
            with gzip.open(feed, "rb") as unpacked:
                head = unpacked.read(_SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        message = getattr(exc, "strerror", None) or exc
        return f"cannot read {path}: {message}"
    if b"\0" in head or not _is_utf8_start(head):
        return f"{path} is binary data, not a JSON Lines feed; {_FEED_FIX}"
    if head.lstrip()[:1] == b"<":
        return (
            f"{path} is an HTML page, not a JSON Lines feed: make a feed of pages with "
            f"'websim extract {path} -o pages.jsonl', or {_FEED_FIX}"
        )
    return None


def _is_utf8_start(head: bytes) -> bool:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def count_line(read: int, skipped: Mapping[str, int]) -> str:
    """Return the count line of a command's reading: "N page(s) read, M left out: reasons"
    (a feed's last line cut by a kill is not a page left out: it is told with the feed)."""
    left = {
        reason: count for reason, count in skipped.items() if count and reason != "cut_last_line"
    }
    line = f"{read} page(s) read, {sum(left.values())} left out"
    if left:
        line += ": " + ", ".join(f"{count} {reason}" for reason, count in sorted(left.items()))
    return line
