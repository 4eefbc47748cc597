"""What the WARC tests share: a demo site that gzips its pages and remembers every body it sent,
the records of a folder of WARC files read back by warcio, and a WARC disk that fills up.

``FullDiskWarcMiddleware`` is loaded by a crawl the test starts (``-s DOWNLOADER_MIDDLEWARES=...``
with this folder on ``PYTHONPATH``): its files refuse every write after
``FULL_DISK_AFTER_CAPTURES`` captures with ENOSPC, as a full disk does.
"""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scrapy import Spider
from warcio.archiveiterator import ArchiveIterator

from websim_crawler.archive.middleware import WarcWriterMiddleware
from websim_crawler.core.archive.files import WarcFile
from websim_crawler.demo.site import Archive, make_handler


@dataclass
class RecordingSite:
    """A running demo site and the bodies it sent, by path and query, in order."""

    server: ThreadingHTTPServer
    url: str
    sent: dict[str, list[bytes]]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_recording_demo(delay: float = 0.0) -> RecordingSite:
    """Serve the demo site, gzipping each page for clients that accept it, and remember the
    exact body bytes of every response it sent."""
    sent: dict[str, list[bytes]] = defaultdict(list)
    lock = threading.Lock()
    base = make_handler(Archive.bundled())

    class RecordingHandler(base):  # type: ignore[valid-type,misc]
        def answer(self, path: str, parameters: dict[str, str]) -> None:
            time.sleep(delay)
            super().answer(path, parameters)

        def send_page(self, status: int, text: str, content_type: str = "text/html") -> None:
            data = text.encode("utf-8")
            compressed = "gzip" in (self.headers.get("Accept-Encoding") or "")
            if compressed:
                data = gzip.compress(data, mtime=0)
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            if compressed:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with lock:
                sent[self.path].append(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return RecordingSite(server, f"http://127.0.0.1:{server.server_address[1]}/", sent)


@dataclass(frozen=True)
class Record:
    """One WARC record read back: its type, target, headers and raw payload (HTTP body as sent,
    still content-encoded)."""

    file: str
    type: str
    url: str
    warc_headers: dict[str, str]
    status: int | None
    http_headers: dict[str, str]
    payload: bytes


def read_records(folder: Path) -> list[Record]:
    """Read every record of the folder's ``*.warc.gz`` files, in file-name order."""
    records = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                http = record.http_headers
                status = None
                if record.rec_type == "response" and http is not None:
                    status = int(http.get_statuscode())
                records.append(
                    Record(
                        file=path.name,
                        type=record.rec_type,
                        url=record.rec_headers.get_header("WARC-Target-URI") or "",
                        warc_headers=dict(record.rec_headers.headers),
                        status=status,
                        http_headers=dict(http.headers) if http is not None else {},
                        payload=record.raw_stream.read(),
                    )
                )
    return records


def sha1_base32(data: bytes) -> str:
    """Return a WARC digest of ``data`` as warcio and Heritrix write it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def warcio_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    """Run warcio's own command line (the ``warcio`` script: ``warcio.cli.main``)."""
    return subprocess.run(
        [sys.executable, "-c", "import sys, warcio.cli; warcio.cli.main(sys.argv[1:])", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )


class _FillingDiskFile(WarcFile):
    """A WARC file on a disk with room for ``room`` more appends (a warcinfo or a capture)."""

    room = 0

    def append(self, data: bytes) -> None:
        if type(self).room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        type(self).room -= 1
        super().append(data)


class FullDiskWarcMiddleware(WarcWriterMiddleware):
    """The project's WARC writer, its disk full after ``FULL_DISK_AFTER_CAPTURES`` captures."""

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        assert self.writer is not None
        _FillingDiskFile.room = self.crawler.settings.getint("FULL_DISK_AFTER_CAPTURES") + 1
        self.writer.file_type = _FillingDiskFile


def stats_of(path: Path) -> dict[str, Any]:
    """Read a crawl's ``WEBSIM_STATS_OUTPUT`` file."""
    return dict(json.loads(path.read_text(encoding="utf-8")))
