"""The hidden-database gallery behaves as specified: records, matching, cap and pager, counts,
stop words, entrances, the advanced form, failures and the baseline query lists."""

from __future__ import annotations

import collections
import math
import re
import urllib.error
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlencode, urljoin

import pytest
from support.hidden_databases import (
    HiddenDatabase,
    HiddenDatabaseSite,
    crude_stem,
    database_records,
    failing,
    gallery,
    generic_queries,
    random_queries,
    stop_words_of,
    words_of,
)
from support.real_apps import AppMissing

SPECS = {spec.name: spec for spec in [*gallery(), *failing()]}


def get(url: str) -> tuple[int, str]:
    """GET a loopback URL; return its status and text (error pages too)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Iterator[HiddenDatabaseSite]:
    """The running site of the spec named by the test's parameter."""
    try:
        with HiddenDatabaseSite(SPECS[request.param]) as running:
            yield running
    except AppMissing as missing:
        pytest.skip(str(missing))


def on(name: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("site", [name], indirect=True)


def search_url(site: HiddenDatabaseSite, **params: str) -> str:
    if site.spec.entrance == "opensearch":
        params = {("s" if name == "q" else name): value for name, value in params.items()}
        return f"{site.url}?{urlencode(params)}"
    return f"{site.url}search?{urlencode(params)}"


def listed_ids(site: HiddenDatabaseSite, page: str) -> list[str]:
    hrefs = re.findall(r'<li class="result"><a href="([^"]+)"', page)
    return [site.record_id_of(href) or "?" for href in hrefs]


def follow_pager(site: HiddenDatabaseSite, url: str) -> tuple[list[str], list[str]]:
    """Return the ids listed on every result page reached by "Next" links, and the pages."""
    ids, pages = [], []
    while url:
        status, page = get(url)
        assert status == 200
        pages.append(page)
        ids += listed_ids(site, page)
        following = re.search(r'<a href="([^"]+)" rel="next">', page)
        url = urljoin(site.url, unescape(following.group(1))) if following else ""
    return ids, pages


def word_with_matches(site: HiddenDatabaseSite, low: int, high: int) -> str:
    """Return a (non stop) word of the records that matches between low and high records."""
    counts = collections.Counter(
        word
        for record in site.records
        for word in set(words_of(f"{record.title} {record.text}"))
        if word.isalpha() and word not in stop_words_of(site.spec.language)
    )
    for word, _ in sorted(counts.items()):
        if low <= len(site.matches(word)) <= high:
            return word
    raise AssertionError(f"no word matches {low} to {high} records")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_site_holds_its_records(name: str) -> None:
    spec = SPECS[name]
    try:
        records = database_records(spec.language, spec.size, spec.seed)
    except AppMissing as missing:
        pytest.skip(str(missing))
    assert len(records) == spec.size >= 300
    assert len({record.id for record in records}) == spec.size
    assert all(len(words_of(record.text)) >= 15 and len(record.text) <= 1500 for record in records)
    assert all(
        2000 <= record.year <= 2024 and record.published[:4] == str(record.year)
        for record in records
    )
    assert 0.3 < sum(record.has_image for record in records) / spec.size < 0.5
    assert {record.kind for record in records} == {"article", "book", "video"}
    assert records == database_records(spec.language, spec.size, spec.seed)  # cached
    assert records == database_records.__wrapped__(spec.language, spec.size, spec.seed)


def test_gallery_marks_the_held_out_sites() -> None:
    held_out = {spec.name for spec in gallery() if spec.held_out}
    assert held_out == {"en-linked-cap20", "en-newest-sparse-cap20", "de-advanced-cap20"}
    with pytest.raises(ValueError, match="semantics"):
        HiddenDatabase("bad", semantics="xor")


@on("en-and-cap50")
def test_and_lists_records_holding_every_word(site: HiddenDatabaseSite) -> None:
    first, second = "function", "object"
    both = set(site.matches(first)) & set(site.matches(second))
    assert set(site.matches(f"{first} {second}")) == both
    assert site.matches(f"{first} {second}") == sorted(both, key=int)  # record-id order


@on("en-or-cap20-stopwords-matched")
def test_or_lists_records_holding_any_word(site: HiddenDatabaseSite) -> None:
    either = set(site.matches("function")) | set(site.matches("object"))
    assert set(site.matches("function object")) == either
    assert len(either) > 20
    ids, pages = follow_pager(site, search_url(site, q="function object"))
    assert ids == site.matches("function object")[:20]
    assert "of the first 20 of" in pages[0]


@on("en-and-cap50")
def test_cap_and_pager_reach_the_first_cap_matches(site: HiddenDatabaseSite) -> None:
    word = word_with_matches(site, 60, 200)
    matched = site.matches(word)
    ids, pages = follow_pager(site, search_url(site, q=word))
    assert ids == matched[:50] and len(set(ids)) == 50
    assert len(pages) == 5
    assert f"Showing 11-20 of the first 50 of {len(matched)} results for «{word}»" in pages[1]
    assert all('<nav class="pager">' in page for page in pages)
    few = word_with_matches(site, 11, 40)
    ids, pages = follow_pager(site, search_url(site, q=few))
    assert ids == site.matches(few) and len(pages) == math.ceil(len(ids) / 10)
    assert f"Showing 1-10 of {len(ids)} results for «{few}»" in pages[0]
    status, page = get(search_url(site, q="zzzqqqxx"))
    assert status == 200 and "No results for «zzzqqqxx»" in page and not listed_ids(site, page)
    status, page = get(search_url(site, q=word, page="9"))
    assert status == 200 and not listed_ids(site, page)


@on("en-and-uncapped-stopwords-rejected")
def test_uncapped_site_lists_every_match_and_rejects_stop_words(site: HiddenDatabaseSite) -> None:
    word = word_with_matches(site, 60, 400)
    ids, pages = follow_pager(site, search_url(site, q=word))
    assert ids == site.matches(word) and len(pages) == math.ceil(len(ids) / 20)
    status, page = get(search_url(site, q=f"the {word}"))
    assert status == 400 and "common word (the)" in page and not listed_ids(site, page)
    assert site.matches(f"the {word}") == []
    assert site.requests["error"] == 1 and site.requests["search"] == len(pages)
    assert site.queries_seen == [word] * len(pages) + [f"the {word}"]


@on("en-and-cap50")
def test_ignored_stop_words_are_dropped(site: HiddenDatabaseSite) -> None:
    assert site.matches("the thread") == site.matches("thread") != []
    status, page = get(search_url(site, q="the"))
    assert status == 200 and "No results" in page and "ignored: the" in page


@on("en-or-cap20-stopwords-matched")
def test_matched_stop_words_are_words(site: HiddenDatabaseSite) -> None:
    assert len(site.matches("the")) > 100
    status, page = get(search_url(site, q="the"))
    assert status == 200 and len(listed_ids(site, page)) == 10


@on("de-and-cap50-stemming")
def test_stemming_matches_word_forms(site: HiddenDatabaseSite) -> None:
    assert crude_stem("benutzern", "de") == crude_stem("benutzer", "de") == "benutz"
    forms = site.matches("Benutzern")
    assert forms == site.matches("benutzer") and len(forms) > 10
    exact = {
        record.id
        for record in site.records
        if "benutzern" in words_of(record.text + " " + record.title)
    }
    assert exact < set(forms)
    status, page = get(search_url(site, q="benutzer"))
    assert status == 200 and f"von {len(forms)} Treffern für «benutzer»" in page


@on("en-opensearch-cap50")
def test_opensearch_entrance(site: HiddenDatabaseSite) -> None:
    status, home = get(site.url)
    assert status == 200 and "<form" not in home
    assert 'rel="search" type="application/opensearchdescription+xml"' in home
    status, description = get(site.url + "opensearch.xml")
    namespace = {"os": "http://a9.com/-/spec/opensearch/1.1/"}
    template = ElementTree.fromstring(description).find("os:Url", namespace)
    assert status == 200 and template is not None
    assert template.get("template") == f"{site.url}?s={{searchTerms}}"
    url = template.get("template", "").replace("{searchTerms}", "thread")
    ids, pages = follow_pager(site, url)
    assert ids == site.matches("thread") and "Results for «thread»" in pages[0]
    assert "Showing" not in pages[0]  # this one shows no count
    assert get(site.url + "search?q=thread")[0] == 404
    assert site.requests["opensearch"] == 1 and site.queries_seen == ["thread"] * len(pages)


@on("en-linked-cap20")
def test_linked_entrance(site: HiddenDatabaseSite) -> None:
    status, home = get(site.url)
    assert status == 200 and "<form" not in home and '<a href="/search">Search</a>' in home
    status, page = get(site.url + "search")
    assert status == 200 and 'action="/search"' in page and 'name="q"' in page
    assert site.requests == collections.Counter(home=1, other=1) and site.queries_seen == []


@on("en-newest-sparse-cap20")
def test_newest_first_over_sparse_ids(site: HiddenDatabaseSite) -> None:
    numbers = [int(record.id) for record in site.records]
    assert numbers == sorted(numbers) and numbers[-1] > 2 * len(numbers)  # gaps: deletions
    ids, _ = follow_pager(site, search_url(site, q="python"))
    assert len(ids) == 20 and ids == site.matches("python")[:20]
    assert [int(one) for one in ids] == sorted((int(one) for one in ids), reverse=True)
    assert ids[0] == max(site.matches("python"), key=int)  # the newest match first


@on("en-advanced-cap50")
def test_advanced_form_needs_its_informative_inputs(site: HiddenDatabaseSite) -> None:
    status, home = get(site.url)
    for field in (
        'select name="category"',
        'name="kind" value="book"',
        'name="has_image"',
        'type="number" name="year"',
        'type="date" name="since"',
        'select name="sort"',
        'select name="per_page"',
    ):
        assert field in home
    empty = {"q": "", "category": "", "kind": "", "sort": "relevance", "per_page": "10"}
    status, page = get(search_url(site, **empty))
    assert status == 200 and "Please enter a search" in page and not listed_ids(site, page)
    sizes = collections.Counter(record.category for record in site.records)
    small = min(sizes, key=sizes.__getitem__)
    ids, _ = follow_pager(site, search_url(site, **{**empty, "category": small}))
    assert ids == [record.id for record in site.records if record.category == small]
    assert site.matches("", category=small) == ids


@pytest.mark.parametrize("site", ["en-advanced-cap50", "de-advanced-cap20"], indirect=True)
def test_advanced_partition_reaches_every_record(site: HiddenDatabaseSite) -> None:
    cap = site.spec.cap or 0
    sizes = collections.Counter(record.category for record in site.records)
    cells = collections.Counter((record.category, record.kind) for record in site.records)
    assert max(sizes.values()) > cap >= max(cells.values())
    reached, expected_pages = set(), 0
    for category, size in sizes.items():
        kinds = ("article", "book", "video") if size > cap else ("",)
        for kind in kinds:
            found = site.matches("", category=category, kind=kind)
            assert len(found) <= cap
            reached |= set(found)
            expected_pages += math.ceil(len(found) / 10)
    assert reached == {record.id for record in site.records}
    assert site.fewest_result_pages(page_size=10) == expected_pages
    assert site.fewest_result_pages() == len([c for c in cells if sizes[c[0]] > cap]) + len(
        [c for c in sizes if sizes[c] <= cap]
    )


@on("en-advanced-cap50")
def test_sort_changes_order_and_which_capped_records_show(site: HiddenDatabaseSite) -> None:
    sizes = collections.Counter(record.category for record in site.records)
    small = min(sizes, key=sizes.__getitem__)
    by_title = site.matches("", category=small, sort="title")
    by_year = site.matches("", category=small, sort="year")
    assert set(by_title) == set(by_year) and by_title != by_year
    years = [site.by_id[record_id].year for record_id in by_year]
    assert years == sorted(years, reverse=True)
    big = max(sizes, key=sizes.__getitem__)
    ids_title, _ = follow_pager(site, search_url(site, q="", category=big, sort="title"))
    ids_year, _ = follow_pager(site, search_url(site, q="", category=big, sort="year"))
    assert len(ids_title) == len(ids_year) == 50 and set(ids_title) != set(ids_year)
    ids, pages = follow_pager(site, search_url(site, q="", category=big, per_page="20"))
    assert len(pages) == 3 and len(ids) == 50
    filtered = site.matches("", category=big, has_image="1", year="2010")
    assert all(site.by_id[i].has_image and site.by_id[i].year == 2010 for i in filtered)
    assert get(search_url(site, q="", year="soon"))[0] == 400


@on("en-empty-always")
def test_empty_always_lists_nothing(site: HiddenDatabaseSite) -> None:
    status, page = get(search_url(site, q="thread"))
    assert status == 200 and "No results for «thread»" in page and site.matches("thread")


@on("en-errors-on-some")
def test_errors_on_some_words(site: HiddenDatabaseSite) -> None:
    statuses = [get(search_url(site, q=word))[0] for word in generic_queries("en", 60)]
    assert set(statuses) == {200, 500} and 0.05 < statuses.count(500) / len(statuses) < 0.4
    assert statuses == [get(search_url(site, q=word))[0] for word in generic_queries("en", 60)]


@on("en-captcha")
def test_captcha_refuses_every_search_without_its_answer(site: HiddenDatabaseSite) -> None:
    status, home = get(site.url)
    assert 'name="captcha" required' in home
    assert get(search_url(site, q="thread"))[0] == 403
    assert get(search_url(site, q="thread", captcha="12"))[0] == 403
    status, page = get(search_url(site, q="thread", captcha="7"))
    assert status == 200 and listed_ids(site, page) == site.matches("thread")[:10]


@on("en-and-cap50")
def test_pages_chrome_and_bounds(site: HiddenDatabaseSite) -> None:
    status, home = get(site.url)
    assert home.count("<form") == 3 and 'placeholder="Search the collection…"' in home
    assert all(category in home for category in site.categories)
    record = site.records[0]
    status, page = get(f"{site.url}record/{record.id}")
    assert status == 200 and str(record.year) in page and record.category in page
    assert site.record_id_of(f"{site.url}record/{record.id}") == record.id
    assert site.record_id_of(f"{site.url}record/99999") is None
    assert get(f"{site.url}record/99999")[0] == 404
    assert get(search_url(site, q="x" * 1100))[0] == 414
    assert site.requests == collections.Counter(home=1, record=1, error=2)


def test_baseline_query_lists_are_free_of_stop_words() -> None:
    for language in ("en", "de"):
        stops = stop_words_of(language)
        generic = generic_queries(language, 50)
        drawn = random_queries(language, 50, seed=3)
        for words in (generic, drawn):
            assert len(words) == len(set(words)) == 50
            assert all(word.isalpha() and word not in stops for word in words)
        assert drawn == random_queries(language, 50, seed=3) != random_queries(language, 50, 4)
    assert "people" in generic_queries("en", 50)
