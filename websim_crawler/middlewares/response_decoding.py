"""Decode every HTML response the browser's way before a spider reads it.

Scrapy believes a page's declared charset. A ``<meta charset="utf-16">`` on ASCII bytes (which
browsers read as UTF-8, per the WHATWG encoding rules) or a UTF-16 header on bytes that are not
UTF-16 would turn the whole page into CJK-looking garbage with no flag. This downloader
middleware decides the encoding with ``core.html.decode_page``, hands the spider a response
decoded with it, and records how sure the decoding is (``encoding_confidence``).
"""

from __future__ import annotations

import codecs
import logging

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response

from websim_crawler.core.html import DOUBTFUL, decode_page
from websim_crawler.errors import PageError

logger = logging.getLogger(__name__)

CONFIDENCE_META = "websim_encoding_confidence"


class PageDecodingMiddleware:
    """Re-decode HTML responses whose encoding Scrapy chose against the WHATWG rules."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDecodingMiddleware:
        """Build the middleware."""
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        """Return the response decoded as a browser would, its confidence in ``meta``."""
        if not isinstance(response, HtmlResponse):
            return response
        content_type = (response.headers.get("Content-Type") or b"").decode("latin-1")
        try:
            decoded = decode_page(response.body, content_type or None)
        except PageError:  # empty or binary: the analysis pipeline drops it with its reason
            return response
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(f"websim/pages/encoding/{decoded.confidence}")
        if decoded.confidence == DOUBTFUL:
            logger.warning(
                "%s: doubtful decoding (%s); the text may hold wrong characters",
                response.url,
                decoded.encoding,
            )
        request.meta[CONFIDENCE_META] = decoded.confidence
        if _same_codec(decoded.encoding, response.encoding):
            return response
        stats.inc_value("websim/pages/encoding/redecoded")
        logger.info("%s: decoded as %s, not %s", response.url, decoded.encoding, response.encoding)
        return response.replace(encoding=decoded.encoding)


def _same_codec(first: str, second: str) -> bool:
    try:
        return codecs.lookup(first).name == codecs.lookup(second).name
    except LookupError:
        return first.lower() == second.lower()
