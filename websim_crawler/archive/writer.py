"""The writer thread: builds, compresses, appends and syncs records off the crawl's reactor.

Captures are queued with a sequence number. The thread takes every capture waiting (a group, as
databases commit), writes their records to the current file (rotating it by size), syncs the
file once, and then reports the group's last sequence number as durable: a fetch is
acknowledged only after its records are on the disk, and one ``fsync`` serves every capture
that arrived meanwhile. A failed write (a full disk) is reported once; nothing is written after
it.
"""

from __future__ import annotations

import io
import logging
import queue
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from warcio.warcwriter import WARCWriter

from websim_crawler.core.archive.files import WarcFile, warc_file_name
from websim_crawler.core.archive.records import WARC_VERSION, Capture, write_capture, write_warcinfo

logger = logging.getLogger(__name__)

_STOP = object()
_GROUP_MAX = 256  # captures written under one fsync at most
# zlib's default level: on the article-extraction-benchmark pages it compresses 1.6x faster
# than warcio's own level 9 to within 1 % of its size (0.198 of the HTML against 0.196).
GZIP_LEVEL = 6


@dataclass(frozen=True)
class Written:
    """What one group added: its last sequence number, records, compressed bytes, new files."""

    sequence: int
    records: int
    bytes: int
    files: int


class GzipMembers:
    """A file for warcio's ``WARCWriter(gzip=False)``: each record, which warcio ends with a
    ``flush``, becomes its own gzip member (record-level gzip, as ``gzip=True`` makes them, at
    :data:`GZIP_LEVEL` rather than warcio's fixed 9)."""

    def __init__(self) -> None:
        self.members = io.BytesIO()
        self.record: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.record.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        if self.record:
            compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            for part in self.record:
                self.members.write(compressor.compress(part))
            self.members.write(compressor.flush())
            self.record = []

    def getvalue(self) -> bytes:
        self.flush()
        return self.members.getvalue()


def _writer(out: GzipMembers) -> WARCWriter:
    return WARCWriter(out, gzip=False, warc_version=WARC_VERSION)


def serialise(capture: Capture) -> tuple[bytes, int]:
    """Return the records of ``capture``, each its own gzip member, and how many there are."""
    out = GzipMembers()
    records = write_capture(_writer(out), capture)
    return out.getvalue(), records


class WarcWriterThread:
    """Write captures to rotating WARC files in a thread; report durable groups and failures.

    ``on_written`` and ``on_failed`` are called in the writer thread.
    """

    file_type: type[WarcFile] = WarcFile  # the tests put a file that fails in its place

    def __init__(
        self,
        folder: Path,
        prefix: str,
        max_bytes: int,
        warcinfo: Mapping[str, str],
        on_written: Callable[[Written], None],
        on_failed: Callable[[OSError], None],
    ) -> None:
        self.folder = folder
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.warcinfo = dict(warcinfo)
        self.on_written = on_written
        self.on_failed = on_failed
        self.file: WarcFile | None = None
        self.serial = 0
        self.sequence = 0
        self.failed = False
        self.queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="websim-warc-writer", daemon=True)
        self.thread.start()

    def submit(self, capture: Capture) -> int:
        """Queue ``capture``; return its sequence number (reported by ``on_written``)."""
        self.sequence += 1
        self.queue.put((self.sequence, capture))
        return self.sequence

    def close(self) -> None:
        """Write what is queued, complete the current file and stop the thread."""
        self.queue.put(_STOP)
        self.thread.join()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            group: list[tuple[int, Capture]] = []
            item = self.queue.get()
            while True:
                if item is _STOP:
                    stopping = True
                    break
                group.append(item)  # type: ignore[arg-type]
                if len(group) >= _GROUP_MAX:
                    break
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
            if group and not self.failed:
                self._write_group(group)
        if self.file is not None and not self.failed:
            try:
                self.file.complete()
            except OSError as error:
                self._fail(error)

    def _write_group(self, group: list[tuple[int, Capture]]) -> None:
        records = size = files = 0
        try:
            for _, capture in group:
                warcinfo_size = self._rotate_if_full()
                if warcinfo_size:  # a new file and its warcinfo record
                    files += 1
                    records += 1
                    size += warcinfo_size
                assert self.file is not None
                data, count = serialise(capture)
                self.file.append(data)
                records += count
                size += len(data)
            assert self.file is not None
            self.file.sync()
        except OSError as error:
            self._fail(error)
            return
        self.on_written(Written(group[-1][0], records, size, files))

    def _rotate_if_full(self) -> int:
        """Open the first file, or the next one once the current holds ``max_bytes``; return the
        size of the new file's ``warcinfo`` record (0: no file opened)."""
        if self.file is not None and self.file.size < self.max_bytes:
            return 0
        if self.file is not None:
            self.file.complete()
        name = warc_file_name(self.prefix, self.serial)
        self.serial += 1
        self.file = self.file_type(self.folder, name)
        out = GzipMembers()
        write_warcinfo(_writer(out), name, self.warcinfo)
        self.file.append(out.getvalue())
        return self.file.size

    def _fail(self, error: OSError) -> None:
        self.failed = True
        self.on_failed(error)
