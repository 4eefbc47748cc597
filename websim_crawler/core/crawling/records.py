"""The links of a result page that lead to records, apart from the site's template links."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

from lxml import etree

from websim_crawler.core.crawling.labels import is_pager_label
from websim_crawler.core.html import document_base_url
from websim_crawler.core.urls import absolute_url, looks_like_page, same_host_port


def url_shape(url: str) -> str:
    """Return a URL's pattern: path with digits as ``0`` and the last segment as ``*``, query keys.

    ``/record/12`` and ``/record/7`` share the shape ``/record/*``; ``/item?id=3`` is ``/item?id``.
    """
    parts = urlsplit(url)
    segments = re.sub(r"\d+", "0", parts.path).split("/")
    if len(segments) > 1 and segments[-1]:
        segments[-1] = "*"
    keys = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return "/".join(segments) + ("?" + "&".join(keys) if keys else "")


def site_template_links(root: etree._Element, base_url: str) -> frozenset[str]:
    """Return the links of a page's site template: those in its template regions (navigation,
    banner, footer, sidebars), or every link when the page marks no such region (table layouts).
    """
    links = list(_links_with_region(root, base_url))
    in_regions = frozenset(url for url, in_template, _ in links if in_template)
    return in_regions or frozenset(url for url, _, _ in links)


def record_links(
    root: etree._Element,
    results_url: str,
    *,
    template_links: frozenset[str] = frozenset(),
    search_urls: Iterable[str] = (),
) -> list[str]:
    """Pick the links of a result page that lead to records (the results themselves).

    A record link is on the same site, may be a page, lies outside the template regions (``nav``,
    banner ``header``, ``footer``, ``aside``, their ARIA roles and usual class names), is not one
    of the site's template links seen elsewhere (``template_links``) and does not go back to the
    result list (same path as the result page or the search form: sorting, other queries) nor to
    another result page (labels such as "2", "Next ›", "« Previous"). Of those, the links of
    the most common URL shape are kept, with every repeated shape at least half as frequent,
    which leaves out one-off links ("Help", "About the archive") unless all links are one-offs.
    """
    list_paths = {urlsplit(results_url).path} | {urlsplit(url).path for url in search_urls}
    candidates: dict[str, None] = {}
    for link, in_template, label in _links_with_region(root, results_url):
        if (
            not in_template
            and not is_pager_label(label)
            and link not in template_links
            and same_host_port(link, results_url)
            and looks_like_page(link)
            and urlsplit(link).path not in list_paths
        ):
            candidates.setdefault(link, None)
    if len(candidates) <= 1:
        return list(candidates)
    shape_counts = Counter(url_shape(link) for link in candidates)
    largest = max(shape_counts.values())
    kept_shapes = {
        shape
        for shape, count in shape_counts.items()
        if count * 2 >= largest and (count > 1 or largest == 1)
    }
    return [link for link in candidates if url_shape(link) in kept_shapes]


_TEMPLATE_TAGS = frozenset({"nav", "aside"})
_LANDMARK_TAGS = frozenset({"header", "footer"})  # a banner/footer only outside sectioning tags
_SECTIONING_TAGS = frozenset({"article", "section", "main", "aside", "nav"})
_TEMPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_TEMPLATE_NAMES = frozenset(
    {
        "nav", "navbar", "navigation", "menu", "mainmenu", "main-menu", "topnav", "header",
        "site-header", "footer", "site-footer", "sidebar", "side-bar", "breadcrumb",
        "breadcrumbs", "masthead", "topbar", "top-bar", "ad", "ads", "advert", "advertisement",
        "sponsored", "banner",
    }
)  # fmt: skip


def _links_with_region(root: etree._Element, base_url: str) -> Iterable[tuple[str, bool, str]]:
    """Yield each link's URL, whether it lies in a template region, and its label."""
    base = document_base_url(root, base_url)
    for anchor in root.xpath("//a[@href] | //area[@href]"):
        url = absolute_url(str(anchor.get("href")), base)
        if url is not None:
            label = " ".join(" ".join(anchor.itertext()).split()).lower()
            yield url, _in_template_region(anchor), label


def _in_template_region(element: etree._Element) -> bool:
    ancestors = [element, *element.iterancestors()]
    for position, ancestor in enumerate(ancestors):
        tag = ancestor.tag if isinstance(ancestor.tag, str) else ""
        if tag in _TEMPLATE_TAGS or (ancestor.get("role") or "") in _TEMPLATE_ROLES:
            return True
        if tag in _LANDMARK_TAGS and not any(
            outer.tag in _SECTIONING_TAGS for outer in ancestors[position + 1 :]
        ):
            return True
        names = (ancestor.get("class") or "").lower().split()
        names.append((ancestor.get("id") or "").lower())
        if _TEMPLATE_NAMES.intersection(names):
            return True
    return False
