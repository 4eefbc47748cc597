"""Crawl feeds written durably: each item reaches the operating system whole (optionally fsynced).

A kill leaves valid JSON Lines up to the last full line; appending first removes a line cut short.
While a crawl writes a feed, a marker lies beside it (``FEED.incomplete``).
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def incomplete_marker(path: str | os.PathLike[str]) -> Path:
    """Return the marker that lies beside a feed while a crawl writes it (``FEED.incomplete``)."""
    target = Path(path)
    return target.with_name(f"{target.name}.incomplete")


class FeedFile(io.FileIO):
    """An unbuffered feed file: each ``write`` reaches the operating system whole, then returns.

    With ``fsync`` every write is also forced to the disk (survives a machine crash, not only a
    killed process), at the cost of one disk flush per item.
    """

    def __init__(self, path: str | os.PathLike[str], mode: str, *, fsync: bool) -> None:
        super().__init__(path, mode)
        self.fsync = fsync

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += super().write(view[written:]) or 0
        if self.fsync:
            os.fsync(self.fileno())
        return written


def open_feed(
    path: str | os.PathLike[str], *, overwrite: bool, fsync: bool, lines: bool
) -> FeedFile:
    """Open a crawl feed for writing (``overwrite``: truncate, else append), unbuffered.

    Appending to JSON Lines (``lines``) first removes a last line cut short by an earlier kill, so
    the next item starts on a line of its own; the item of that line was never acknowledged and
    is crawled again.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if lines and not overwrite:
        _remove_cut_last_line(target)
    return FeedFile(target, "wb" if overwrite else "ab", fsync=fsync)


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
