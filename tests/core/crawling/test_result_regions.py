"""Records found from the structure of the result list, pagers by their place, the diagnosis."""

from __future__ import annotations

from typing import Any

import pytest

from websim_crawler.core.crawling import (
    CrawlDiagnosis,
    DataRegion,
    ResultListMemory,
    ResultRecords,
    find_data_regions,
    find_records,
    next_page,
    record_links,
    regions,
    url_shape,
)
from websim_crawler.core.html import parse_html
from websim_crawler.core.page import SiteTemplateMemory, analyse_page

BASE = "http://db.example.org"
RESULTS_URL = BASE + "/db/docs?_search=tea&_size=10"


def page(body: str) -> Any:
    return parse_html(f"<html><head></head><body>{body}</body></html>")


def table_page(row_ids: list[int], *, next_link: bool) -> str:
    """A database browser's table page: rows linked by their numbers, chrome links around."""
    rows = "".join(
        f'<tr><td><a href="/db/docs/{number}">{number}</a></td><td>Tea note {number}</td>'
        f"<td>{number * 3}</td></tr>"
        for number in row_ids
    )
    pager = '<p><a href="/db/docs?_search=tea&amp;_size=10&amp;_next=3">Next page</a></p>'
    return f"""
<header><nav><a href="/">home</a> / <a href="/db">db</a></nav></header>
<section class="content"><h1>docs</h1>
<form action="/db/docs"><input name="_search"></form>
<p><a href="/db?sql=select+*+from+docs&amp;search=tea">View and edit SQL</a></p>
<p class="export-links">This data as <a href="/db/docs.json?_search=tea">json</a>,
<a href="/db/docs.csv?_search=tea">CSV</a></p>
<table><thead><tr><th><a href="/db/docs?_sort=id">id</a></th></tr></thead>
<tbody>{rows}</tbody></table>
{pager if next_link else ""}
</section>
<footer><a href="https://datasette.io/">Powered by Datasette</a></footer>"""


def test_rows_linked_by_their_numbers_are_the_records() -> None:
    found = find_records(page(table_page([2, 4, 17], next_link=True)), RESULTS_URL)
    assert found.links == (BASE + "/db/docs/2", BASE + "/db/docs/4", BASE + "/db/docs/17")
    assert found.region is not None
    assert found.region.shape == "/db/docs/*"
    assert found.region.location.endswith("table/tbody>tr")
    assert "/*?search&sql" in found.other_shapes  # the SQL link: a candidate, not a record


def test_a_one_row_result_page_gives_only_the_row() -> None:
    found = find_records(page(table_page([17], next_link=False)), RESULTS_URL)
    assert found.links == (BASE + "/db/docs/17",)
    # Without the table's structure the row and the SQL link are two one-off links alike;
    # the SQL link carries the query: a view of the result list, not a record.
    flat = page('<a href="/db/docs/17">17</a> <a href="/db?sql=x&amp;search=tea">SQL</a>')
    assert len(record_links(flat, RESULTS_URL)) == 2
    assert find_records(flat, RESULTS_URL, query="Tea").links == (BASE + "/db/docs/17",)


def test_a_lone_item_is_a_record_where_other_pages_had_their_region() -> None:
    cards = (
        '<div class="cards">{}</div><p><a href="/help">Search help</a></p>'
        "<p><a href=/db?sql=x>SQL</a></p>"
    )
    card = '<div class="card"><a href="/item/{0}"><img src="/i/{0}.png"></a> Card {0}</div>'
    memory = ResultListMemory()
    many = find_records(page(cards.format(card.format(1) + card.format(2))), RESULTS_URL)
    assert many.links == (BASE + "/item/1", BASE + "/item/2")  # labelled by images alone
    alone = page(cards.format(card.format(3)))
    assert find_records(alone, RESULTS_URL).region is None  # one card in a div: no list
    assert many.region is not None
    memory.observe(many.other_shapes, many.regions)
    found = find_records(alone, RESULTS_URL, memory=memory)
    assert found.links == (BASE + "/item/3",)


