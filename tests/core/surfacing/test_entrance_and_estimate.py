"""The way in without a search form on the start page, and the database size estimate."""

from __future__ import annotations

import random

from lxml import html as lxml_html

from websim_crawler.core.surfacing import (
    MISSING_PAGE_PATH,
    capture_estimate,
    chao_estimate,
    entrance_pages,
    jackknife_estimate,
    opensearch_links,
    opensearch_template,
    stated_estimate,
)

_NS = 'xmlns="http://a9.com/-/spec/opensearch/1.1/"'


def description(*urls: str) -> bytes:
    return f"<OpenSearchDescription {_NS}>{''.join(urls)}</OpenSearchDescription>".encode()


def test_opensearch_html_template_becomes_a_query_template() -> None:
    wordpress = description(
        '<Url type="application/x-suggestions+json" template="http://h/s?q={searchTerms}"/>',
        '<Url type="text/html" template="http://h/?s={searchTerms}&amp;paged={startPage?}"/>',
    )
    assert opensearch_template(wordpress, "http://h/os.xml") == "http://h/?s={query}"
    relative = description('<Url type="text/html" template="/find/{searchTerms}?n={count?}"/>')
    assert opensearch_template(relative, "http://h/x/os.xml") == "http://h/find/{query}"


def test_unusable_opensearch_descriptions_give_no_template() -> None:
    post = description('<Url type="text/html" method="post" template="http://h/?s={searchTerms}"/>')
    required = description('<Url type="text/html" template="http://h/?s={searchTerms}&k={key}"/>')
    entity = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        b"<OpenSearchDescription " + _NS.encode() + b'><Url type="text/html" '
        b'template="http://h/?s={searchTerms}&amp;x=&e;"/></OpenSearchDescription>'
    )
    for body in (post, required, b"", b"<not xml", b"x" * 100_000):
        assert opensearch_template(body, "http://h/os.xml") is None
    template = opensearch_template(entity, "http://h/os.xml")
    assert template is None or "root:" not in template  # the external entity is never read


def test_entrance_links_stay_on_the_site_search_first_then_about_then_404() -> None:
    page = lxml_html.fromstring(
        '<html><head><link rel="search" type="application/opensearchdescription+xml" '
        'href="/osd.xml"><link rel="search" type="application/opensearchdescription+xml" '
        'href="http://other.example/osd.xml"></head><body>'
        '<a href="/about-us">About us</a><a href="/catalogue/find">Find a book</a>'
        '<a href="http://127.0.0.2:8000/search">Search elsewhere</a>'
        '<a href="/logo.png">search</a><a href="/advanced" title="Advanced search">…</a>'
        "</body></html>"
    )
    start = "http://127.0.0.1:8000/"
    assert opensearch_links(page, start) == ["http://127.0.0.1:8000/osd.xml"]
    assert entrance_pages(page, start, 10) == [
        "http://127.0.0.1:8000/catalogue/find",
        "http://127.0.0.1:8000/advanced",
        "http://127.0.0.1:8000/about-us",
        "http://127.0.0.1:8000" + MISSING_PAGE_PATH,
    ]
    assert entrance_pages(page, start, 2) == [
        "http://127.0.0.1:8000/catalogue/find",
        "http://127.0.0.1:8000/advanced",
    ]


def test_capture_estimate_on_populations_of_unequal_catchability() -> None:
    # 1000 records of three catchabilities, sampled 60 times, on ten draws: what was seen is
    # well below the truth; the estimate is within 10 % of it and its interval holds it; it
    # covers Chao's estimate (a lower bound) and the first-order jackknife, each in its interval.
    for seed in range(10):
        generator = random.Random(seed)
        catchability = [generator.choice((0.02, 0.05, 0.1)) for _ in range(1000)]
        counts = [sum(generator.random() < p for _ in range(60)) for p in catchability]
        estimate = capture_estimate(counts, 60)
        seen = sum(1 for count in counts if count)
        assert seen < 920
        assert seen < estimate.low <= 1000 <= estimate.high
        assert abs(estimate.size - 1000) <= 100
        for one in (chao_estimate(counts), jackknife_estimate(counts, 60)):
            assert estimate.low <= one.low <= one.size <= one.high <= estimate.high
            assert one.size <= estimate.size


def test_estimates_never_fall_below_what_was_seen() -> None:
    assert capture_estimate([], 0).size == 0
    assert capture_estimate([3, 4, 5], 5).describe() == "3"  # nothing seen once: all seen
    one_singleton = capture_estimate([1, 1, 3], 3)
    assert one_singleton.size >= 3 and one_singleton.low >= 3
    assert stated_estimate(360, 400).size == 400
    assert stated_estimate(360, 12).describe() == "360"
