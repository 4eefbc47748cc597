"""Moving through a query-result site: outgoing links, the next result page, record links.

Pure: works on an ``lxml.html`` tree (Scrapy's ``response.selector.root`` or ``parse_html``) and
URL strings; the spiders call these and turn the answers into requests.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from lxml import etree

from websim_crawler.core.params import setting, validate
from websim_crawler.core.urls import same_host_port


@dataclass(frozen=True)
class CrawlParams:
    """Parameters of the ``deepweb`` and ``site`` spiders (spider arguments override them)."""

    max_result_pages: int = setting(
        5,
        "WEBSIM_MAX_RESULT_PAGES",
        "result pages fetched per query by deepweb (-a max_pages overrides)",
        minimum=1,
        maximum=10_000,
    )
    site_max_pages: int = setting(
        500,
        "WEBSIM_SITE_MAX_PAGES",
        "pages fetched by the site spider (-a max_pages overrides)",
        minimum=1,
        maximum=10_000_000,
    )

    def __post_init__(self) -> None:
        validate(self)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Read a Retry-After header: delay seconds or an HTTP date (RFC 9110, section 10.2.3)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


_SKIPPED_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "ftp:", "file:", "about:")
# Links to these are not pages (Scrapy's LinkExtractor skips a similar list).
_NOT_PAGE_EXTENSIONS = frozenset(
    {
        "7z", "avi", "bin", "bmp", "bz2", "css", "csv", "doc", "docx", "exe", "gif", "gz",
        "ico", "iso", "jpeg", "jpg", "js", "json", "m4a", "mov", "mp3", "mp4", "mpeg", "ogg",
        "pdf", "png", "ppt", "pptx", "rar", "rss", "svg", "tar", "tgz", "tif", "tiff", "wav",
        "webm", "webp", "woff", "woff2", "xls", "xlsx", "xml", "zip",
    }
)  # fmt: skip
_PAGE_PARAMETERS = ("page", "p", "pg", "pageno", "page_no", "pagenum", "currentpage", "paged")
_OFFSET_PARAMETERS = ("start", "offset", "first", "from", "skip")
_NEXT_WORDS = frozenset(
    {
        "next", "next page", "next results", "more", "more results", "older", "older posts",
        "weiter", "nächste", "nächste seite", "suivant", "page suivante", "siguiente",
        "successivo", "volgende", "próxima", "下一页", "下一頁", "次へ", "次のページ", "다음",
    }
)  # fmt: skip
_PAGER_WORDS = _NEXT_WORDS | {
    "previous", "prev", "previous page", "back", "newer", "first", "last", "first page",
    "last page", "zurück", "précédent", "anterior", "上一页", "前へ",
}  # fmt: skip
_NEXT_ARROWS = {"›": 5.0, ">": 5.0, "→": 5.0, "»": 4.0, ">>": 4.0, "⟩": 5.0}
_WORD_EDGES = re.compile(r"^[\s«»‹›<>→←|.:…\-]+|[\s«»‹›<>→←|.:…\-]+$")


def absolute_url(href: str, base_url: str) -> str | None:
    """Resolve one ``href``; ``None`` for fragments, ``javascript:``, ``mailto:`` and the like."""
    href = href.strip()
    if not href or href.startswith("#") or href.lower().startswith(_SKIPPED_SCHEMES):
        return None
    try:
        parts = urlsplit(urljoin(base_url, href))
    except ValueError:  # malformed, e.g. an unclosed IPv6 bracket
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit(parts._replace(fragment=""))


def looks_like_page(url: str) -> bool:
    """Tell whether a URL may be an HTML page (not an image, archive, feed or document)."""
    path = urlsplit(url).path
    last_segment = path.rsplit("/", 1)[-1]
    if "." not in last_segment:
        return True
    return last_segment.rsplit(".", 1)[-1].lower() not in _NOT_PAGE_EXTENSIONS


def next_page_url(
    root: etree._Element, url: str, page_number: int, *, results_on_page: int = 0
) -> str | None:
    """Find the URL of the result page after ``page_number`` (1-based), or ``None``.

    Evidence, strongest first: ``rel="next"``; a link labelled "Next"/"›"/"»" (text, title,
    aria-label or a class naming "next"); a link whose text is ``page_number + 1``; and, when the
    page had results and links to no other page of its list, the URL's own page parameter
    (``page=``, ``p=``) or offset (``start=``) moved on by one page.
    """
    best: tuple[float, str] | None = None
    for score, href in _next_page_candidates(root, page_number):
        candidate = absolute_url(href, url)
        if candidate is None or candidate == url or not same_host_port(candidate, url):
            continue
        if best is None or score > best[0]:
            best = (score, candidate)
    if best is not None:
        return best[1]
    if results_on_page > 0 and not _links_to_own_list(root, url):
        return advance_page_parameter(url, results_on_page)
    return None


def _links_to_own_list(root: etree._Element, url: str) -> bool:
    """Tell whether a result page links to another page of the same list (its pager)."""
    own_list = _list_key(url)
    for href in root.xpath("//a/@href"):
        target = absolute_url(str(href), url)
        if target is not None and target != url and _list_key(target) == own_list:
            return True
    return False


def _list_key(url: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """Return a URL without its page and offset parameters: the list it shows a page of."""
    parts = urlsplit(url)
    paging = set(_PAGE_PARAMETERS) | set(_OFFSET_PARAMETERS)
    kept = tuple(
        sorted(
            (name, value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
            if name.lower() not in paging
        )
    )
    return parts.netloc, parts.path, kept


def _next_page_candidates(root: etree._Element, page_number: int) -> Iterable[tuple[float, str]]:
    for link in root.xpath("//link[@href] | //a[@href]"):
        href = str(link.get("href"))
        if "next" in (link.get("rel") or "").lower().split():
            yield 10.0, href
            continue
        if link.tag != "a":
            continue
        label = " ".join(" ".join(link.itertext()).split()).lower()
        described = " ".join((link.get("title") or "", link.get("aria-label") or "")).lower()
        words = _WORD_EDGES.sub("", label)
        if words in _NEXT_WORDS or _WORD_EDGES.sub("", described) in _NEXT_WORDS:
            yield 8.0, href
        elif "next" in (link.get("class") or "").lower():
            yield 6.0, href
        elif label in _NEXT_ARROWS:
            yield _NEXT_ARROWS[label], href
        elif label == str(page_number + 1):
            yield 3.0, href


def advance_page_parameter(url: str, results_on_page: int) -> str | None:
    """Move a URL's page (``page=2`` -> ``page=3``) or offset (``start=10`` -> ``start=20``) on.

    Returns ``None`` when the URL carries no such parameter with an integer value.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    for position, (name, value) in enumerate(query):
        lowered = name.lower()
        if not value.isdigit():
            continue
        if lowered in _PAGE_PARAMETERS:
            query[position] = (name, str(int(value) + 1))
        elif lowered in _OFFSET_PARAMETERS:
            query[position] = (name, str(int(value) + results_on_page))
        else:
            continue
        return urlunsplit(parts._replace(query=urlencode(query)))
    return None


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
            and not _is_pager_label(label)
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
    base_hrefs = root.xpath("//base/@href")
    base = urljoin(base_url, str(base_hrefs[0]).strip()) if base_hrefs else base_url
    for anchor in root.xpath("//a[@href] | //area[@href]"):
        url = absolute_url(str(anchor.get("href")), base)
        if url is not None:
            label = " ".join(" ".join(anchor.itertext()).split()).lower()
            yield url, _in_template_region(anchor), label


def _is_pager_label(label: str) -> bool:
    """Tell whether a link label belongs to a pager: a page number, arrows, "Next", "Previous"."""
    words = _WORD_EDGES.sub("", label)
    return (bool(label) and not words) or words.isdigit() or words in _PAGER_WORDS


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
