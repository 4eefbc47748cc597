"""Read the HTML pages a web archive captured: WARC 1.0/1.1 (ISO 28500) files and WACZ packages.

Records are read streaming, one at a time, by FastWARC (resiliparse's reader) or, as a fallback,
warcio; both go through the same checks. A page is a ``response`` (or ``resource``) record with a
2xx status and an HTML media type (declared, or sniffed when none is), its payload read raw, at
most the per-page byte budget of it, then decoded from its transfer and content encodings
(chunked, gzip, deflate, br) within the same budget. Everything else is counted by class in an
``ArchiveReport``: records that are no page by their type (``request``, ``warcinfo``, ...) and
skipped records (``revisit``, ``not_html``, ``redirect``, ``error_status``, ``truncated``,
``too_large``, ``bad_encoding``, ``malformed``). A file that stops parsing part way (a broken
gzip member, bytes that are not a WARC header) ends that file with one line in ``failed``.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from websim_crawler.errors import PageError

ARCHIVE_ENGINES = ("auto", "fastwarc", "warcio")
HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Media types that say nothing about the bytes: the payload is sniffed, as browsers do.
_UNDECLARED_MEDIA_TYPES = frozenset({"", "application/octet-stream", "unknown/unknown"})
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<!--")
_SNIFF_BYTES = 512
# A WACZ stores its WARCs as they are (already gzip-compressed: ratio about 1); a deflated WARC
# of HTML shrinks about 10 times. An entry that expands over this ratio is a zip bomb.
MAX_ZIP_RATIO = 100
_PAGE_RECORD_TYPES = frozenset({"response", "resource"})
_SKIPPED_RECORD_TYPES = frozenset({"revisit", "continuation"})  # counted as skipped pages
_ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class ArchivedPage:
    """One HTML page of an archive and the record it leads back to."""

    url: str  # WARC-Target-URI
    body: bytes  # the payload, decoded from its transfer and content encodings
    content_type: str | None  # the HTTP Content-Type (its charset decodes the body)
    status: int | None  # the HTTP status (None for a resource record)
    warc_date: str | None
    record_id: str | None
    file: str  # the WARC file (in a WACZ: package!entry)
    offset: int  # where the record starts in that file (the gzip member, when compressed)

    def as_record(self, html_field: str = "html") -> dict[str, Any]:
        """Return the page as a crawl feed's record: its HTML decoded by its HTTP charset when
        the header declares one (else the bytes, which the analysis decodes by BOM, ``<meta>``
        or detection, as any page); raise ``PageError`` for bytes that do not decode."""
        html = record_html(self.body, self.content_type)
        return {"url": self.url, html_field: html, **self.provenance()}

    def provenance(self) -> dict[str, Any]:
        """Return the fields that lead a result back to its record."""
        return {
            "warc_file": self.file,
            "warc_offset": self.offset,
            "warc_record_id": self.record_id,
            "warc_date": self.warc_date,
        }


@dataclass
class ArchiveReport:
    """What reading archives met: pages, skipped records by class, other records by type."""

    records: int = 0
    pages: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    other_records: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        """Count one record skipped for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self, *, skips: bool = True) -> str:
        """Return one line: records read, pages, skips by class (unless ``skips`` is false: a
        count line tells them), other records by type."""
        parts = [f"{self.records} WARC records, {self.pages} HTML pages"]
        if self.skipped and skips:
            parts.append(
                "skipped: "
                + ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
            )
        if self.other_records:
            parts.append(
                "not pages: "
                + ", ".join(f"{count} {kind}" for kind, count in sorted(self.other_records.items()))
            )
        return "; ".join(parts)


def record_html(body: bytes, content_type: str | None) -> str | bytes:
    """Return a page's HTML for a feed record: decoded by the charset its HTTP header declares,
    else its bytes (decoded by the analysis by BOM, ``<meta>`` or detection, as any page);
    raise ``PageError`` for bytes that do not decode."""
    from websim_crawler.core.html.decoding import decode_html, http_content_type_encoding

    if http_content_type_encoding(content_type) is None:
        return body
    return decode_html(body, content_type)


def archive_records(
    path: str, *, max_page_bytes: int, engine: str = "auto", html_field: str = "html"
) -> Iterator[dict[str, Any] | str]:
    """Yield the pages of one archive as feed records, and the reason of each record left out
    (a string): for workers that read archives on their own (the Dask paths)."""
    report = ArchiveReport()
    try:
        for page in iter_archive_pages(path, report, max_page_bytes=max_page_bytes, engine=engine):
            try:
                yield page.as_record(html_field)
            except PageError as exc:
                yield f"undecodable_{exc.reason}"
    except OSError:
        report.skip("unreadable_archive")
    for reason, count in report.skipped.items():
        for _ in range(count):
            yield reason


def archive_kind(head: bytes) -> str | None:
    """Tell from a file's first bytes (decompressed when gzip) whether it is a WARC or a zip."""
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if head.startswith((b"WARC/1.", b"WARC/0.")):
        return "warc"
    return None


