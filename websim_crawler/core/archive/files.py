"""The WARC files of one writer: names that sort, size rotation, and repair after a kill.

A file is written as ``NAME.warc.gz.open`` under an exclusive ``flock`` and renamed to
``NAME.warc.gz`` once it is complete (rotated or closed), the convention of Heritrix. A writer
killed mid-record leaves its ``.open`` file, its lock released by the kernel; the next writer in
the folder (:func:`recover_folder`) takes the lock, keeps the file up to its last whole gzip
member (each record is one member), truncates the rest, and gives it its final name. A file whose
lock is held belongs to a live writer (another worker sharing the folder) and is left alone.

Names: ``PREFIX-TIMESTAMP-SERIAL-PID~HOST.warc.gz``, the timestamp (UTC, to the microsecond) of
the file's opening and a serial within the run, so a listing sorted by name is the crawl's order.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

SUFFIX = ".warc.gz"
OPEN_SUFFIX = SUFFIX + ".open"
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
_READ_CHUNK = 1 << 20
_FEED = 16 * 1024
_WARC_START = b"WARC/"
_RECORD_END = b"\r\n\r\n"


def name_safe(text: str) -> str:
    """Return ``text`` with every run of characters other than letters, digits, '.' and '-'
    replaced by '-' (a host or spider name, safe in a file name)."""
    return _UNSAFE.sub("-", text).strip("-") or "websim"


def warc_file_name(prefix: str, serial: int, when: datetime | None = None) -> str:
    """Return the final name of the ``serial``-th file of this process, opened ``when``."""
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d%H%M%S%f")
    host = name_safe(socket.gethostname())
    return f"{name_safe(prefix)}-{stamp}-{serial:05d}-{os.getpid()}~{host}{SUFFIX}"


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class WarcFile:
    """One WARC file being written: appended to, synced, finally renamed to its final name."""

    def __init__(self, folder: Path, name: str) -> None:
        self.final_path = folder / name
        self.path = folder / (name + ".open")
        self.handle: BinaryIO = open(self.path, "xb", buffering=0)  # noqa: SIM115
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        _sync_folder(folder)  # the file exists after a machine crash too
        self.size = 0

    def append(self, data: bytes) -> None:
        """Write ``data`` at the end (looped until complete)."""
        view = memoryview(data)
        while view:
            written = self.handle.write(view)
            if not written:
                raise OSError(f"no progress writing {self.path}")
            view = view[written:]
        self.size += len(data)

    def sync(self) -> None:
        """Force what was appended to the disk."""
        os.fsync(self.handle.fileno())

    def complete(self) -> Path:
        """Sync, close and give the file its final name; return it."""
        self.sync()
        self.handle.close()
        os.replace(self.path, self.final_path)
        _sync_folder(self.final_path.parent)
        return self.final_path


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover_file` did to a file a killed writer left."""

    path: Path | None  # the completed file, None when nothing whole was left (file removed)
    records: int  # whole records kept
    dropped_bytes: int  # bytes of the cut last record, truncated


def whole_members_end(handle: BinaryIO) -> tuple[int, int]:
    """Return ``(records, offset)``: the whole WARC records (gzip members) at the start of the
    file and the offset where the last of them ends.

    A member is whole when its deflate stream ends with a good CRC and its text starts with
    ``WARC/`` and ends with the record's closing blank line. Reading stops at the first member
    that is not. The compressed bytes are fed in slices of 16 KiB, so what one slice inflates
    to stays bounded (deflate expands at most about 1,000 times) without zlib's ``max_length``,
    whose leftovers are unreliable once a stream has ended.
    """
    handle.seek(0)
    records = end = 0
    buffer = b""  # read from the file, not yet given to a decompressor; starts at ``offset``
    offset = 0
    while True:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        head = tail = b""
        fed = 0  # bytes of this member given to the decompressor
        while not decompressor.eof:
            if fed >= len(buffer):
                more = handle.read(_READ_CHUNK)
                if not more:
                    return records, end
                buffer = buffer[fed:] + more
                offset += fed
                fed = 0
            piece = buffer[fed : fed + _FEED]
            fed += len(piece)
            try:
                out = decompressor.decompress(piece)
            except zlib.error:
                return records, end
            if len(head) < len(_WARC_START):
                head += out[: len(_WARC_START)]
            tail = (tail + out[-len(_RECORD_END) :])[-len(_RECORD_END) :]
        fed -= len(decompressor.unused_data)  # the next member's first bytes
        if not head.startswith(_WARC_START) or tail != _RECORD_END:
            return records, end
        records += 1
        end = offset + fed
        buffer = buffer[fed:]
        offset += fed


def recover_file(path: Path) -> Recovery | None:
    """Repair an ``.open`` file a killed writer left; ``None`` if a live writer holds it."""
    with open(path, "r+b", buffering=0) as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        records, end = whole_members_end(handle)
        size = os.fstat(handle.fileno()).st_size
        if end < size:
            handle.truncate(end)
            os.fsync(handle.fileno())
    final = path.with_name(path.name[: -len(".open")])
    if records == 0:
        path.unlink()
        _sync_folder(path.parent)
        return Recovery(None, 0, size)
    os.replace(path, final)
    _sync_folder(path.parent)
    return Recovery(final, records, size - end)


def recover_folder(folder: Path) -> list[Recovery]:
    """Repair every ``.open`` file of ``folder`` no live writer holds (see :func:`recover_file`)."""
    recovered = []
    for path in sorted(folder.glob("*" + OPEN_SUFFIX)):
        recovery = recover_file(path)
        if recovery is None:
            continue
        recovered.append(recovery)
        logger.warning(
            "WARC file %s was left open by a stopped crawl: %d whole record(s) kept%s",
            path,
            recovery.records,
            f", a cut last record of {recovery.dropped_bytes} bytes dropped"
            if recovery.dropped_bytes
            else "",
        )
    return recovered
