"""Link roles from path and query parameters together: query-routed sites, several result lists,
footer permalinks, record ids with slashes, result pages that say they are empty."""

from __future__ import annotations

from typing import Any

import pytest

from websim_crawler.core.crawling import (
    CrawlDiagnosis,
    ResultListMemory,
    SearchTarget,
    find_records,
    find_search_form,
    says_no_results,
    shapes_nest,
    shows_result_list,
)
from websim_crawler.core.html import parse_html

WIKI = "http://wiki.example.org"


def page(body: str) -> Any:
    return parse_html(f"<html><head><title>t</title></head><body>{body}</body></html>")


def wiki_results(
    query: str, titles: list[str], texts: list[str], *, routing: str, offset: int = 0
) -> str:
    """A MediaWiki-like search page: title matches and text matches, each a list under its
    heading, a "next 20" pager, a sidebar, and a "Retrieved from" permalink under the content."""

    def article(title: str) -> str:
        name = title.replace(" ", "_")
        return f"/index.php?title={name}" if routing == "query" else f"/index.php/{name}"

    def results(names: list[str]) -> str:
        return "".join(
            f'<li class="mw-search-result"><div class="mw-search-result-heading">'
            f'<a href="{article(name)}" title="{name}">{name}</a></div>'
            f'<div class="searchresult">about the {query} and more words {name}</div>'
            f'<div class="mw-search-result-data">2 KB (310 words) - 10:00, 1 May 2026</div></li>'
            for name in names
        )

    search = f"/index.php?title=Special:Search&amp;search={query}"
    lists = ""
    if titles:
        lists += f'<h2>Page title matches</h2><ul class="mw-search-results">{results(titles)}</ul>'
    if texts:
        lists += f'<h2>Page text matches</h2><ul class="mw-search-results">{results(texts)}</ul>'
    if not titles and not texts:
        lists = '<p class="mw-search-nonefound">There were no results matching the query.</p>'
    permalink = (
        f"{WIKI}/index.php?title=Special:Search&amp;search={query}&amp;fulltext=1"
        if routing == "query"
        else f"{WIKI}/index.php/Special:Search?search={query}&amp;fulltext=1"
    )
    return f"""
<div id="mw-page-base"></div>
<div id="content" class="mw-body" role="main">
 <h1 id="firstHeading">Search results</h1>
 <div id="bodyContent">
  <div id="mw-content-text">
   <form id="search" action="/index.php"><input type="hidden" name="title"
    value="Special:Search"><input name="search" value="{query}"><input type="submit"
    name="fulltext" value="Search"></form>
   <div class="mw-search-profile-tabs"><a href="{search}&amp;profile=default">Content pages</a>
    <a href="{search}&amp;profile=images">Multimedia</a>
    <a href="{search}&amp;profile=all">Everything</a></div>
   <div class="searchresults">{lists}</div>
   <p class="mw-search-pager-bottom">View (previous 20 | <a class="mw-nextlink"
    href="{search}&amp;offset={offset + 20}&amp;limit=20">next 20</a>)
    (<a href="{search}&amp;limit=50">50</a> | <a href="{search}&amp;limit=100">100</a>)</p>
  </div>
  <div class="printfooter">Retrieved from "<a dir="ltr" href="{permalink}">{permalink}</a>"</div>
 </div>
</div>
<div id="mw-navigation"><div id="mw-panel" role="navigation">
 <ul><li><a href="{article("Main Page")}">Main page</a></li>
 <li><a href="/index.php?title=Special:RecentChanges">Recent changes</a></li>
 <li><a href="/index.php?title=Special:Random">Random page</a></li></ul></div>
 <div id="p-search" role="search"><form action="/index.php" id="searchform"><input
  type="hidden" name="title" value="Special:Search"><input type="search" name="search"
  placeholder="Search"></form></div></div>
<div id="footer" role="contentinfo"><a href="{article("Project:About")}">About</a></div>"""


@pytest.mark.parametrize("routing", ["query", "path"])
def test_both_lists_of_a_wiki_search_page_are_records_and_nothing_else(routing: str) -> None:
    root = page(
        wiki_results("thread", ["Thread A", "Threads"], ["Lock", "Queue", "Pool"], routing=routing)
    )
    form = find_search_form(root, WIKI + "/index.php?title=Special:Search")
    assert form is not None and ("title", "Special:Search") in form.fixed_fields
    search = SearchTarget.of_form(form.action, form.query_field, form.fixed_fields)
    url = WIKI + "/index.php?search=thread&title=Special%3ASearch&fulltext=1"
    found = find_records(root, url, search=search, query="thread")
    names = ["Thread_A", "Threads", "Lock", "Queue", "Pool"]
    if routing == "query":
        assert found.links == tuple(f"{WIKI}/index.php?title={name}" for name in names)
    else:
        assert found.links == tuple(f"{WIKI}/index.php/{name}" for name in names)
    assert len(found.regions) == 2  # title matches and text matches, both taken