def test_records_labelled_by_dates_ids_or_nothing() -> None:
    items = "".join(
        f'<li><a href="/notes/{key}">{label}</a> notes of the day</li>'
        for key, label in (("a7", "2024-05-01"), ("b9", "ID-339"), ("c2", ""))
    )
    found = find_records(page(f"<ul>{items}</ul><a href='/about'>About</a>"), RESULTS_URL)
    assert found.links == tuple(BASE + f"/notes/{key}" for key in ("a7", "b9", "c2"))


def test_a_row_labelled_with_the_next_page_number_is_never_the_next_page() -> None:
    # The last result page (page 3) has no "Next" link; a row is labelled 4.
    root = page(table_page([4, 9], next_link=False))
    found = find_records(root, RESULTS_URL)
    assert BASE + "/db/docs/4" in found.links
    assert next_page(root, RESULTS_URL, 3, record_links=found.links) is None
    # A lone number outside any list is a label, not a pager: no next page either.
    lone = page('<p>See <a href="/db/docs?_search=tea&amp;p=4">4</a></p>')
    assert next_page(lone, RESULTS_URL, 3) is None


def test_a_run_of_page_numbers_is_the_pager_not_a_region() -> None:
    results = "".join(
        f'<li class="hit"><a href="/record/{n}">Record {n}</a> about tea</li>' for n in (5, 8)
    )
    pager = (
        '<ul class="pages"><li><strong>1</strong></li>'
        + "".join(f'<li><a href="/search/page/{n}">{n}</a></li>' for n in (2, 3, 4))
        + "</ul>"
    )
    root = page(f"<ol>{results}</ol>{pager}")
    url = BASE + "/search?q=tea"
    found = find_records(root, url)
    assert found.links == (BASE + "/record/5", BASE + "/record/8")
    assert next_page(root, url, 1, record_links=found.links) is not None
    assert next_page(root, url, 1, record_links=found.links).url == BASE + "/search/page/2"


def test_chrome_is_what_every_result_page_has_outside_its_region() -> None:
    memory = ResultListMemory(min_pages=3)
    for rows in ([1, 2], [3, 5], [8, 9]):
        found = find_records(page(table_page(rows, next_link=True)), RESULTS_URL, memory=memory)
        assert found.region is not None
        memory.observe(found.other_shapes, found.regions)
    assert memory.chrome_shapes() == frozenset({"/*?search&sql"})
    # A page whose table is gone (an error page) no longer offers the SQL link as a record.
    bare = page('<p><a href="/db?sql=select+1&amp;search=x">View and edit SQL</a></p>')
    assert find_records(bare, RESULTS_URL, memory=memory).links == ()
    assert find_records(bare, RESULTS_URL).links == (BASE + "/db?sql=select+1&search=x",)
    # Chrome left out of a page's records is still seen on it: the memory keeps it as chrome.
    for _ in range(3):
        found = find_records(bare, RESULTS_URL, memory=memory)
        memory.observe(found.other_shapes)
    assert memory.chrome_shapes() == frozenset({"/*?search&sql"})


def test_memory_bounds_are_counted() -> None:
    memory = ResultListMemory(max_shapes=2, max_locations=1)
    memory.observe(["/a", "/b", "/c"], [DataRegion("body>ul>li", "/r/*", (), 3, 0)])
    memory.observe([], [DataRegion("body>ol>li", "/s/*", (), 3, 0)])
    assert memory.dropped == 2  # "/c" and the second location
    assert memory.known_locations() == frozenset({"body>ul>li"})


def test_region_search_is_bounded_by_elements() -> None:
    items = "".join(f'<li><a href="/r/{n}">record {n}</a></li>' for n in range(400))
    small = find_records(page(f"<ul>{items}</ul>"), RESULTS_URL, max_elements=1000)
    assert len(small.links) == 400 and not small.truncated
    cut = find_records(page(f"<ul>{items}</ul>" * 4), RESULTS_URL, max_elements=1000)
    assert cut.truncated


