"""The page a request posts: HTML bytes, or a WARC (WACZ) holding it, and an optional screenshot.

The kind is told by content, as every ``websim`` command tells its inputs: a body that opens as
a WARC record (plain or gzip) or a zip is an archive, read by the one archive reader
(``core.archive.reading``) with the page budget, its first HTML page (or the one whose
``WARC-Target-URI`` is ``url``) taken; anything else is the page's HTML. Each part is bounded by
``WEBSIM_MAX_PAGE_BYTES``, as a page or a screenshot file given to ``websim match`` is.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from dataclasses import dataclass
from typing import Any

from websim_crawler.config import WebsimConfig
from websim_crawler.core.archive.reading import ArchiveReport, archive_kind, iter_archive_pages
from websim_crawler.errors import PageError

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 64


@dataclass(frozen=True)
class PostedPage:
    """A page as the analysis takes it: its HTML, the URL it is compared under, a screenshot."""

    html: str | bytes
    url: str | None
    screenshot: bytes | None = None

    def as_record(self, html_field: str) -> dict[str, Any]:
        """Return the page as a record for the stages (the fields ``websim match`` reads)."""
        return {"url": self.url, html_field: self.html, "screenshot": self.screenshot}


def body_kind(body: bytes) -> str:
    """Tell a posted body's kind by its first bytes: ``warc``, ``zip`` (WACZ) or ``html``."""
    head = body[:_SNIFF_BYTES]
    if head.startswith(_GZIP_MAGIC):
        try:
            head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(body[:4096], _SNIFF_BYTES)
        except zlib.error:
            return "html"  # not readable gzip: the analysis will say what it is
    return archive_kind(head) or "html"


def posted_page(
    body: bytes, url: str | None, screenshot: bytes | None, config: WebsimConfig
) -> PostedPage:
    """Return the page a request posted; ``PageError`` (``too_large``, ``empty``,
    ``no_page_in_archive``) when it cannot be one."""
    limit = config.analysis.max_page_bytes
    if screenshot is not None and len(screenshot) > limit:
        raise PageError(
            "too_large", f"the screenshot has over {limit:,} bytes (WEBSIM_MAX_PAGE_BYTES)"
        )
    if not body:
        raise PageError("empty", "the page is empty")
    kind = body_kind(body)
    if kind == "html":
        if len(body) > limit:
            raise PageError(
                "too_large", f"the page has over {limit:,} bytes (WEBSIM_MAX_PAGE_BYTES)"
            )
        return PostedPage(body, url, screenshot)
    return _archived_page(body, url, screenshot, config)


def _archived_page(
    body: bytes, url: str | None, screenshot: bytes | None, config: WebsimConfig
) -> PostedPage:
    """Return the page of a posted WARC or WACZ, read from a temporary file by the archive
    reader (with the page budget per record)."""
    report = ArchiveReport()
    handle, path = tempfile.mkstemp(prefix="websim-serve-", suffix=".warc")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(body)
        pages = iter_archive_pages(
            path,
            report,
            max_page_bytes=config.analysis.max_page_bytes,
            engine=config.inputs.warc_reader,
        )
        for page in pages:
            if url is None or page.url == url:
                return PostedPage(page.as_record()["html"], page.url, screenshot)
    finally:
        os.unlink(path)
    if report.skipped.get("too_large"):
        raise PageError(
            "too_large",
            f"the archive's page has over {config.analysis.max_page_bytes:,} bytes "
            "(WEBSIM_MAX_PAGE_BYTES)",
        )
    wanted = f" with the URL {url}" if url else ""
    raise PageError(
        "no_page_in_archive", f"no HTML page{wanted} in the archive: {report.summary()}"
    )