def test_a_short_last_page_does_not_take_the_permalink_for_a_record() -> None:
    for routing in ("query", "path"):
        root = page(wiki_results("thread", [], ["Lock"], routing=routing))
        form = find_search_form(root, WIKI + "/")
        assert form is not None
        search = SearchTarget.of_form(form.action, form.query_field, form.fixed_fields)
        url = WIKI + "/index.php?title=Special:Search&search=thread&offset=20"
        found = find_records(root, url, search=search, query="thread")
        assert len(found.links) == 1 and "Lock" in found.links[0]
        empty = find_records(
            page(wiki_results("thread", [], [], routing=routing)),
            url,
            search=search,
            query="thread",
        )
        assert empty.links == () and empty.says_empty


def test_links_are_read_by_path_and_parameters_together() -> None:
    mediawiki = SearchTarget.of_form(WIKI + "/index.php", "search", [("title", "Special:Search")])
    results = WIKI + "/index.php?search=thread&title=Special%3ASearch&fulltext=1"
    assert not shows_result_list(WIKI + "/index.php?title=Thread", results, mediawiki)
    assert not shows_result_list(WIKI + "/index.php?title=Thread/Sub", results, mediawiki)
    for view in (
        "/index.php?title=Special:Search&search=lock",  # another query
        "/index.php?title=Special:Search&search=thread&offset=20&limit=20",  # the pager
        "/index.php?title=Special:Search&profile=images",  # the form's target
        "/index.php?search=thread&title=Special%3ASearch&fulltext=1",  # the page itself
        "/index.php",
    ):
        assert shows_result_list(WIKI + view, results, mediawiki), view
    dokuwiki = SearchTarget.of_form(WIKI + "/doku.php", "q", [("do", "search"), ("id", "start")])
    results = WIKI + "/doku.php?do=search&id=start&q=thread"
    assert not shows_result_list(WIKI + "/doku.php?id=wiki:thread&s[]=thread", results, dokuwiki)
    assert shows_result_list(
        WIKI + "/doku.php?do=search&id=start&q=thread+@wiki", results, dokuwiki
    )
    assert shows_result_list(WIKI + "/doku.php?id=start", results, dokuwiki)  # the start page
    wordpress = SearchTarget.of_form("http://blog.example.org/", "s")
    results = "http://blog.example.org/?s=tea"
    assert not shows_result_list("http://blog.example.org/?p=123", results, wordpress)
    assert shows_result_list("http://blog.example.org/?s=tea&orderby=date", results, wordpress)
    template = SearchTarget.of_template("http://shop.example.org/item.php?q={query}&lang=en")
    assert template.query_fields == {"q"} and template.fixed_fields == {("lang", "en")}
    results = "http://shop.example.org/item.php?q=tea&lang=en"
    assert not shows_result_list("http://shop.example.org/item.php?id=7", results, template)
    assert shows_result_list(
        "http://shop.example.org/item.php?lang=en&sort=price", results, template
    )
    # Another path is never the list, whatever its parameters: the records of most sites.
    assert not shows_result_list("http://shop.example.org/item/7?q=tea", results, template)
    # Without a form, a parameter of the page holding the query is its query field.
    assert shows_result_list(WIKI + "/find?_search=lock", WIKI + "/find?_search=tea", query="tea")


def test_query_routed_records_on_the_forms_path_are_found_with_a_dokuwiki_layout() -> None:
    quick = "".join(
        f'<li><a href="/doku.php?id=docs:{name}" class="wikilink1">{name}</a></li>'
        for name in ("thread", "threading")
    )
    full = "".join(
        f'<dt><a href="/doku.php?id=docs:{name}&amp;s[]=thread" class="wikilink1">{name}</a>:'
        f" 3 Hits</dt><dd>the thread module {name} text</dd>"
        for name in ("queue", "lock", "thread")
    )
    root = page(
        '<div id="dokuwiki__site"><div id="dokuwiki__header"><form action="/doku.php"'
        ' role="search"><input type="hidden" name="do" value="search"><input type="hidden"'
        ' name="id" value="start"><input name="q"></form></div><div class="page">'
        '<div class="search-results-form"><a href="/doku.php?do=search&amp;id=start&amp;'
        'q=thread+@docs">docs</a> <a href="/doku.php?do=search&amp;id=start&amp;q=thread'
        '&amp;min=2026-01-01">past year</a></div>'
        f'<div class="search_quickresult"><h2>Matching pagenames</h2><ul>{quick}</ul></div>'
        f'<div class="search_fulltextresult"><h2>Fulltext results</h2><dl>{full}</dl></div>'
        '</div><div id="dokuwiki__footer"><a href="/doku.php?id=start&amp;do=recent">'
        "Recent</a></div></div>"
    )
    form = find_search_form(root, WIKI + "/doku.php")
    assert form is not None
    search = SearchTarget.of_form(form.action, form.query_field, form.fixed_fields)
    found = find_records(root, WIKI + "/doku.php?do=search&id=start&q=thread", search=search)
    assert len(found.regions) == 2
    assert set(found.links) == {
        WIKI + "/doku.php?id=docs:thread",
        WIKI + "/doku.php?id=docs:threading",
        WIKI + "/doku.php?id=docs:queue&s[]=thread",
        WIKI + "/doku.php?id=docs:lock&s[]=thread",
        WIKI + "/doku.php?id=docs:thread&s[]=thread",
    }


