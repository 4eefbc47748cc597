"""The pure crawl logic: search-form discovery, next result page, record links, crawl params."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from form2request import form2request
from scrapy.http import HtmlResponse

from websim_crawler.config import WebsimConfig
from websim_crawler.config.render import RenderParams
from websim_crawler.core.crawling import (
    SearchTarget,
    advance_page_parameter,
    find_search_form,
    form_words,
    next_page,
    rank_search_forms,
    record_links,
    site_template_links,
    url_shape,
)
from websim_crawler.core.html import parse_html
from websim_crawler.core.urls import absolute_url, looks_like_page
from websim_crawler.errors import ConfigError

SITE = Path(__file__).resolve().parents[2] / "support" / "site"
BASE = "http://shop.example.org/"


def page(body: str, head: str = "") -> object:
    return parse_html(f"<html><head>{head}</head><body>{body}</body></html>")


# --- search forms -----------------------------------------------------------------------------


def test_search_form_is_told_apart_from_login_and_newsletter_forms() -> None:
    root = parse_html((SITE / "index.html").read_text())
    form = find_search_form(root, "http://127.0.0.1:8000/index.html")
    assert form is not None
    assert form.form_number == 2  # after the login and newsletter forms
    assert form.query_field == "query"
    assert form.method == "GET"
    assert form.action == "http://127.0.0.1:8000/results.html"


def test_form_words_are_the_search_forms_own_not_a_login_forms_beside_it() -> None:
    root = page(
        '<form action="/login" method="post"><label>Password <input type="password" name="pw">'
        "</label><button>Log in</button></form>"
        '<form action="/search"><label for="q">Catalogue words</label><input id="q" name="q" '
        'placeholder="title or author"><select name="shelf"><option>Poetry</option>'
        '<option>Maps</option></select><input type="submit" value="Find"></form>'
    )
    form = find_search_form(root, BASE)
    assert form is not None
    words = form_words(root.xpath("//form")[form.form_number]).split()
    assert words == ["Catalogue", "words", "title", "or", "author", "Poetry", "Maps", "Find"]
    assert form_words(root.xpath("//form")[0]).split() == ["Password", "Log", "in"]


def test_post_search_form_is_found_with_its_search_box() -> None:
    root = parse_html((SITE / "post.html").read_text())
    form = find_search_form(root, "http://127.0.0.1:8000/post.html")
    assert form is not None
    assert (form.form_number, form.query_field, form.method) == (1, "keywords", "POST")
    assert form.action.endswith("/post-results.html")


def test_search_form_action_resolves_against_the_base_href_as_its_submission() -> None:
    body = (
        '<html><head><base href="http://a.test/sub/"></head><body>'
        '<form action="search"><input name="q"></form></body></html>'
    )
    response = HtmlResponse("http://a.test/start/page.html", body=body.encode(), encoding="utf-8")
    form = find_search_form(response.selector.root, response.url)
    assert form is not None and form.action == "http://a.test/sub/search"
    submitted = form2request(response.xpath("//form")[0], {"q": "x"}).url
    assert submitted.split("?")[0] == form.action


def test_page_with_only_a_login_form_has_no_search_form() -> None:
    root = parse_html((SITE / "noform.html").read_text())
    assert find_search_form(root, BASE) is None
    assert find_search_form(page("<p>no forms at all</p>"), BASE) is None


def test_contact_form_ranks_below_a_search_form() -> None:
    root = page(
        '<form action="/contact" method="post"><input name="subject"><input name="topic">'
        '<input type="email" name="mail"><textarea name="message"></textarea></form>'
        '<div role="search"><form action="/find"><input name="words"></form></div>'
    )
    ranked = rank_search_forms(root, BASE)
    assert [candidate.form_number for candidate in ranked] == [1, 0]
    assert ranked[0].query_field == "words"
    assert ranked[0].score > ranked[1].score


def test_query_box_is_picked_among_several_text_boxes() -> None:
    root = page(
        '<form action="/advanced" method="POST"><input name="author"><input name="year">'
        '<input type="search" name="terms"></form>'
    )
    form = find_search_form(root, BASE)
    assert form is not None
    assert (form.query_field, form.method, form.action) == ("terms", "POST", BASE + "advanced")
    # A form without an action submits to the page itself.
    bare = find_search_form(page('<form><input name="q"></form>'), BASE + "list?x=1")
    assert bare is not None
    assert bare.action == BASE + "list?x=1"


# --- next result page ---------------------------------------------------------------------------


def next_page_url(root: Any, url: str, page_number: int, *, results_on_page: int = 0) -> str | None:
    """Return the URL ``next_page`` leads to, or ``None``."""
    found = next_page(root, url, page_number, results_on_page=results_on_page)
    return found.url if found is not None else None


def test_rel_next_wins_over_page_numbers() -> None:
    root = page('<a href="/r?page=9">2</a><a rel="next" href="/r?page=2">more</a>')
    assert next_page_url(root, "http://shop.example.org/r", 1) == "http://shop.example.org/r?page=2"


def test_link_rel_next_in_head_is_used() -> None:
    root = page("<p>results</p>", head='<link rel="next" href="/list/2">')
    assert next_page_url(root, "http://shop.example.org/list/1", 1) == (
        "http://shop.example.org/list/2"
    )


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        ('<a href="/s?p=2">Next &rsaquo;</a>', "/s?p=2"),
        ('<a href="/s?p=2">&raquo;</a>', "/s?p=2"),
        ('<a href="/s?p=2">›</a>', "/s?p=2"),
        ('<a href="/s?p=2" aria-label="Next page"><img src="arrow.png"></a>', "/s?p=2"),
        ('<a href="/s?p=2" class="pagination-next">go</a>', "/s?p=2"),
        ('<a href="/s?p=2">Nächste Seite</a>', "/s?p=2"),
        ('<a href="/s?p=1">1</a> <a href="/s?p=3">3</a>', None),
    ],
)
def test_next_link_by_label(anchor: str, expected: str | None) -> None:
    root = page(f'<a href="/s?p=0">&laquo; Previous</a> {anchor}')
    found = next_page_url(root, "http://shop.example.org/s?p=1", 1)
    assert found == (None if expected is None else "http://shop.example.org" + expected)


def test_page_number_link_is_followed_when_there_is_no_next_label() -> None:
    root = page('<a href="/s?p=1">1</a> <a href="/s?p=2">2</a> <a href="/s?p=3">3</a>')
    assert next_page_url(root, "http://shop.example.org/s?p=2", 2) == (
        "http://shop.example.org/s?p=3"
    )


def test_next_link_to_another_site_is_ignored() -> None:
    root = page('<a href="http://ads.example.net/?p=2">Next</a>')
    assert next_page_url(root, "http://shop.example.org/s", 1) is None


def test_page_parameter_is_advanced_only_without_a_pager_and_with_results() -> None:
    bare = page('<a href="/item/1">one</a>')
    url = "http://shop.example.org/s?q=tea&page=2"
    assert next_page_url(bare, url, 2, results_on_page=10) == (
        "http://shop.example.org/s?q=tea&page=3"
    )
    assert next_page_url(bare, url, 2, results_on_page=0) is None
    with_pager = page('<a href="/s?q=tea&amp;page=1">1</a>')
    assert next_page_url(with_pager, url, 2, results_on_page=10) is None


def test_offset_parameter_moves_by_the_results_shown() -> None:
    assert advance_page_parameter("http://x.org/s?q=a&start=20", 10) == (
        "http://x.org/s?q=a&start=30"
    )
    assert advance_page_parameter("http://x.org/s?q=a", 10) is None
    assert advance_page_parameter("http://x.org/s?page=last", 10) is None


# --- record links -------------------------------------------------------------------------------


RESULTS_HTML = """
<header><a href="/">Home</a>
<nav><a href="/about">About</a><a href="/topics">Topics</a></nav></header>
<main><ol>
  <li><article><header><h3><a href="/record/12">Green tea harvests</a></h3></header></article>
      <a href="/topic/tea">Tea</a></li>
  <li><a href="/record/7">Oolong</a> <a href="/record/7.pdf">PDF</a></li>
  <li><a href="/record/30#comments">Tea ceremonies</a></li>
