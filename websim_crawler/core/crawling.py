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
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from lxml import etree

from websim_crawler.core.html import document_base_url
from websim_crawler.core.params import setting, validate
from websim_crawler.core.urls import absolute_url, same_host_port


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


def looks_like_page(url: str) -> bool:
    """Tell whether a URL may be an HTML page (not an image, archive, feed or document)."""
    path = urlsplit(url).path
    last_segment = path.rsplit("/", 1)[-1]
    if "." not in last_segment:
        return True
    return last_segment.rsplit(".", 1)[-1].lower() not in _NOT_PAGE_EXTENSIONS


@dataclass(frozen=True)
class NextPage:
    """How to reach the result page after this one.

    ``how`` is ``link`` (a next link's ``url``), ``parameter`` (the URL's page parameter moved
    on), ``script`` (a control that only a script follows: click ``control``, an XPath, in the
    rendered page) or ``postback`` (an ASP.NET ``__doPostBack`` control: click it when rendering,
    else submit form ``form_number`` with ``__EVENTTARGET``/``__EVENTARGUMENT``).
    """

    how: str
    url: str | None = None
    control: str | None = None
    event_target: str = ""
    event_argument: str = ""
    form_number: int = 0


def next_page(
    root: etree._Element, url: str, page_number: int, *, results_on_page: int = 0
) -> NextPage | None:
    """Find the way to the result page after ``page_number`` (1-based), or ``None``.

    Evidence, strongest first: a next link (see :func:`next_page_url`); a "next" control that is
    a script (``javascript:`` link, ``onclick``, button, ``__doPostBack``) with the same labels;
    and, when the page had results and links to no other page of its list, the URL's own page
    parameter (``page=``, ``p=``) or offset (``start=``) moved on by one page.
    """
    link = _best_next_link(root, url, page_number)
    if link is not None:
        return NextPage("link", url=link)
    control, pager_says_last = _best_script_control(root, page_number)
    if control is not None:
        return control
    if pager_says_last:  # its "next" control is hidden or disabled: this is the last page
        return None
    if results_on_page > 0 and not _links_to_own_list(root, url):
        advanced = advance_page_parameter(url, results_on_page)
        if advanced is not None:
            return NextPage("parameter", url=advanced)
    return None


def next_page_url(
    root: etree._Element, url: str, page_number: int, *, results_on_page: int = 0
) -> str | None:
    """Find the URL of the result page after ``page_number`` (1-based), or ``None``.

    Evidence, strongest first: ``rel="next"``; a link labelled "Next"/"›"/"»" (text, title,
    aria-label or a class naming "next"); a link whose text is ``page_number + 1``; and, when the
    page had results and links to no other page of its list, the URL's own page parameter
    (``page=``, ``p=``) or offset (``start=``) moved on by one page.
    """
    found = next_page(root, url, page_number, results_on_page=results_on_page)
    return found.url if found is not None else None


def _best_next_link(root: etree._Element, url: str, page_number: int) -> str | None:
    best: tuple[float, str] | None = None
    for score, href in _next_page_candidates(root, page_number):
        candidate = absolute_url(href, url)
        if candidate is None or candidate == url or not same_host_port(candidate, url):
            continue
        if best is None or score > best[0]:
            best = (score, candidate)
    return best[1] if best is not None else None


_POSTBACK = re.compile(
    r"""(?:__doPostBack\(|WebForm_PostBackOptions\()\s*(['"])(?P<target>[^'"]*)\1"""
    r"""\s*,\s*(['"])(?P<argument>[^'"]*)\3"""
)
_SCRIPT_CONTROLS = (
    "//a[not(@href) or starts-with(normalize-space(translate(@href, 'JAVASCRIPT', "
    "'javascript')), 'javascript:') or normalize-space(@href) = '#' or @onclick]"
    " | //button | //input[@type = 'button' or @type = 'submit' or @type = 'image']"
    " | //*[@onclick][not(self::a)]"
)


def _best_script_control(root: etree._Element, page_number: int) -> tuple[NextPage | None, bool]:
    """Return the strongest shown script "next" control of a page (a click or a postback), and
    whether a hidden or disabled one was seen."""
    best: tuple[float, etree._Element] | None = None
    rendered = root.get("data-websim-page") is not None  # boxes mark the displayed elements
    hidden_next = False
    for element in root.xpath(_SCRIPT_CONTROLS):
        hidden = element.get("hidden") is not None or element.get("disabled") is not None
        if hidden or (rendered and element.get("data-websim-box") is None):
            hidden_next = hidden_next or _next_label_score(element, page_number) >= 6.0
            continue
        plain_submit = (element.get("type") or "").lower() == "submit" and not element.get(
            "onclick"
        )
        if element.tag == "input" and plain_submit:
            continue  # a plain submit button belongs to a form such as the search box
        score = _next_label_score(element, page_number)
        if score and (best is None or score > best[0]):
            best = (score, element)
    if best is None:
        return None, hidden_next
    element = best[1]
    control = element.getroottree().getpath(element)
    script = " ".join((element.get("href") or "", element.get("onclick") or ""))
    postback = _POSTBACK.search(script)
    if postback is None:
        return NextPage("script", control=control), False
    found = NextPage(
        "postback",
        control=control,
        event_target=postback.group("target"),
        event_argument=postback.group("argument"),
        form_number=_postback_form_number(root, element),
    )
    return found, False


def _postback_form_number(root: etree._Element, control: etree._Element) -> int:
    """Return the index of the form a postback submits: the one holding ``__EVENTTARGET``,
    else the one around the control, else the first."""
    forms = root.xpath("//form")
    for number, form in enumerate(forms):
        if form.xpath(".//input[@name='__EVENTTARGET']"):
            return number
    for ancestor in control.iterancestors("form"):
        return forms.index(ancestor)
    return 0


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
        elif link.tag == "a":
            score = _next_label_score(link, page_number)
            if score:
                yield score, href


def _next_label_score(element: etree._Element, page_number: int) -> float:
    """Score how plainly an element says "next page": its label, title, class or number."""
    label = " ".join(" ".join(element.itertext()).split()).lower() or (
        (element.get("value") or "").strip().lower() if element.tag == "input" else ""
    )
    described = " ".join((element.get("title") or "", element.get("aria-label") or "")).lower()
    words = _WORD_EDGES.sub("", label)
    if words in _NEXT_WORDS or _WORD_EDGES.sub("", described) in _NEXT_WORDS:
        return 8.0
    if "next" in (element.get("class") or "").lower():
        return 6.0
    if label in _NEXT_ARROWS:
        return _NEXT_ARROWS[label]
    if label == str(page_number + 1):
        return 3.0
    return 0.0


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
    base = document_base_url(root, base_url)
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
