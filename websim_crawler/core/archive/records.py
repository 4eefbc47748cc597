"""What one fetch leaves in a WARC file, built by warcio (no hand-written WARC serialiser).

A :class:`Capture` is plain data taken from the crawl (no Scrapy types), so the records can be
built and compressed in the writer's thread. An HTTP fetch gives a ``response`` record (status
line, headers and body as the HTTP layer handed them over) and its ``request`` record, linked by
``WARC-Concurrent-To``. A rendered page (the browser fetched it) gives a ``resource`` record with
the rendered DOM, a ``metadata`` record with the status and headers the browser saw
(``WARC-Concurrent-To`` the resource) and, when one was taken, a ``conversion`` record with the
screenshot (``WARC-Refers-To`` the resource). warcio computes ``WARC-Block-Digest`` and
``WARC-Payload-Digest`` (SHA-1, base32) and gzips each record as its own member.
"""

from __future__ import annotations

import http
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WARC_VERSION = "1.1"
REQUEST_PROTOCOL = "HTTP/1.1"  # what Scrapy's HTTP handler (twisted's HTTP/1.1 client) sends
# The HTTP layer hands the body over without its chunked framing: the header would describe
# bytes the record does not hold, so readers (pywb) would try to de-chunk the body again.
_FRAMING_HEADERS = frozenset({b"transfer-encoding"})


@dataclass(frozen=True)
class Capture:
    """One fetch, as plain data: the request sent and the response (or rendering) received."""

    url: str
    method: str
    request_target: str  # path and query, as on the request line
    request_headers: tuple[tuple[bytes, bytes], ...]
    request_body: bytes
    protocol: str  # of the response's status line: "HTTP/1.1", "HTTP/1.0"
    status: int
    response_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    date: str  # WARC-Date of the response (ISO 8601, UTC)
    rendered: bool = False  # the browser fetched it: body is the rendered DOM
    encoding: str = "utf-8"  # of a rendered DOM's bytes
    screenshot: bytes | None = None  # PNG, for rendered pages that took one


def header_pairs(headers: Mapping[bytes, Iterable[bytes]]) -> tuple[tuple[bytes, bytes], ...]:
    """Flatten a multi-valued header mapping (Scrapy's ``Headers``) into name/value pairs."""
    return tuple(
        (bytes(name), bytes(value)) for name, values in headers.items() for value in values
    )


def _text_headers(pairs: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    # Latin-1 maps every byte to one character: warcio writes the headers back as these bytes.
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in pairs
        if name.lower() not in _FRAMING_HEADERS
    ]


def _record(writer: WARCWriter, url: str, record_type: str, payload: bytes, **options: Any) -> Any:
    """Build a record of ``payload`` (warcio computes its digests)."""
    return writer.create_warc_record(
        url, record_type, payload=io.BytesIO(payload), length=len(payload), **options
    )


def _status_line(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def write_capture(writer: WARCWriter, capture: Capture) -> int:
    """Write the records of ``capture`` with ``writer``; return how many."""
    if capture.rendered:
        return _write_rendering(writer, capture)
    response = _record(
        writer,
        capture.url,
        "response",
        capture.body,
        http_headers=StatusAndHeaders(
            _status_line(capture.status),
            _text_headers(capture.response_headers),
            protocol=capture.protocol,
        ),
        warc_headers_dict={"WARC-Date": capture.date},
    )
    request = _record(
        writer,
        capture.url,
        "request",
        capture.request_body,
        http_headers=StatusAndHeaders(
            f"{capture.method} {capture.request_target} {REQUEST_PROTOCOL}",
            _text_headers(capture.request_headers),
            is_http_request=True,
        ),
    )
    writer.write_request_response_pair(request, response)
    return 2


def _write_rendering(writer: WARCWriter, capture: Capture) -> int:
    content_type = _header(capture.response_headers, b"content-type") or "text/html"
    dom = _record(
        writer,
        capture.url,
        "resource",
        capture.body,
        warc_content_type=_with_charset(content_type, capture.encoding),
        warc_headers_dict={"WARC-Date": capture.date},
    )
    dom_id = dom.rec_headers.get_header("WARC-Record-ID")
    fields = "".join(
        f"{name}: {value}\r\n"
        for name, value in [
            ("http-status", str(capture.status)),
            *(("http-header", f"{n}: {v}") for n, v in _text_headers(capture.response_headers)),
        ]
    ).encode("utf-8")
    metadata = _record(
        writer,
        capture.url,
        "metadata",
        fields,
        warc_content_type="application/warc-fields",
        warc_headers_dict={"WARC-Date": capture.date, "WARC-Concurrent-To": dom_id},
    )
    records: list[Any] = [dom, metadata]
    if capture.screenshot is not None:
        records.append(
            _record(
                writer,
                capture.url,
                "conversion",
                capture.screenshot,
                warc_content_type="image/png",
                warc_headers_dict={"WARC-Date": capture.date, "WARC-Refers-To": dom_id},
            )
        )
    for record in records:
        writer.write_record(record)
    return len(records)


def _header(pairs: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in pairs:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _with_charset(content_type: str, encoding: str) -> str:
    # The DOM is serialised by the browser and encoded by the crawl, whatever the page declared.
    media_type = content_type.split(";", 1)[0].strip() or "text/html"
    return f"{media_type}; charset={encoding}"


def write_warcinfo(writer: WARCWriter, file_name: str, fields: Mapping[str, str]) -> None:
    """Write the ``warcinfo`` record that opens a file."""
    writer.write_record(writer.create_warcinfo_record(file_name, dict(fields)))
