"""The text a result page shows for each of its records: title and snippet, for query terms.

Pure: works on an ``lxml.html`` tree and the record links ``find_records`` picked. A record's
snippet is the largest element around its link that holds no other record's link (the result
item: a list item, a table row, a card), read up to ``max_chars`` characters. Linear in the
page: each record anchor is charged to at most ``_MAX_DEPTH`` ancestors.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

from lxml import etree

from websim_crawler.core.html import document_base_url
from websim_crawler.core.urls import absolute_url

_MAX_DEPTH = 12  # how far above its link a record's item may be (as the data regions look)
_MIXED = ""  # an ancestor that holds the links of several records
_WORD = re.compile(r"\w+")


def record_snippets(
    root: etree._Element, base_url: str, record_links: Collection[str], max_chars: int = 1000
) -> dict[str, str]:
    """Return each record link's item text (title and snippet), whitespace collapsed."""
    wanted = frozenset(record_links)
    if not wanted:
        return {}
    document_base = document_base_url(root, base_url)
    first_anchor: dict[str, etree._Element] = {}
    owner: dict[etree._Element, str] = {}  # ancestor -> the one record it holds, or _MIXED
    for anchor in root.iter("a"):
        url = absolute_url(anchor.get("href") or "", document_base)
        if url not in wanted:
            continue
        first_anchor.setdefault(url, anchor)
        element: etree._Element | None = anchor
        for _ in range(_MAX_DEPTH):
            if element is None:
                break
            held = owner.get(element)
            owner[element] = url if held in (None, url) else _MIXED
            element = element.getparent()
    snippets: dict[str, str] = {}
    for url, anchor in first_anchor.items():
        item = anchor
        parent = item.getparent()
        while parent is not None and owner.get(parent) == url:
            item, parent = parent, parent.getparent()
        snippets[url] = _bounded_text(item, max_chars)
    return snippets


def _bounded_text(element: etree._Element, max_chars: int) -> str:
    pieces: list[str] = []
    length = 0
    for piece in element.itertext():
        pieces.append(piece)
        length += len(piece)
        if length >= max_chars:
            break
    return " ".join(" ".join(pieces).split())[:max_chars]


def record_key(url: str, query: str) -> str:
    """Return the identity of a record link: the URL without its fragment and without query
    parameters that carry the query (Sphinx's ``?highlight=word``, a wiki's ``&search=``,
    Django admin's ``?_changelist_filters=q%3Dword%26p%3D2``: a parameter whose value holds
    every word of the query), so that one record reached by two queries is one record."""
    parts = urlsplit(url)
    words = set(_WORD.findall(query.lower()))
    kept = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not words or not words <= set(_WORD.findall(unquote_plus(value).lower()))
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), ""))