</ol>
<a href="/help/searching">Search help</a>
<a href="/search?q=tea&amp;sort=date">Sort by date</a>
<div class="pager"><a href="/search/page/2">2</a> <a href="/search/page/2">Next ›</a></div>
</main>
<aside><a href="/record/99">Popular record</a></aside>
<div class="ads"><a href="http://ads.example.net/x">Buy</a></div>
<footer><a href="/privacy">Privacy</a></footer>
"""


def test_record_links_are_the_results_not_template_pager_or_one_off_links() -> None:
    root = page(RESULTS_HTML)
    records = record_links(
        root,
        "http://shop.example.org/search?q=tea",
        search=SearchTarget.of_urls(["http://shop.example.org/search"]),
    )
    assert records == [
        "http://shop.example.org/record/12",
        "http://shop.example.org/record/7",
        "http://shop.example.org/record/30",
    ]


def test_one_off_link_is_kept_only_when_every_link_is_a_one_off() -> None:
    two_records = page('<a href="/r/1">a</a><a href="/r/2">b</a><a href="/topic/tea">Tea</a>')
    assert record_links(two_records, BASE + "s?q=1") == [BASE + "r/1", BASE + "r/2"]
    one_record = page('<a href="/r/1">a</a><a href="/topic/tea">Tea</a>')
    assert record_links(one_record, BASE + "s?q=1") == [BASE + "r/1", BASE + "topic/tea"]


def test_template_links_of_the_start_page_are_records_only_in_a_data_region() -> None:
    template = frozenset({"http://shop.example.org/record/2"})
    url = "http://shop.example.org/search?q=x"
    # No data region (the links share no parent): the start page's template link is left out.
    loose = page('<p><a href="/record/1">a</a></p><div><a href="/record/2">b</a></div>'
                 '<span><a href="/record/3">c</a></span>')  # fmt: skip
    assert record_links(loose, url, template_links=template) == [
        "http://shop.example.org/record/1",
        "http://shop.example.org/record/3",
    ]
    # A list of results may name pages the site's navigation names too: they are records.
    listed = page('<ul><li><a href="/record/1">a</a></li><li><a href="/record/2">b</a></li>'
                  '<li><a href="/record/3">c</a></li></ul>')  # fmt: skip
    assert len(record_links(listed, url, template_links=template)) == 3


def test_site_template_links_come_from_regions_or_the_whole_page() -> None:
    semantic = page('<nav><a href="/about">About</a></nav><main><a href="/record/1">r</a></main>')
    assert site_template_links(semantic, BASE) == frozenset({"http://shop.example.org/about"})
    tables = page('<table><tr><td><a href="/about">About</a><a href="/r/1">r</a></td></tr></table>')
    assert site_template_links(tables, BASE) == frozenset(
        {"http://shop.example.org/about", "http://shop.example.org/r/1"}
    )


def test_url_helpers() -> None:
    assert url_shape("http://x.org/record/12?id=3&b=1") == "/record/*?b&id"
    assert url_shape("http://x.org/a/2024/notes/") == "/a/0/notes/"
    assert absolute_url("javascript:void(0)", BASE) is None
    assert absolute_url("#top", BASE) is None
    assert absolute_url("ftp://x.org/f", BASE) is None
    assert absolute_url("http://[broken/", BASE) is None
    assert absolute_url(" ../a/b#frag ", "http://x.org/c/d/e") == "http://x.org/c/a/b"
    assert looks_like_page("http://x.org/a/b.html")
    assert looks_like_page("http://x.org/a/v1.2/")
    assert not looks_like_page("http://x.org/a/b.PDF")


# --- parameters ---------------------------------------------------------------------------------


def test_crawl_params_come_from_settings_and_are_checked() -> None:
    config = WebsimConfig.from_settings(
        {"WEBSIM_MAX_RESULT_PAGES": "3", "WEBSIM_RENDER_SCREENSHOT": "yes"}
    )
    assert config.crawl.max_result_pages == 3
    assert config.render.screenshot is True
    assert config.render.chromium_path == "/usr/bin/chromium"
    with pytest.raises(ConfigError, match="WEBSIM_MAX_RESULT_PAGES"):
        WebsimConfig.from_settings({"WEBSIM_MAX_RESULT_PAGES": "0"})
    with pytest.raises(ConfigError, match="WEBSIM_RENDER_TIMEOUT"):
        RenderParams(timeout=0.0)
