"""A page's outgoing links and the base URL they resolve against."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urljoin

import lxml.etree

from websim_crawler.core.urls import absolute_url


def _document_elements(root: lxml.etree._Element, *tags: str) -> Iterator[lxml.etree._Element]:
    """Iterate the elements with these tags in the root's whole document, in document order
    (one pass of libxml2, like ``//tag``; markup after ``</html>`` can sit beside the root)."""
    for preceding in reversed(list(root.itersiblings(preceding=True))):
        yield from preceding.iter(*tags)
    yield from root.iter(*tags)
    for following in root.itersiblings():
        yield from following.iter(*tags)


def document_base_url(root: lxml.etree._Element, page_url: str | None) -> str:
    """Return the URL a page's relative links resolve against (HTML's document base URL).

    That is the first ``<base href>`` of the document resolved against the page URL, else the
    page URL (``""`` when there is none); a base href that cannot be resolved is ignored.
    """
    base = page_url or ""
    for element in _document_elements(root, "base"):
        href = element.get("href")
        if href is not None:
            try:
                return urljoin(base, href.strip())
            except ValueError:  # an unclosed IPv6 bracket: no usable base
                return base
    return base


def outgoing_links(root: lxml.etree._Element, base_url: str | None) -> list[str]:
    """Return the page's absolute http(s) link targets, in order, without fragments or repeats.

    Each ``<a>``/``<area>`` href is resolved by ``core.urls.absolute_url`` against
    ``document_base_url``, as the crawl resolves the links it follows.
    """
    base = document_base_url(root, base_url)
    seen: dict[str, None] = {}
    for element in _document_elements(root, "a", "area"):
        href = element.get("href")
        if href is not None:
            absolute = absolute_url(href, base)
            if absolute is not None:
                seen.setdefault(absolute, None)
    return list(seen)
