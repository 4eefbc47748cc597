"""The way into a site's search when its start page has no search form.

Pure: works on ``lxml.html`` trees, XML bytes and URL strings. Evidence, in the order a crawl
tries it: an OpenSearch description the page links to (``<link rel="search"
type="application/opensearchdescription+xml">``, whose ``<Url type="text/html">`` template is
the result URL of a query: WordPress, MediaWiki and most blog engines publish one), then the
pages one link away that a search form is likely on (the site's own "search" link, then an
"about" page), then a page the site does not have (many sites put a search box on their 404
page). Every URL returned is on the page's own origin; the caller bounds how many it fetches.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from lxml import etree

from websim_crawler.core.html import document_base_url
from websim_crawler.core.urls import absolute_url, looks_like_page, origin_of

OPENSEARCH_TYPE = "application/opensearchdescription+xml"
MISSING_PAGE_PATH = "/websim-no-such-page-404"  # asked for a site's "not found" page
_MAX_DESCRIPTION_BYTES = 64 * 1024  # an OpenSearch description is a few hundred bytes
_SEARCH_LABEL = re.compile(
    r"\b(?:advanced search|search|find|suche|recherche|buscar|cerca|zoeken)\b|検索|搜索", re.I
)
_ABOUT_LABEL = re.compile(r"\b(?:about|über|a propos|à propos|acerca)\b", re.I)
_MAX_LABEL_CHARS = 80


def opensearch_links(root: etree._Element, base_url: str) -> list[str]:
    """Return the OpenSearch description URLs a page links to (same origin only)."""
    base = document_base_url(root, base_url)
    found: list[str] = []
    for link in root.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        if "search" not in rel or (link.get("type") or "").strip().lower() != OPENSEARCH_TYPE:
            continue
        url = absolute_url(link.get("href") or "", base)
        if url and origin_of(url) == origin_of(base_url) and url not in found:
            found.append(url)
    return found


def opensearch_template(description: bytes, description_url: str) -> str | None:
    """Return the result URL template (``{query}`` in place of ``{searchTerms}``) of an
    OpenSearch description, or ``None`` when it has no usable HTML template.

    Only a GET template whose other parameters are optional (``{name?}``, dropped) or fixed
    is usable; the template resolves against the description's URL.
    """
    if not description or len(description) > _MAX_DESCRIPTION_BYTES:
        return None
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(description, parser=parser)
    except etree.XMLSyntaxError:
        return None
    candidates: list[tuple[int, str]] = []
    for element in root.iter():
        if not isinstance(element.tag, str) or etree.QName(element).localname != "Url":
            continue
        kind = (element.get("type") or "").strip().lower()
        method = (element.get("method") or "get").strip().lower()
        template = element.get("template") or ""
        if method != "get" or "{searchTerms}" not in template:
            continue
        rank = 0 if kind in ("text/html", "application/xhtml+xml") else 1
        if kind and rank:
            continue  # suggestions (application/x-suggestions+json), feeds (rss, atom)
        candidates.append((rank, template))
    for _, template in sorted(candidates):
        filled = re.sub(r"([?&])[^=&#]+=\{[\w:]+\?\}&?", r"\1", template)
        filled = re.sub(r"\{[\w:]+\?\}", "", filled).rstrip("?&").replace("?&", "?")
        filled = filled.replace("{searchTerms}", "{query}")
        if re.search(r"\{(?!query\})[^}]*\}", filled):
            continue  # a required parameter the crawl cannot fill
        return urljoin(description_url, filled)
    return None


def entrance_pages(root: etree._Element, base_url: str, limit: int) -> list[str]:
    """Return up to ``limit`` pages of the page's own origin where a search form may be:
    links labelled "search" first, then "about", then the site's 404 page."""
    base = document_base_url(root, base_url)
    own_origin = origin_of(base_url)
    searches: list[str] = []
    abouts: list[str] = []
    for anchor in root.iter("a"):
        url = absolute_url(anchor.get("href") or "", base)
        if not url or origin_of(url) != own_origin or not looks_like_page(url):
            continue
        label = " ".join(
            [
                " ".join(anchor.itertext())[:_MAX_LABEL_CHARS],
                anchor.get("title") or "",
                anchor.get("aria-label") or "",
                url.rsplit("/", 1)[-1],
            ]
        )
        url = url.split("#", 1)[0]
        if url == base_url.split("#", 1)[0]:
            continue
        if _SEARCH_LABEL.search(label):
            searches.append(url)
        elif _ABOUT_LABEL.search(label):
            abouts.append(url)
    ordered = [*dict.fromkeys([*searches, *abouts[:1], own_origin + MISSING_PAGE_PATH])]
    return ordered[:limit]
