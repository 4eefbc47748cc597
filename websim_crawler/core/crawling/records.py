"""The links of a result page that lead to records: its data region, not its chrome."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from lxml import etree

from websim_crawler.core.crawling.labels import in_pager_run, pager_label_kind
from websim_crawler.core.crawling.link_roles import (
    NO_SEARCH_TARGET,
    SearchTarget,
    shows_result_list,
)
from websim_crawler.core.crawling.memory import ResultListMemory
from websim_crawler.core.crawling.no_results import says_no_results
from websim_crawler.core.crawling.regions import DataRegion, find_data_regions
from websim_crawler.core.crawling.shapes import shapes_nest, url_shape
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

    ``links`` are the record links, those of every result list in document order;
    ``regions`` the result lists (data regions) they come from, heaviest first, empty when the
    page has none and they were picked by URL pattern alone; ``other_shapes`` the patterns of
    the page's other candidate links (what ``ResultListMemory`` learns chrome from);
    ``truncated`` whether the region search stopped at its element bound; ``says_empty``
    whether a page without records says it has no results.
    """

    links: tuple[str, ...]
    regions: tuple[DataRegion, ...] = ()
    other_shapes: frozenset[str] = frozenset()
    truncated: bool = False
    says_empty: bool = False

    @property
    def region(self) -> DataRegion | None:
        """Return the heaviest result list, or ``None`` when the page has none."""
        return self.regions[0] if self.regions else None


def record_links(
    root: etree._Element,
    results_url: str,
    *,
    template_links: frozenset[str] = frozenset(),
    search: SearchTarget = NO_SEARCH_TARGET,
) -> list[str]:
    """Pick the links of a result page that lead to records (see ``find_records``)."""
    found = find_records(root, results_url, template_links=template_links, search=search)
    return list(found.links)


def find_records(
    root: etree._Element,
    results_url: str,
    *,
    template_links: frozenset[str] = frozenset(),
    search: SearchTarget = NO_SEARCH_TARGET,
    memory: ResultListMemory | None = None,
    query: str | None = None,
    max_elements: int = 50_000,
) -> ResultRecords:
    """Find the records of a result page: the links of its data region.

    A candidate link is on the same site, may be a page, lies outside the template regions
    (``nav``, banner ``header``, ``footer``, ``aside``, their ARIA roles and usual class names),
    is not one of the site's template links seen elsewhere (``template_links``: this one rule
    is waived inside a data region, which may list pages the navigation lists too), is no
    ``rel=next/prev``, language or alternate link, does not show the result list again
    (``shows_result_list``: by path and query parameters against the ``search`` target: other
    queries, pages, sorting of the list, the search page itself) and its pattern is not one
    that ``memory`` saw on every result page (chrome: export, "view as SQL", login). The records
    are the links of the page's result lists: the heaviest data region (``find_data_regions``:
    repeated items that each carry a link), whatever their labels, and every other region whose
    links are of its kind (``_same_kind``: title matches and text matches) or that sits where a
    result list was found on another result page. A page with no data region falls back to URL
    patterns: the links of the most common pattern, with every repeated pattern at least half as
    frequent, leave out one-off links ("Help") unless all are one-offs; pager links are left
    out by their place there (``in_pager_run``, next/previous controls), and so are links whose
    parameters carry the ``query`` (views of this result list: "view as SQL", export, facets).
    """
    chrome = memory.chrome_shapes() if memory is not None else frozenset()
    anchors: dict[etree._Element, str] = {}
    for anchor, link, in_template in _anchors_with_region(root, results_url):
        if (
            not in_template
            and same_host_port(link, results_url)
            and looks_like_page(link)
            and not _is_chrome_link(anchor)
            and not shows_result_list(link, results_url, search, query)
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
    all_anchors = anchors
    anchors = {anchor: link for anchor, link in anchors.items() if link not in template_links}
    if regions:
        lists = _result_lists(regions, known)
        in_lists = {link for region in lists for link in region.links}
        links = tuple(dict.fromkeys(link for link in all_anchors.values() if link in in_lists))
        others = frozenset(shape for link, shape in seen_shapes.items() if link not in in_lists)
        return ResultRecords(links, tuple(lists), others, truncated)
    candidates: dict[str, None] = {}
    folded_query = " ".join((query or "").lower().split())
    for anchor, link in anchors.items():
        kind = pager_label_kind(" ".join(" ".join(anchor.itertext()).split()).lower())
        if kind == "control" or (kind == "number" and in_pager_run(anchor)):
            continue
        if folded_query and _carries(link, folded_query):
            continue
        candidates.setdefault(link, None)
    links = tuple(_most_common_shapes(candidates))
    empty = not links and says_no_results(root)
    return ResultRecords(links, (), frozenset(seen_shapes.values()), truncated, empty)


def _result_lists(regions: list[DataRegion], known_locations: frozenset[str]) -> list[DataRegion]:
    """Return the result lists among a page's data regions (heaviest first): the heaviest, and
    each other region with links of its kind, at the same place (sibling lists under their
    headings: the same tag path) or at a place known for result lists, that adds links of its
    own."""
    heaviest = regions[0]
    lists = [heaviest]
    listed = set(heaviest.links)
    for region in regions[1:]:
        if listed.issuperset(region.links):
            continue  # the same links seen from another level of the page (a list's table)
        if (
            _same_kind(region.shape, heaviest.shape)
            or region.location == heaviest.location
            or region.location in known_locations
        ):
            lists.append(region)
            listed.update(region.links)
    return lists


def _same_kind(shape: str, other: str) -> bool:
    """Tell whether two link patterns are of one kind of record: patterns that nest (ids with
    more segments, ``shapes_nest``), or the same path pattern with the query keys of one among
    the other's (``/doku.php?id`` and ``/doku.php?id&s[]``, a record and the same record with
    its words highlighted)."""
    if shapes_nest(shape, other):
        return True
    path, _, keys = shape.partition("?")
    other_path, _, other_keys = other.partition("?")
    if path != other_path:
        return False
    names, other_names = (
        set(filter(None, keys.split("&"))),
        set(filter(None, other_keys.split("&"))),
    )
    return names <= other_names or other_names <= names


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


_CHROME_RELATIONS = frozenset(
    {"next", "prev", "previous", "first", "last", "alternate", "canonical", "license", "help",
     "search", "edit"}
)  # fmt: skip

_TEMPLATE_TAGS = frozenset({"nav", "aside"})
_LANDMARK_TAGS = frozenset({"header", "footer"})  # a banner/footer only outside sectioning tags
_SECTIONING_TAGS = frozenset({"article", "section", "main", "aside", "nav"})
_TEMPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_TEMPLATE_NAMES = frozenset(
    {
        "nav", "navbar", "navigation", "menu", "mainmenu", "main-menu", "topnav", "header",
        "site-header", "footer", "site-footer", "sidebar", "side-bar", "breadcrumb",
        "breadcrumbs", "masthead", "topbar", "top-bar", "ad", "ads", "advert", "advertisement",
        "sponsored", "banner", "page-footer", "printfooter", "catlinks", "p-lang",
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


def _is_chrome_link(anchor: etree._Element) -> bool:
    """Tell whether a link says it is chrome: another language or format of this page, its
    canonical address, a licence, help or search (``hreflang``, ``rel``)."""
    if anchor.get("hreflang") is not None:
        return True
    return bool(_CHROME_RELATIONS.intersection((anchor.get("rel") or "").lower().split()))


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
