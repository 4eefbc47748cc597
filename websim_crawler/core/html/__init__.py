"""HTML pages, robustly: decoding, parsing, visibility, title and language, outgoing links.

The public names of the HTML helpers; other modules import from here.
"""

from __future__ import annotations

from websim_crawler.core.html.decoding import (
    DECLARED,
    DETECTED,
    DOUBTFUL,
    DecodedPage,
    decode_html,
    decode_page,
    doubtful_text,
)
from websim_crawler.core.html.links import document_base_url, outgoing_links
from websim_crawler.core.html.metadata import declared_language, page_title, stated_url
from websim_crawler.core.html.parsing import opened_tags_over, parse_document, parse_html
from websim_crawler.core.html.visibility import remove_invisible

__all__ = [
    "DECLARED",
    "DETECTED",
    "DOUBTFUL",
    "DecodedPage",
    "declared_language",
    "decode_html",
    "decode_page",
    "document_base_url",
    "doubtful_text",
    "opened_tags_over",
    "outgoing_links",
    "page_title",
    "parse_document",
    "parse_html",
    "remove_invisible",
    "stated_url",
]
