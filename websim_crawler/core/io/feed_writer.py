"""Crawl feeds written durably: each item reaches the operating system whole (optionally fsynced).

A kill leaves valid JSON Lines up to the last full line; appending first removes a line cut short.
While a crawl writes a feed, a marker lies beside it (``FEED.incomplete``).
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websim_crawler.core.io.output_folder import make_own_folder

logger = logging.getLogger(__name__)


def incomplete_marker(path: str | os.PathLike[str]) -> Path:
    """Return the marker that lies beside a feed while a crawl writes it (``FEED.incomplete``)."""
    target = Path(path)
    return target.with_name(f"{target.name}.incomplete")


class FeedFile(io.FileIO):
    """An unbuffered feed file: each ``write`` reaches the operating system whole, then returns.

    With ``fsync`` every write is also forced to the disk (survives a machine crash, not only a
    killed process), at the cost of one disk flush per item. A write the system refuses (a full
    disk, a file size limit) is handed once to ``on_write_error`` when one is given: the part of
    it that was written is removed, and the file takes no more writes (``failed``), so one error
    stands for every item after it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str,
        *,
        fsync: bool,
        on_write_error: Callable[[OSError], None] | None = None,
    ) -> None:
        super().__init__(path, mode)
        self.fsync = fsync
        self.on_write_error = on_write_error
        self.failed = False

    def write(self, data: Any) -> int:
        if self.failed:
            return 0
        view = memoryview(data).cast("B")
        written = 0
        try:
            while written < len(view):
                written += super().write(view[written:]) or 0
            if self.fsync:
                os.fsync(self.fileno())
        except OSError as exc:
            if self.on_write_error is None:
                raise
            self.failed = True
            self._cut_back(written)
            self.on_write_error(exc)
            return 0
        return written

    def _cut_back(self, written: int) -> None:
        """Remove the part of a failed write that reached the file: no item is left cut short."""
        try:
            self.truncate(self.tell() - written)
        except OSError:
            logger.warning(
                "%s: could not remove the %d bytes of a failed write", self.name, written
            )


def open_feed(
    path: str | os.PathLike[str],
    *,
    overwrite: bool,
    fsync: bool,
    lines: bool,
    on_write_error: Callable[[OSError], None] | None = None,
) -> FeedFile:
    """Open a crawl feed for writing (``overwrite``: truncate, else append), unbuffered.

    Appending to JSON Lines (``lines``) first removes a last line cut short by an earlier kill, so
    the next item starts on a line of its own; the item of that line was never acknowledged and
    is crawled again.
    """
    target = Path(path)
    make_own_folder(target)
    if lines and not overwrite:
        _remove_cut_last_line(target)
    return FeedFile(target, "wb" if overwrite else "ab", fsync=fsync, on_write_error=on_write_error)


def _remove_cut_last_line(path: Path) -> None:
    try:
        handle = path.open("rb+")
    except FileNotFoundError:
        return
    with handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            block = handle.read(end - start)
            if end == size and block.endswith(b"\n"):
                return
            newline = block.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        handle.truncate(end)
        logger.info(
            "%s: removed a last line cut short (%d bytes) before appending", path, size - end
        )