def resolve_engine(engine: str) -> str:
    """Return the reader ``engine`` names, ``auto`` resolved to FastWARC when it is installed.

    Raise ``ImportError`` when the reader asked for (or neither, for ``auto``) is installed.
    """
    if engine not in ARCHIVE_ENGINES:
        raise ValueError(f"unknown WARC reader {engine!r}")
    for name, module in (("fastwarc", "fastwarc.warc"), ("warcio", "warcio.archiveiterator")):
        if engine in ("auto", name):
            try:
                __import__(module)
            except ImportError:
                if engine == name:
                    raise
                continue
            return name
    raise ImportError("neither fastwarc nor warcio is installed")


def iter_archive_pages(
    path: str, report: ArchiveReport, *, max_page_bytes: int, engine: str = "auto"
) -> Iterator[ArchivedPage]:
    """Yield the HTML pages of one WARC file or WACZ package, counting the rest in ``report``."""
    reader = resolve_engine(engine)
    with open(path, "rb") as handle:
        head = handle.read(len(_ZIP_MAGIC))
    if head == _ZIP_MAGIC:
        yield from _iter_wacz(path, report, max_page_bytes, reader)
        return
    with open(path, "rb") as stream:
        yield from _iter_warc(stream, path, report, max_page_bytes, reader)


def _iter_wacz(path: str, report: ArchiveReport, limit: int, reader: str) -> Iterator[ArchivedPage]:
    """Yield the pages of the WARCs under ``archive/`` in a WACZ (a zip), each entry streamed."""
    try:
        package = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        report.failed.append(f"{path}: not a readable WACZ (zip) package: {exc}")
        return
    with package:
        entries = [
            entry
            for entry in package.infolist()
            if entry.filename.startswith("archive/") and ".warc" in entry.filename
        ]
        if not entries:
            report.failed.append(f"{path}: a zip without archive/*.warc(.gz): not a WACZ")
            return
        for entry in sorted(entries, key=lambda entry: entry.filename):
            name = f"{path}!{entry.filename}"
            if entry.file_size > MAX_ZIP_RATIO * max(entry.compress_size, 1):
                report.skip("zip_bomb")
                report.failed.append(
                    f"{name}: expands {entry.file_size:,} bytes from {entry.compress_size:,} "
                    f"(over {MAX_ZIP_RATIO}x): a zip bomb, not read"
                )
                continue
            try:
                with package.open(entry) as stream:
                    yield from _iter_warc(stream, name, report, limit, reader)
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
                report.failed.append(f"{name}: cannot read this entry: {exc}")


def _iter_warc(
    stream: IO[bytes], name: str, report: ArchiveReport, limit: int, reader: str
) -> Iterator[ArchivedPage]:
    records = _fastwarc_records(stream) if reader == "fastwarc" else _warcio_records(stream)
    try:
        for record in records:
            report.records += 1
            if isinstance(record, str):  # a type that holds no page
                if record in _SKIPPED_RECORD_TYPES:
                    report.skip(record)
                else:
                    report.other_records[record] = report.other_records.get(record, 0) + 1
                continue
            page = _page_of(record, name, report, limit)
            if page is not None:
                report.pages += 1
                yield page
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        report.skip("malformed")
        detail = (str(exc).splitlines() or [type(exc).__name__])[0]
        detail = detail.encode("ascii", "backslashreplace").decode("ascii")[:120]
        report.failed.append(
            f"{name}: stopped after {report.records} records: not a readable WARC from here "
            f"({detail})"
        )


@dataclass
class _Record:
    """What the checks need of one record, the same for either reader."""

    record_type: str
    url: str | None
    warc_date: str | None
    record_id: str | None
    truncated: bool
    offset: Callable[[], int]  # asked once the payload was read (warcio reads to find it)
    status: int | None
    http_headers: Callable[[str], str | None]
    read: Callable[[int], bytes]  # the raw payload (after the HTTP headers)
    payload_left: Callable[[int], bool]  # after reading n bytes: does the record declare more?


def _page_of(record: _Record, name: str, report: ArchiveReport, limit: int) -> ArchivedPage | None:
    """Return the page a record holds, or ``None`` with the reason counted."""
    status = record.status
    if record.record_type == "response" and status is None:
        report.skip("malformed")  # a response without an HTTP status line
        return None
    if status is not None and not 200 <= status < 300:
        report.skip("redirect" if 300 <= status < 400 else "error_status")
        return None
    if not record.url:
        report.skip("no_url")
        return None
    content_type = record.http_headers("Content-Type")
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type not in HTML_MEDIA_TYPES and media_type not in _UNDECLARED_MEDIA_TYPES:
        report.skip("not_html")
        return None
    if record.truncated:
        report.skip("truncated")
        return None
    raw = record.read(limit + 1)
    if len(raw) > limit:
        report.skip("too_large")
        return None
    if record.payload_left(len(raw)):
        report.skip("truncated")  # the file ends before the length the record declares
        return None
    try:
        body = decode_payload(
            raw,
            record.http_headers("Transfer-Encoding"),
            record.http_headers("Content-Encoding"),
            limit,
        )
    except _TooLarge:
        report.skip("too_large")
        return None
    except (ValueError, zlib.error, EOFError, OSError):
        report.skip("bad_encoding")
        return None
    if media_type not in HTML_MEDIA_TYPES and not looks_like_html(body):
        report.skip("not_html")
        return None
    return ArchivedPage(
        url=target_uri(record.url),
        body=body,
        content_type=content_type,
        status=status,
        warc_date=record.warc_date,
        record_id=record.record_id,
        file=name,
        offset=record.offset(),
    )


