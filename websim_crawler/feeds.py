"""Durable crawl feeds: Scrapy's file feed storage, writing each item through as it is exported.

Registered for ``file://`` URIs and plain paths (``FEED_STORAGES``), so ``-o``/``-O`` use it.
Scrapy's own file storage writes through a buffered file: a killed crawl loses the items of the
last buffer (up to 8 KiB) while their requests count as done. Here every item reaches the
operating system before the engine finishes its request (``WEBSIM_FEED_FSYNC`` also forces it
to the disk), so a feed cut by a kill is valid JSON Lines up to its last full line.

``-O`` (overwrite) keeps the old feed until the new crawl exports its first item (Scrapy opens
the storage then), and the new crawl then writes in place. Writing beside the feed and renaming
at the end was the other choice; it was not taken because a killed crawl would leave its pages in
a temporary file that nobody reads, while their requests are acknowledged: pages lost. In place,
every page whose request was acknowledged is in the feed at its final path.

While a crawl writes a feed, ``FEED.incomplete`` lies beside it; a clean close removes it, so its
presence tells that the crawl writing the feed was killed (``websim`` readers say so).

A feed path is checked when the crawl starts, before any request: a folder, a missing root
folder or a place that cannot be written stops the crawl with one line (exit code 1). A write
that fails later (a full disk) logs one line, stops the crawl (finish reason
``feed_write_failed``, exit code 1) and drops the items after it, instead of a traceback per item.
From that write on, the requests the engine finishes keep their leases
(:func:`~websim_crawler.frontier.release.keep_leases`): their items are not in the feed, so a
resumed JOBDIR crawl, or another Redis worker, crawls them again. Nothing is lost. For the same
reason a post-processed (compressed) feed, whose items wait in the compressor's buffer, is refused
at start when the crawl has a leasing frontier (JOBDIR or Redis).

JSON Lines feeds in UTF-8 are encoded by orjson (``OrjsonLinesItemExporter``, registered in
``FEED_EXPORTERS``): Scrapy's exporter spent about as much of the crawl's own process on
encoding a page item's HTML as on downloading it.
"""

from __future__ import annotations

import codecs
import logging
import os
from typing import IO, Any

import orjson
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exporters import JsonLinesItemExporter
from scrapy.extensions.feedexport import FileFeedStorage
from scrapy.utils.defer import deferred_from_coro

from websim_crawler.config import websim_config
from websim_crawler.core.io import check_output_path, incomplete_marker, open_feed
from websim_crawler.errors import OutputPathError
from websim_crawler.frontier.release import keep_leases

logger = logging.getLogger(__name__)

_LINE_FORMATS = ("jsonlines", "jsonl", "jl")
FEED_WRITE_FAILED = "feed_write_failed"  # the finish reason of a crawl whose feed failed


class DurableFileFeedStorage(FileFeedStorage):
    """File feed storage that writes each item through (and fsyncs on ``WEBSIM_FEED_FSYNC``)."""

    def __init__(
        self,
        uri: str,
        *,
        feed_options: dict[str, Any] | None = None,
        fsync: bool = False,
        crawler: Crawler | None = None,
    ) -> None:
        super().__init__(uri, feed_options=feed_options)
        self.lines = str((feed_options or {}).get("format", "")).lower() in _LINE_FORMATS
        self.fsync = fsync
        self.crawler = crawler

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> DurableFileFeedStorage:
        """Build the storage with the crawl's ``WEBSIM_FEED_FSYNC``; check its path now.

        Scrapy builds the storage once when the crawl starts (the path still holds its
        ``%(name)s``-style parameters: such a path is checked when it is opened) and once per
        feed file.
        """
        config = websim_config(crawler)
        storage = cls(
            uri, feed_options=feed_options, fsync=config.reliability.feed_fsync, crawler=crawler
        )
        leasing = crawler.settings.get("JOBDIR") or config.distributed.redis_url
        if leasing and (feed_options or {}).get("postprocessing"):
            raise OutputPathError(
                f"the feed {storage.path} is post-processed (compressed): its items wait in the "
                "compressor's buffer, so a killed crawl would lose them while their requests "
                "count as done; with JOBDIR or WEBSIM_REDIS_URL write a plain JSON Lines feed "
                "(the websim commands read .jsonl.gz too: compress it after the crawl)"
            )
        if "%(" not in storage.path:
            check_feed_path(storage.path, append=storage.write_mode == "ab")
        return storage

    def open(self, spider: Spider) -> IO[bytes]:
        """Open the feed unbuffered; mark it incomplete until the crawl closes cleanly."""
        feed = open_feed(
            self.path,
            overwrite=self.write_mode == "wb",
            fsync=self.fsync,
            lines=self.lines,
            on_write_error=self._write_failed,
        )
        incomplete_marker(self.path).touch()
        return feed

    def _write_failed(self, error: OSError) -> None:
        """Log the failed write once and stop the crawl: the items after it cannot be kept."""
        logger.error(
            "cannot write the feed %s: %s; stopping the crawl (the items from here on are "
            "not in the feed)",
            self.path,
            error.strerror or error,
        )
        if self.crawler is None or self.crawler.engine is None:
            return
        keep_leases(self.crawler)  # this item's request, and every one after it, is crawled again
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("websim/feed/write_failed", 1)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=FEED_WRITE_FAILED))

    def store(self, file: IO[bytes]) -> None:
        """Close the feed; it is complete unless a write failed (then its marker stays)."""
        file.close()
        if not getattr(file, "failed", False):
            incomplete_marker(self.path).unlink(missing_ok=True)


def check_feed_path(path: str, *, append: bool) -> None:
    """Raise ``OutputPathError`` unless the crawl can write its feed at ``path``.

    As the other outputs (``check_output_path``): not a folder, the file's own folder creatable
    (never a missing root) and writable; a feed appended to (``-o``) must itself be writable.
    """
    check_output_path(path)
    if append and os.path.exists(path) and not os.access(path, os.W_OK):
        raise OutputPathError(f"cannot append to {path}: the file is read-only")


# Datetimes and dataclass items are left to Scrapy's encoder (``default``), so that they read as
# in Scrapy's feeds (``isoformat``, ItemAdapter); keys that are not strings are written as
# ``json`` writes them.
_ORJSON_OPTIONS = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


class OrjsonLinesItemExporter(JsonLinesItemExporter):
    """Scrapy's JSON Lines exporter, its UTF-8 lines encoded by orjson (about 5x faster on page
    items, which hold a page's HTML).

    The lines read as Scrapy's do (``json.loads`` gives the same values), without the spaces
    after separators. A feed in another encoding, or without one (``FEED_EXPORT_ENCODING``
    unset: ASCII escapes), and an item orjson cannot encode (an integer over 64 bits) go through
    Scrapy's encoder.
    """

    def __init__(self, file: Any, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        encoding = self.encoding
        self._utf8 = encoding is not None and codecs.lookup(encoding).name == "utf-8"

    def export_item(self, item: Any) -> None:
        """Write one item as a line of JSON."""
        if not self._utf8:
            super().export_item(item)
            return
        fields = dict(self.get_serialized_fields(item))
        try:
            line = orjson.dumps(fields, default=self.encoder.default, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:
            super().export_item(item)
            return
        self.file.write(line)