def test_a_record_whose_id_holds_a_slash_stays_in_its_list() -> None:
    items = "".join(
        f'<li><a href="/wiki/{name}">{name.replace("_", " ")}</a> some words about it</li>'
        for name in ("Alpha", "Beta/Notes", "Gamma", "Delta%2FEpsilon")
    )
    found = find_records(page(f"<main><ul>{items}</ul></main>"), WIKI + "/search?q=a")
    assert found.links == tuple(
        WIKI + f"/wiki/{name}" for name in ("Alpha", "Beta/Notes", "Gamma", "Delta%2FEpsilon")
    )
    assert shapes_nest("/wiki/Beta/*", "/wiki/*") and shapes_nest("/wiki/*", "/wiki/Beta/*")
    assert shapes_nest("/item/0/photos/*", "/item/0/*")
    assert not shapes_nest("/help/Beta/*", "/wiki/*")
    assert not shapes_nest("/wiki/Beta/*?x", "/wiki/*")
    assert not shapes_nest("/wiki", "/wiki/*")
    # The many with a segment more, the few without: the few stay in the list too.
    items = "".join(
        f'<li><a href="/item/{name}">{name}</a> words about the record {name}</li>'
        for name in ("doc-1/notes", "doc-2", "doc-3/notes", "doc-4/notes", "doc-5")
    )
    found = find_records(page(f"<main><ul>{items}</ul></main>"), WIKI + "/search?q=a")
    assert len(found.links) == 5


def test_sibling_lists_under_their_headings_are_both_taken_whatever_their_links() -> None:
    titles = "".join(f'<li><a href="/item/{n}">Title {n}</a> words {n}</li>' for n in (1, 2, 3))
    texts = "".join(
        f'<li><a href="/index.php?id={n}">Text {n}</a> more words {n}</li>' for n in (4, 5)
    )
    root = page(
        f"<main><h2>Title matches</h2><ul>{titles}</ul><h2>Text matches</h2><ul>{texts}</ul></main>"
    )
    search = SearchTarget.of_form(WIKI + "/index.php", "q")
    found = find_records(root, WIKI + "/index.php?q=word", search=search, query="word")
    assert len(found.regions) == 2 and len(found.links) == 5


def test_empty_result_pages_are_counted_apart_from_pages_whose_records_were_missed() -> None:
    assert says_no_results(page("<p>There were no results matching the query.</p>"))
    assert says_no_results(page("<div>Nothing was found.</div>"))
    assert says_no_results(page("<div>Keine Treffer</div>"))
    assert not says_no_results(page("<p>Results 1-20 of 340</p><script>'no results'</script>"))
    search = SearchTarget.of_form(WIKI + "/index.php", "search", [("title", "Special:Search")])
    diagnosis = CrawlDiagnosis()
    memory = ResultListMemory()
    pages = [
        ("thread", wiki_results("thread", ["A", "B"], ["C"], routing="query")),
        ("thread", wiki_results("thread", [], [], routing="query")),  # next past the end
        ("zzz", wiki_results("zzz", [], [], routing="query")),  # says it found nothing
        ("lock", "<main><p>Some page without a list</p></main>"),  # records missed
    ]
    for query, html in pages:
        url = f"{WIKI}/index.php?title=Special:Search&search={query}"
        found = find_records(page(html), url, search=search, memory=memory, query=query)
        memory.observe(found.other_shapes, found.regions)
        diagnosis.add_result_page(query, found)
    result = diagnosis.finish(memory.chrome_shapes())
    assert result.result_pages_empty == 2
    assert result.result_pages_without_records == 1
    assert result.pages_with_several_lists == 1 and result.result_lists == 2
    assert result.stats()["websim/diagnosis/result_pages_empty"] == 2
    assert result.records == 3 and result.chrome_like_records == 0