def target_uri(value: str) -> str:
    """Return a ``WARC-Target-URI`` without the angle brackets some writers (wget) put around
    it, as the WARC 1.0 standard's own examples did."""
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        return value[1:-1].strip()
    return value


def looks_like_html(body: bytes) -> bool:
    """Sniff a payload without a media type: markup that opens like an HTML document."""
    head = body[:_SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith(_HTML_SNIFF)


class _TooLarge(ValueError):
    """A payload decodes to more bytes than the page budget."""


def decode_payload(
    raw: bytes, transfer_encoding: str | None, content_encoding: str | None, limit: int
) -> bytes:
    """Undo a payload's transfer encoding (chunked) and content encodings, at most ``limit``
    bytes out; raise ``_TooLarge`` past it, ``ValueError`` for an encoding that does not decode."""
    body = raw
    if transfer_encoding and "chunked" in transfer_encoding.lower():
        body = _dechunk(body)
    codings = [part.strip().lower() for part in (content_encoding or "").split(",")]
    for coding in reversed([coding for coding in codings if coding and coding != "identity"]):
        body = _decompress(body, coding, limit)
    return body


def _dechunk(data: bytes) -> bytes:
    """Join the chunks of a chunked body (RFC 9112 section 7.1); a cut last chunk is kept."""
    out = io.BytesIO()
    position = 0
    while position < len(data):
        line_end = data.find(b"\r\n", position)
        if line_end < 0:
            break
        size_text = data[position:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise ValueError("bad chunk size") from exc
        if size == 0:
            break
        start = line_end + 2
        out.write(data[start : start + size])
        position = start + size + 2
    return out.getvalue()


def _decompress(data: bytes, coding: str, limit: int) -> bytes:
    if coding in ("gzip", "x-gzip", "deflate"):
        if coding == "deflate" and data[:1] != b"\x78":  # raw deflate, as some servers send
            decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
        else:
            decompressor = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        out = decompressor.decompress(data, limit + 1)
    elif coding == "br":
        import brotli

        out = brotli.Decompressor().process(data, output_buffer_limit=limit + 1)
    else:
        raise ValueError(f"unsupported content encoding {coding!r}")
    if len(out) > limit:
        raise _TooLarge(coding)
    return bytes(out)


def _fastwarc_records(stream: IO[bytes]) -> Iterator[_Record | str]:
    """Yield FastWARC's records; a record of a type that holds no page is only its type name,
    and only pages have their HTTP headers parsed (a crawl's request records are skipped)."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    page_types = WarcRecordType.response | WarcRecordType.resource
    for record in ArchiveIterator(stream, parse_http=False):
        kind = record.record_type
        if not kind & page_types:
            yield str(kind)
            continue
        headers = record.headers
        http = None
        if record.is_http:
            record.parse_http()
            http = record.http_headers
        yield _Record(
            record_type=str(kind),
            url=headers.get("WARC-Target-URI"),
            warc_date=headers.get("WARC-Date"),
            record_id=record.record_id,
            truncated=headers.get("WARC-Truncated") is not None,
            offset=_constant(record.stream_pos),
            status=http.status_code if http is not None else None,
            http_headers=http.get if http is not None else _no_header,
            read=record.reader.read,
            payload_left=record.content_length.__gt__,
        )


def _no_header(_name: str) -> None:
    return None


def _constant(value: int) -> Callable[[], int]:
    return lambda: value


def _limit_left(stream: Any) -> Callable[[int], bool]:
    """Tell whether warcio's limit reader holds back bytes the file no longer has."""
    return lambda _taken: bool(stream.limit > 0)


def _warcio_records(stream: IO[bytes]) -> Iterator[_Record | str]:
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    records = ArchiveIterator(stream)
    try:
        yield from _warcio_each(records)
    except ArchiveLoadFailed as exc:
        raise ValueError(str(exc).splitlines()[0][:200]) from exc


def _warcio_each(records: Any) -> Iterator[_Record | str]:
    for record in records:
        kind = str(record.rec_type)
        if kind not in _PAGE_RECORD_TYPES:
            yield kind
            continue
        headers = record.rec_headers
        http = record.http_headers
        status_text = http.get_statuscode() if http is not None else None
        raw_stream = record.raw_stream
        yield _Record(
            record_type=kind,
            url=headers.get_header("WARC-Target-URI"),
            warc_date=headers.get_header("WARC-Date"),
            record_id=headers.get_header("WARC-Record-ID"),
            truncated=headers.get_header("WARC-Truncated") is not None,
            offset=records.get_record_offset,
            status=int(status_text) if status_text and status_text.isdigit() else None,
            http_headers=http.get_header if http is not None else _no_header,
            read=raw_stream.read,
            payload_left=_limit_left(raw_stream),
        )
