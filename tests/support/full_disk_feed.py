"""Test helper: a feed storage whose disk is full after ``FULL_DISK_AFTER_ITEMS`` items.

Register it for plain paths in a crawl the test starts (``-s FEED_STORAGES=...`` with this
folder on ``PYTHONPATH``): the first N items are written, every later write fails with ENOSPC,
as a full disk refuses it, through the project's own feed file and its failure handling.
"""

from __future__ import annotations

import errno
import io
import os
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler

from websim_crawler.core.io import incomplete_marker
from websim_crawler.core.io.feed_writer import FeedFile
from websim_crawler.feeds import DurableFileFeedStorage


class _FillingDisk(io.FileIO):
    """A file on a disk with room for ``room`` more writes."""

    room = 0

    def write(self, data: Any) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= 1
        return super().write(data)


class _FullDiskFeedFile(FeedFile, _FillingDisk):
    """The project's feed file on a disk that fills up."""


class FullDiskFeedStorage(DurableFileFeedStorage):
    """The project's feed storage, its disk full after ``FULL_DISK_AFTER_ITEMS`` items."""

    room = 0

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> DurableFileFeedStorage:
        storage = super().from_crawler(crawler, uri, feed_options=feed_options)
        storage.room = crawler.settings.getint("FULL_DISK_AFTER_ITEMS")  # type: ignore[attr-defined]
        return storage

    def open(self, spider: Spider) -> Any:
        feed = _FullDiskFeedFile(
            self.path, self.write_mode, fsync=False, on_write_error=self._write_failed
        )
        feed.room = self.room
        incomplete_marker(self.path).touch()
        return feed
