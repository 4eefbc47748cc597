"""The way to the next result page: a next link, a script control or a postback, else the URL."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from lxml import etree

from websim_crawler.core.crawling.labels import next_label_score
from websim_crawler.core.html import document_base_url
from websim_crawler.core.urls import absolute_url, same_host_port

_PAGE_PARAMETERS = ("page", "p", "pg", "pageno", "page_no", "pagenum", "currentpage", "paged")
_OFFSET_PARAMETERS = ("start", "offset", "first", "from", "skip")


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

    @property
    def shown(self) -> bool:
        """Tell whether the page itself shows this way on (a link or a control), rather than
        the crawl guessing it from the URL's page parameter: only then does an answer read up to
        ``max_pages`` known to go on past them."""
        return self.how != "parameter"


def next_page(
    root: etree._Element,
    url: str,
    page_number: int,
    *,
    results_on_page: int = 0,
    record_links: Collection[str] = (),
) -> NextPage | None:
    """Find the way to the result page after ``page_number`` (1-based), or ``None``.

    Evidence, strongest first: a next link (``rel="next"``; a link labelled "Next", "›" or "»"
    in its text, title or aria-label, or with a class naming "next"; a link whose text is
    ``page_number + 1`` in a run of page numbers); never one of the page's ``record_links`` (the
    data region's links, whatever their labels); a "next" control that is a script
    (``javascript:`` link, ``onclick``, button, ``__doPostBack``) with the same labels; and,
    when the page had results and links to no other page of its list, the URL's own page
    parameter (``page=``, ``p=``) or offset (``start=``) moved on by one page.
    """
    link = _best_next_link(root, url, page_number, frozenset(record_links))
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


def _best_next_link(
    root: etree._Element, url: str, page_number: int, records: frozenset[str]
) -> str | None:
    best: tuple[float, str] | None = None
    base = document_base_url(root, url)
    for score, href in _next_page_candidates(root, page_number):
        candidate = absolute_url(href, base)
        if candidate is None or candidate == url or not same_host_port(candidate, url):
            continue
        if candidate in records:
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
            hidden_next = hidden_next or next_label_score(element, page_number) >= 6.0
            continue
        plain_submit = (element.get("type") or "").lower() == "submit" and not element.get(
            "onclick"
        )
        if element.tag == "input" and plain_submit:
            continue  # a plain submit button belongs to a form such as the search box
        score = next_label_score(element, page_number)
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
            score = next_label_score(link, page_number)
            if score:
                yield score, href


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