def test_nested_lists_cost_a_bounded_amount_per_link(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deeply nested one-item lists (each a region by HTML's meaning): each link is charged to a
    bounded number of ancestors, so doubling the depth doubles the work, not quadruples it."""
    calls = []

    def counted_shape(url: str) -> str:
        calls.append(url)
        return url_shape(url)

    monkeypatch.setattr(regions, "url_shape", counted_shape)
    work = []
    for depth in (200, 400):
        root = page("<ul><li><a href='/r/x'>r</a>" * depth + "</li></ul>" * depth)
        anchors = {anchor: f"{BASE}/r/{n}" for n, anchor in enumerate(root.iter("a"))}
        calls.clear()
        find_data_regions(root, anchors)
        work.append(len(calls))
    assert 1.5 <= work[1] / work[0] <= 2.5


def chrome_crawl(pages: int) -> CrawlDiagnosis:
    diagnosis = CrawlDiagnosis()
    for number in range(pages):
        link = f"{BASE}/db?sql=select+{number}&search=q{number}"
        diagnosis.add_result_page(f"q{number}", ResultRecords((link,), (), frozenset()))
    return diagnosis


def test_diagnosis_of_a_crawl_whose_records_are_chrome() -> None:
    result = chrome_crawl(6).finish(frozenset({"/*?search&sql"}))
    assert result.chrome_like_records == 6
    assert result.warning() is not None and "every result page" in result.warning()
    assert result.failure() is not None
    stats = result.stats()
    assert stats["websim/diagnosis/no_data_region"] == 1
    assert stats["websim/diagnosis/records/chrome_like"] == 6
    assert stats["websim/diagnosis/warning"] == 1


def test_diagnosis_of_a_crawl_with_region_records_and_empty_queries() -> None:
    diagnosis = CrawlDiagnosis()
    for query, rows in (("tea", [1, 2, 3]), ("tea", [4]), ("zzz", []), ("oak", [7, 8])):
        root = page(table_page(rows, next_link=False).replace("tea", query))
        found = find_records(root, RESULTS_URL.replace("tea", query), query=query)
        diagnosis.add_result_page(query, found)
    result = diagnosis.finish(frozenset())
    assert result.records_by_pattern == {"/db/docs/*": 6}
    assert result.records_from_regions == 6 and result.records_by_pattern_only == 0
    assert result.queries_without_records == ("zzz",)
    assert result.result_pages_without_records == 1
    assert result.warning() is None and result.failure() is None
    assert "4 result pages (0 empty, 1 without records found, 0 with several lists)" in (
        result.summary()
    )


def test_a_record_shown_in_full_on_result_lists_keeps_its_text() -> None:
    """The site-template memory learns per page kind: record pages from record pages."""
    record_text = (
        "The ferry crosses the estuary at dawn when the tide is high and the river bank floods, "
        "carrying silt and seedlings downstream to the delta gardens of the old town."
    )

    def results(query: str) -> str:
        other = f"Another note about {query} and the weather of the northern valleys this year."
        return (
            f"<html><head><title>Results for {query}</title></head><body>"
            f"<nav><a href='/'>Home</a></nav><table><tbody>"
            f"<tr><td><a href='/r/1'>1</a></td><td>{record_text}</td></tr>"
            f"<tr><td><a href='/r/2'>2</a></td><td>{other}</td></tr>"
            f"</tbody></table></body></html>"
        )

    record = (
        "<html><head><title>Row 1</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<table><tr><th>body</th><td>{record_text}</td></tr></table></body></html>"
    )
    main_texts = {}
    for kinds in (("results", "record"), (None, None)):
        memory = SiteTemplateMemory(min_pages=3)
        for query in ("ferry", "river", "delta", "tide"):
            analyse_page(
                results(query), f"{BASE}/s?q={query}", site_memory=memory, page_kind=kinds[0]
            )
        analysis = analyse_page(record, f"{BASE}/r/1", site_memory=memory, page_kind=kinds[1])
        main_texts[kinds[1]] = analysis.main_text
    assert "ferry crosses the estuary" in main_texts["record"]
    assert "ferry crosses the estuary" not in main_texts[None]  # one memory for the whole site


def test_the_results_win_over_a_longer_menu_of_short_links() -> None:
    menu = "".join(f'<li><a href="/category/{n}">Cat {n}</a></li>' for n in range(12))
    results = "".join(
        f'<div class="hit"><a href="/item/{n}">Item {n}</a><p>A long snippet of result {n} '
        "about tea harvests, the gardens they come from and the people who pick them.</p></div>"
        for n in range(4)
    )
    found = find_records(page(f"<ul>{menu}</ul><div>{results}</div>"), RESULTS_URL)
    assert found.links == tuple(BASE + f"/item/{n}" for n in range(4))


def test_a_documentation_search_lists_pages_of_several_sections() -> None:
    """MkDocs' search: one result per page, pages under several sections, all in the site's
    navigation too (the start page's template links)."""
    sections = ["library/77/", "howto/12/", "library/56/", "c-api/22/", "tutorial/97/"]
    results = "".join(
        f'<article><h3><a href="../{path}">Title {n}</a></h3><p>Summary {n} of the page.</p>'
        f"</article>"
        for n, path in enumerate(sections)
    )
    menu = "".join(f'<li><a href="../{path}">Title {n}</a></li>' for n, path in enumerate(sections))
    html = (
        f'<nav class="menu"><ul>{menu}</ul></nav>'
        f'<div class="content"><div id="search-results">{results}</div></div>'
    )
    url = "http://docs.example.org/site/search.html?q=tea"
    expected = tuple(f"http://docs.example.org/{path}" for path in sections)
    template = frozenset(expected)  # every page is in the navigation of the start page
    found = find_records(page(html), url, template_links=template)
    assert found.links == expected
    assert found.region is not None and found.region.shape == "/*/*/"


def test_a_documentation_search_takes_every_section_however_many_one_section_holds() -> None:
    """Sphinx's search for "decimal" in the Python docs: 193 of 234 results under
    ``library/``, the others under ``whatsnew/``, ``c-api/``, ``tutorial/``...: a section
    with over four fifths of the results is not the list's pattern, its outline is."""
    sections = ["library"] * 17 + ["whatsnew", "c-api", "tutorial"]
    results = "".join(
        f'<li><a href="{section}/page{n}.html">Page {n}</a><p class="context">About {n}.</p></li>'
        for n, section in enumerate(sections)
    )
    url = "http://docs.example.org/search.html?q=decimal"
    found = find_records(page(f'<ul class="search">{results}</ul>'), url)
    expected = tuple(
        f"http://docs.example.org/{section}/page{n}.html" for n, section in enumerate(sections)
    )
    assert found.links == expected


def test_an_answer_of_one_record_listed_once_per_section_is_found_where_lists_were() -> None:
    # MkDocs' search lists a page and each of its matching sections, all linking the page.
    def search_page(pages: list[int], sections: int) -> Any:
        articles = "".join(
            f'<article><h3><a href="/library/{number}/{anchor}">Page {number}</a></h3>'
            f"<p>What page {number} says about tea.</p></article>"
            for number in pages
            for anchor in ["", *(f"#part-{part}" for part in range(sections))]
        )
        return page(f'<div class="nav"><a href="/about/">About</a></div><div>{articles}</div>')

    one = search_page([75], sections=1)
    url = BASE + "/search.html?q=bdb"
    navigation = frozenset({BASE + "/library/75/"})  # the site's menu links every page
    # Alone, two items linking one page are a control, and the page is in the site's menu.
    assert find_records(one, url, template_links=navigation).links == ()
    memory = ResultListMemory()
    found = find_records(search_page([3, 8, 12], sections=1), url, memory=memory)
    memory.observe(found.other_shapes, found.regions)
    found = find_records(one, url, memory=memory, template_links=navigation)
    assert found.links == (BASE + "/library/75/",)
    assert found.region is not None and found.region.items == 2
