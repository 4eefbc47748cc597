"""What result pages say of their answer, and what each record's result-page text is."""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from websim_crawler.core.surfacing import (
    ResultCount,
    record_key,
    record_snippets,
    result_count,
    result_count_of_text,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Showing 11-20 of the first 50 of 137 results for «x»", ResultCount(137, 50, None)),
        ("Showing 1-10 of 37 results", ResultCount(37, None, None)),
        ("13 results (360 total)", ResultCount(13, None, 360)),  # Django's admin
        ("Results 1 – 20 of 45 for thread", ResultCount(45, None, None)),  # MediaWiki
        ("Search finished, found 13 pages matching the search query.", ResultCount(13, None, None)),
        ("Treffer 11-20 der ersten 50 von 1.234 Treffern", ResultCount(1234, 50, None)),
        ("About 2,410 results", ResultCount(2410, None, None)),
        ("Welcome to the archive, founded in 1998", ResultCount(None, None, None)),
    ],
)
def test_result_counts_are_read_as_search_applications_word_them(
    text: str, expected: ResultCount
) -> None:
    assert result_count_of_text(text) == expected


def test_counts_in_scripts_and_the_head_are_not_read() -> None:
    page = lxml_html.fromstring(
        "<html><head><title>5 results</title><script>var s='9 results';</script></head>"
        "<body><p>Showing 1-10 of 42 results</p></body></html>"
    )
    assert result_count(page) == ResultCount(42, None, None)


def test_each_record_gets_the_text_of_its_own_result_item() -> None:
    page = lxml_html.fromstring(
        "<html><body><nav><a href='/about'>About</a></nav><ol>"
        "<li><a href='/r/1'>Bees</a><p>Honey and <b>hives</b> in spring</p></li>"
        "<li><a href='/r/2'>Volcanoes</a><p>Magma chambers</p><a href='/r/2'>more</a></li>"
        "</ol></body></html>"
    )
    base = "http://127.0.0.1:8000/search?q=x"
    links = ["http://127.0.0.1:8000/r/1", "http://127.0.0.1:8000/r/2"]
    snippets = record_snippets(page, base, links)
    assert snippets == {
        links[0]: "Bees Honey and hives in spring",
        links[1]: "Volcanoes Magma chambers more",
    }
    assert record_snippets(page, base, links, max_chars=4)[links[0]] == "Bees"


def test_a_record_reached_by_two_queries_is_one_record() -> None:
    first = record_key("http://h/doc/page.html?highlight=thread#x", "thread")
    second = record_key("http://h/doc/page.html?highlight=lock", "lock")
    assert first == second == "http://h/doc/page.html"
    assert record_key("http://h/item?id=7&q=bees", "bees") == "http://h/item?id=7"
    assert record_key("http://h/item?id=7", "7") == "http://h/item"  # the query's own value
    assert record_key("http://h/item?id=7", "bees") == "http://h/item?id=7"
    django = "http://h/admin/doc/10/change/?_changelist_filters=p%3D2%26q%3Dextension"
    assert record_key(django, "extension") == "http://h/admin/doc/10/change/"
    assert record_key("http://h/r?id=7&q=honey+bees", "bees honey") == "http://h/r?id=7"
