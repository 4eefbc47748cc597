"""WARC files for the tests: well-formed ones written with warcio's writer, and hostile ones
(each of a size ``n`` the tests double) written by hand, streaming, where no writer would make
them: a length beyond the file, a gzip member that never ends, a zip bomb."""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HTML = (
    "<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"
)
TEXT = "Lava flows slowly down the volcano while the village sleeps below it. "


def page_html(title: str, repeat: int = 20) -> bytes:
    """A small article page."""
    return HTML.format(title=title, text=TEXT * repeat).encode()


def write_warc(
    path: Path,
    responses: Iterable[tuple[str, bytes, list[tuple[str, str]], str]],
    *,
    gzip_records: bool = True,
    with_requests: bool = False,
) -> Path:
    """Write ``(url, payload, http headers, status line)`` responses with warcio's writer (a
    warcinfo record first; a request record before each response when ``with_requests``)."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=gzip_records)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "tests"}))
        for url, payload, headers, status in responses:
            if with_requests:
                request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True)
                writer.write_record(writer.create_warc_record(url, "request", http_headers=request))
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), http_headers=http
            )
            writer.write_record(record)
    return path


def html_responses(
    count: int, host: str = "http://a.example"
) -> list[tuple[str, bytes, list[tuple[str, str]], str]]:
    """``count`` plain 200 HTML responses."""
    return [
        (
            f"{host}/page/{number}",
            page_html(f"Page {number}"),
            [("Content-Type", "text/html")],
            "200 OK",
        )
        for number in range(count)
    ]


def raw_record(
    payload: bytes,
    *,
    declared: int | None = None,
    record_type: str = "response",
    extra: bytes = b"",
) -> bytes:
    """One WARC/1.1 record by hand (``declared``: the Content-Length it claims)."""
    length = len(payload) if declared is None else declared
    return (
        b"WARC/1.1\r\nWARC-Type: " + record_type.encode() + b"\r\n"
        b"WARC-Target-URI: http://h.example/x\r\nWARC-Date: 2026-01-01T00:00:00Z\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000000>\r\n"
        + extra
        + b"Content-Type: application/http; msgtype=response\r\n"
        b"Content-Length: " + str(length).encode() + b"\r\n\r\n" + payload + b"\r\n\r\n"
    )


def http_payload(body: bytes, content_type: bytes = b"text/html") -> bytes:
    """An HTTP/1.1 200 response with ``body``."""
    return b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n\r\n" + body


def length_beyond_file(path: Path, n: int) -> Path:
    """``n`` good records, then one declaring a Content-Length of a terabyte."""
    good = raw_record(http_payload(page_html("good")))
    path.write_bytes(good * n + raw_record(http_payload(page_html("cut")), declared=10**12))
    return path


def huge_record(path: Path, size: int) -> Path:
    """One good record, then a response of ``size`` bytes of HTML written in 1 MB pieces, then
    one more good record (compressed by member, as crawlers write)."""
    good = raw_record(http_payload(page_html("good")))
    piece = (b"<p>" + TEXT.encode() * 13 + b"</p>\n") * 1100  # about 1 MB
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body>"
    pieces, rest = divmod(size, len(piece))
    body_length = len(head) + pieces * len(piece) + rest
    with open(path, "wb") as handle:
        handle.write(gzip.compress(good, 1))
        compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
        header = raw_record(b"", declared=body_length)[:-4]  # the headers, no payload
        handle.write(compressor.compress(header + head))
        for _ in range(pieces):
            handle.write(compressor.compress(piece))
        handle.write(compressor.compress(piece[:rest]) + compressor.compress(b"\r\n\r\n"))
        handle.write(compressor.flush())
        handle.write(gzip.compress(good, 1))
    return path


def endless_gzip_member(path: Path, size: int) -> Path:
    """A good record, then a gzip member that never ends: a record declaring a terabyte whose
    compressed payload runs on for ``size`` bytes (zeros) and stops without its trailer."""
    good = raw_record(http_payload(page_html("good")))
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as handle:
        handle.write(gzip.compress(good))
        handle.write(compressor.compress(raw_record(b"", declared=10**12)[:-4]))
        handle.write(compressor.compress(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"))
        block = b"\0" * (1 << 20)
        for _ in range(size // len(block)):
            handle.write(compressor.compress(block))
        handle.write(compressor.flush(zlib.Z_SYNC_FLUSH))  # flushed, never finished
    return path


def tiny_records(path: Path, n: int) -> Path:
    """``n`` tiny records (a metadata record of two bytes each) and one page at the end."""
    tiny = raw_record(b"ok", record_type="metadata")
    with open(path, "wb") as handle:
        for _ in range(n // 1000):
            handle.write(tiny * 1000)
        handle.write(tiny * (n % 1000))
        handle.write(raw_record(http_payload(page_html("last"))))
    return path


def wacz_bomb(path: Path, size: int) -> Path:
    """A WACZ whose ``archive/data.warc`` deflates ``size`` bytes of zeros (a zip bomb), beside
    a sound ``archive/good.warc.gz``."""
    good = gzip.compress(raw_record(http_payload(page_html("good"))))
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("archive/good.warc.gz", good, compress_type=zipfile.ZIP_STORED)
        bomb = zipfile.ZipInfo("archive/data.warc")
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with package.open(bomb, "w", force_zip64=True) as entry:
            block = b"\0" * (1 << 20)
            for _ in range(size // len(block)):
                entry.write(block)
        package.writestr("datapackage.json", "{}")
    return path


def wacz(path: Path, warcs: dict[str, bytes]) -> Path:
    """A WACZ package with these ``archive/`` entries, stored as WACZ writers do."""
    with zipfile.ZipFile(path, "w") as package:
        for name, data in warcs.items():
            package.writestr(f"archive/{name}", data, compress_type=zipfile.ZIP_STORED)
        package.writestr("datapackage.json", "{}")
        package.writestr("pages/pages.jsonl", '{"format": "json-pages-1.0"}\n')
    return path
