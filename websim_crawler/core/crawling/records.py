"""The links of a result page that lead to records: its data region, not its chrome."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from lxml import etree

from websim_crawler.core.crawling.labels import in_pager_run, pager_label_kind
from websim_crawler.core.crawling.memory import ResultListMemory
from websim_crawler.core.crawling.regions import DataRegion, find_data_regions
from websim_crawler.core.crawling.shapes import url_shape
from websim_crawler.core.html import document_base_url
from websim_crawler.core.urls import absolute_url, looks_like_page, same_host_port


def site_template_links(root: etree._Element, base_url: str) -> frozenset[str]:
    """Return the links of a page's site template: those in its template regions (navigation,
    banner, footer, sidebars), or every link when the page marks no such region (table layouts).
    """
    links = [(url, in_template) for _, url, in_template in _anchors_with_region(root, base_url)]
    in_regions = frozenset(url for url, in_template in links if in_template)
    return in_regions or frozenset(url for url, _ in links)


@dataclass(frozen=True)
class ResultRecords:
    """The records found on a result page.

    ``links`` are the record links; ``region`` the data region they come from, ``None`` when
    the page has none and they were picked by URL pattern alone; ``other_shapes`` the patterns
    of the page's other candidate links (what ``ResultListMemory`` learns chrome from);
    ``truncated`` whether the region search stopped at its element bound.
    """

    links: tuple[str, ...]
    region: DataRegion | None = None
    other_shapes: frozenset[str] = frozenset()
    truncated: bool = False


def record_links(
    root: etree._Element,
    results_url: str,
    *,
    template_links: frozenset[str] = frozenset(),
    search_urls: Iterable[str] = (),
) -> list[str]:
    """Pick the links of a result page that lead to records (see ``find_records``)."""
    found = find_records(root, results_url, template_links=template_links, search_urls=search_urls)
    return list(found.links)


def find_records(
    root: etree._Element,
    results_url: str,
    *,
    template_links: frozenset[str] = frozenset(),
    search_urls: Iterable[str] = (),
    memory: ResultListMemory | None = None,
    query: str | None = None,
    max_elements: int = 50_000,
) -> ResultRecords:
    """Find the records of a result page: the links of its data region.

    A candidate link is on the same site, may be a page, lies outside the template regions
    (``nav``, banner ``header``, ``footer``, ``aside``, their ARIA roles and usual class names),
    is not one of the site's template links seen elsewhere (``template_links``: this one rule
    is waived inside a data region, which may list pages the navigation lists too), is no
    ``rel=next/prev`` link, does not go back to the result list (same path as the result page or
    the search form: sorting, other queries, pages of the list) and its pattern is not one that
    ``memory`` saw on every result page (chrome: export, "view as SQL", login). The records are
    the links of the heaviest data region (``find_data_regions``: repeated items that each carry
    a link), whatever their labels. A page with no data region falls back to URL patterns: the
    links of the most common pattern, with every repeated pattern at least half as frequent,
    leave out one-off links ("Help") unless all are one-offs; pager links are left out by their
    place there (``in_pager_run``, next/previous controls), and so are links whose parameters
    carry the ``query`` (views of this result list: "view as SQL", export, facets).
    """
    list_paths = {urlsplit(results_url).path} | {urlsplit(url).path for url in search_urls}
    chrome = memory.chrome_shapes() if memory is not None else frozenset()
    anchors: dict[etree._Element, str] = {}
    for anchor, link, in_template in _anchors_with_region(root, results_url):
        if (
            not in_template
            and same_host_port(link, results_url)
            and looks_like_page(link)
            and urlsplit(link).path not in list_paths
            and not _PAGER_RELATIONS.intersection((anchor.get("rel") or "").lower().split())
        ):
            anchors[anchor] = link
    # Chrome is left out of the records but still counted as seen on this page.
    seen_shapes = {link: url_shape(link) for link in anchors.values()}
    anchors = {anchor: link for anchor, link in anchors.items() if seen_shapes[link] not in chrome}
    known = memory.known_locations() if memory is not None else frozenset()
    # A data region may list pages the site's navigation links too (a documentation site's
    # search lists its pages): the site's template links are left out only when no region is.
    regions, truncated = find_data_regions(
        root, anchors, known_locations=known, max_elements=max_elements
    )
    anchors = {anchor: link for anchor, link in anchors.items() if link not in template_links}
    if regions:
        region = regions[0]
        in_region = set(region.links)
        others = frozenset(shape for link, shape in seen_shapes.items() if link not in in_region)
        return ResultRecords(region.links, region, others, truncated)
    candidates: dict[str, None] = {}
    folded_query = " ".join((query or "").lower().split())
    for anchor, link in anchors.items():
        kind = pager_label_kind(" ".join(" ".join(anchor.itertext()).split()).lower())
        if kind == "control" or (kind == "number" and in_pager_run(anchor)):
            continue
        if folded_query and _carries(link, folded_query):
            continue
        candidates.setdefault(link, None)
    return ResultRecords(
        tuple(_most_common_shapes(candidates)), None, frozenset(seen_shapes.values()), truncated
    )


def _carries(url: str, folded_query: str) -> bool:
    """Tell whether one of a URL's parameters is the query (a view of the same result list)."""
    return any(
        " ".join(value.lower().split()) == folded_query
        for _, value in parse_qsl(urlsplit(url).query, keep_blank_values=True)
    )


def _most_common_shapes(candidates: dict[str, None]) -> list[str]:
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


_PAGER_RELATIONS = frozenset({"next", "prev", "previous", "first", "last"})
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


def _anchors_with_region(
    root: etree._Element, base_url: str
) -> Iterable[tuple[etree._Element, str, bool]]:
    """Yield each link, its URL and whether it lies in a template region."""
    base = document_base_url(root, base_url)
    for anchor in root.xpath("//a[@href] | //area[@href]"):
        url = absolute_url(str(anchor.get("href")), base)
        if url is not None:
            yield anchor, url, _in_template_region(anchor)


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
