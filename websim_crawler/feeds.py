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
"""

from __future__ import annotations

import logging
from typing import IO, Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.extensions.feedexport import FileFeedStorage

from websim_crawler.config import websim_config
from websim_crawler.core.io import incomplete_marker, open_feed

logger = logging.getLogger(__name__)

_LINE_FORMATS = ("jsonlines", "jsonl", "jl")


class DurableFileFeedStorage(FileFeedStorage):
    """File feed storage that writes each item through (and fsyncs on ``WEBSIM_FEED_FSYNC``)."""

    def __init__(
        self, uri: str, *, feed_options: dict[str, Any] | None = None, fsync: bool = False
    ) -> None:
        super().__init__(uri, feed_options=feed_options)
        self.lines = str((feed_options or {}).get("format", "")).lower() in _LINE_FORMATS
        self.fsync = fsync

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> DurableFileFeedStorage:
        """Build the storage with the crawl's ``WEBSIM_FEED_FSYNC``."""
        fsync = websim_config(crawler).items.feed_fsync
        return cls(uri, feed_options=feed_options, fsync=fsync)

    def open(self, spider: Spider) -> IO[bytes]:
        """Open the feed unbuffered; mark it incomplete until the crawl closes cleanly."""
        feed = open_feed(
            self.path, overwrite=self.write_mode == "wb", fsync=self.fsync, lines=self.lines
        )
        incomplete_marker(self.path).touch()
        return feed

    def store(self, file: IO[bytes]) -> None:
        """Close the feed; it is complete."""
        file.close()
        incomplete_marker(self.path).unlink(missing_ok=True)
