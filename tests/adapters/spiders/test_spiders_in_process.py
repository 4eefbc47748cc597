"""The deepweb and site spiders in-process: arguments, form submission, pagination, records."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import pytest
import scrapy
from conftest import analysed
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse, Request, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from websim_crawler.components import ADDON
from websim_crawler.errors import ConfigError
from websim_crawler.items import PageItem
from websim_crawler.spiders.deepweb import DeepWebSpider
from websim_crawler.spiders.site import SiteSpider

SITE = Path(__file__).resolve().parents[2] / "support" / "site"
ROOT = "http://127.0.0.1:8000/"
SpiderT = TypeVar("SpiderT", DeepWebSpider, SiteSpider)
ANALYSIS_PIPELINE = {
    "ITEM_PIPELINES": {"websim_crawler.pipelines.PageAnalysisPipeline": 300},
    "WEBSIM_ANALYSIS_WORKERS": 0,
}


def make_spider(
    spider_class: type[SpiderT], settings: dict[str, Any] | None = None, **arguments: Any
) -> SpiderT:
    # The spider alone: its add-on (which would add the analysis pipeline) left out.
    crawler = get_crawler(spider_class, settings_dict={"ADDONS": {ADDON: None}, **(settings or {})})
    return spider_class.from_crawler(crawler, **arguments)


def response_for(name: str, url: str | None = None, **meta: Any) -> HtmlResponse:
    url = url or ROOT + name
    return HtmlResponse(
        url=url,
        body=(SITE / name).read_bytes(),
        encoding="utf-8",
        request=Request(url, meta=meta),
    )


def collect_start(spider: scrapy.Spider) -> list[Any]:
    """Drain ``async def start()`` (it awaits nothing) without an event loop."""

    async def drain() -> list[Any]:
        return [request async for request in spider.start()]

    coroutine = drain()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return list(done.value)
    raise AssertionError("start() awaited something")


def drain(output: Iterable[Any] | AsyncIterator[Any]) -> list[Any]:
    """List a callback's output; an async generator (deepweb's results) must await nothing."""
    if not isinstance(output, AsyncIterator):
        return list(output)

    async def collect() -> list[Any]:
        return [value async for value in output]

    coroutine = collect()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return list(done.value)
    raise AssertionError("the callback awaited something")


def split(
    output: Iterable[Any] | AsyncIterator[Any],
) -> tuple[list[PageItem], list[scrapy.Request]]:
    produced = drain(output)
    items = [value for value in produced if isinstance(value, PageItem)]
    requests = [value for value in produced if isinstance(value, scrapy.Request)]
    assert len(items) + len(requests) == len(produced)
    return items, requests


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"queries": "tea"}, "-a start_url=URL is required"),
        ({"start_url": "ftp://x.org/", "queries": "tea"}, "absolute http"),
        ({"start_url": "not a url", "queries": "tea"}, "absolute http"),
        ({"start_url": ROOT, "queries": " , ,"}, "no queries given"),
        ({"start_url": ROOT, "queries": "tea", "max_pages": "0"}, "between 1 and"),
        ({"start_url": ROOT, "queries": "tea", "max_pages": "two"}, "whole number"),
        ({"start_url": ROOT, "queries": "tea", "follow": "maybe"}, "-a follow must be 1 or 0"),
        ({"start_url": ROOT, "queries": "tea", "render": "2"}, "-a render must be 1, 0 or auto"),
        ({"query_template": "http://x.org/s?q=", "queries": "tea"}, "must contain {query}"),
        ({"query_template": "http://x.org/s?q={query}&{x}", "queries": "tea"}, "no braces"),
        ({"start_url": ROOT, "queries_file": "/nonexistent/q.txt"}, "cannot read"),
    ],
)
def test_bad_deepweb_arguments_raise_clear_errors(arguments: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match="deepweb") as raised:
        make_spider(DeepWebSpider, **arguments)
    assert message in str(raised.value)


def test_queries_come_from_the_argument_and_the_file(tmp_path: Path) -> None:
    queries_file = tmp_path / "queries.txt"
    queries_file.write_text("# topics\nhoney  bees\n\ntea\nvolcano\n", encoding="utf-8")
    spider = make_spider(
        DeepWebSpider, start_url=ROOT, queries="tea, green tea", queries_file=str(queries_file)
    )
    assert spider.queries == ["tea", "green tea", "honey bees", "volcano"]
    assert spider.max_pages == 5  # WEBSIM_MAX_RESULT_PAGES
    assert spider.allowed_domains == ["127.0.0.1"]


def test_max_pages_default_comes_from_the_setting() -> None:
    crawler = get_crawler(DeepWebSpider, settings_dict={"WEBSIM_MAX_RESULT_PAGES": 2})
    spider = DeepWebSpider.from_crawler(crawler, start_url=ROOT, queries="tea")
    assert spider.max_pages == 2
    spider = DeepWebSpider.from_crawler(
        get_crawler(DeepWebSpider), start_url=ROOT, queries="tea", max_pages="7"
    )
    assert spider.max_pages == 7


def test_bad_site_arguments_raise_clear_errors() -> None:
    with pytest.raises(ConfigError, match="site: -a start_url=URL is required"):
        make_spider(SiteSpider)
    with pytest.raises(ConfigError, match="site: -a max_pages must be between"):
        make_spider(SiteSpider, start_url=ROOT, max_pages="-3")


# --- the search form ----------------------------------------------------------------------------


def test_start_page_request_is_filtered_so_links_back_are_not_refetched() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT + "index.html", queries="tea")
    (request,) = collect_start(spider)
    assert request.url == ROOT + "index.html"
    assert request.dont_filter is False
    assert request.callback == spider.parse_start


def test_get_search_form_is_submitted_for_every_query() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT + "index.html", queries="green tea,oolong")
    requests = list(spider.parse_start(response_for("index.html")))
    assert [request.method for request in requests] == ["GET", "GET"]
    sent = [parse_qs(urlsplit(request.url).query) for request in requests]
    assert sent == [
        {"query": ["green tea"], "lang": ["en"]},
        {"query": ["oolong"], "lang": ["en"]},
    ]
    assert all(urlsplit(request.url).path == "/results.html" for request in requests)
    assert [request.meta["websim_query"] for request in requests] == ["green tea", "oolong"]
    assert {request.meta["websim_page"] for request in requests} == {1}
    assert ROOT + "about.html" in spider.template_links  # the start page's navigation


def test_post_search_form_sends_the_query_in_the_body() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT + "post.html", queries="tea")
    (request,) = spider.parse_start(response_for("post.html"))
    assert request.method == "POST"
    assert request.url == ROOT + "post-results.html"
    assert parse_qs(request.body.decode()) == {"keywords": ["tea"], "sort": ["date"]}
    assert request.headers[b"Content-Type"] == b"application/x-www-form-urlencoded"


def test_start_page_without_search_form_looks_nearby_then_closes_the_spider() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT + "noform.html", queries="tea")
    looked_at = list(spider.parse_start(response_for("noform.html")))
    with pytest.raises(CloseSpider) as closed:
        while True:  # each place turns out to have no form: the next one is looked at
            looked_at.extend(spider.next_entrance(ROOT + "noform.html"))
    assert closed.value.reason == "no_search_form"
    assert spider.crawler.stats.get_value("websim/crawl/no_search_form") == 1
    assert looked_at and len(looked_at) <= spider.surfacing_params.entrance_pages
    assert all(request.url.startswith(ROOT.rstrip("/").rsplit("/", 1)[0]) for request in looked_at)
    assert looked_at[-1].url.endswith("/websim-no-such-page-404")


def test_query_template_skips_the_form() -> None:
    spider = make_spider(
        DeepWebSpider, query_template="http://x.org/find?q={query}&n=10", queries="green tea,é"
    )
    requests = collect_start(spider)
    assert [request.url for request in requests] == [
        "http://x.org/find?q=green+tea&n=10",
        "http://x.org/find?q=%C3%A9&n=10",
    ]
    assert spider.allowed_domains == ["x.org"]


# --- result pages, records ----------------------------------------------------------------------


def test_result_page_yields_item_records_and_next_page() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT + "index.html", queries="tea", follow="1")
    list(spider.parse_start(response_for("index.html")))
    response = response_for(
        "results.html", ROOT + "results.html?query=tea&lang=en", websim_query="tea", websim_page=1
    )
    items, requests = split(spider.parse_results(response))
    (item,) = items
    assert (item["kind"], item["query"], item["page"], item["status"]) == ("results", "tea", 1, 200)
    assert item["title"] == "Results page 1"
    assert item["html"].startswith("<!DOCTYPE html>")
    assert ROOT + "records/r2.html" in item["links"]
    assert "https://elsewhere.example.org/" in item["links"]
    record_requests = [r for r in requests if r.callback == spider.parse_record]
    # r1 is also featured on the start page, outside its template regions: still a record.
    assert [r.url for r in record_requests] == [ROOT + f"records/r{n}.html" for n in (1, 2, 3)]
    (next_request,) = [r for r in requests if r.callback == spider.parse_results]
    assert next_request.url == ROOT + "results-2.html"  # rel="next"
    assert next_request.meta["websim_page"] == 2


def test_records_are_not_followed_without_follow_and_pages_stop_at_max_pages() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT, queries="tea", max_pages="2")
    response = response_for("results-2.html", websim_query="tea", websim_page=2)
    items, requests = split(spider.parse_results(response))
    assert [item["page"] for item in items] == [2]
    assert requests == []


def test_next_label_and_page_number_links_lead_on() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT, queries="tea")
    _, from_two = split(
        spider.parse_results(response_for("results-2.html", websim_query="tea", websim_page=2))
    )
    assert [r.url for r in from_two] == [ROOT + "results-3.html"]  # "Next ›"
    _, from_three = split(
        spider.parse_results(response_for("results-3.html", websim_query="tea", websim_page=3))
    )
    assert [r.url for r in from_three] == [ROOT + "results-4.html"]  # page number 4
    _, from_four = split(
        spider.parse_results(response_for("results-4.html", websim_query="tea", websim_page=4))
    )
    assert from_four == []


def test_record_page_item_keeps_query_and_result_page() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT, queries="tea")
    (item,) = spider.parse_record(
        response_for("records/r4.html", websim_query="tea", websim_page=2)
    )
    assert (item["kind"], item["query"], item["page"]) == ("record", "tea", 2)
    assert item["title"] == "Record r4"
    assert item["links"] == [ROOT + "index.html", ROOT + "about.html"]
    assert spider.crawler.stats.get_value("websim/pages/record") == 1


@pytest.mark.parametrize("analysed", [False, True])
def test_non_html_response_is_counted_not_itemised(analysed: bool) -> None:
    spider = make_spider(
        DeepWebSpider, ANALYSIS_PIPELINE if analysed else None, start_url=ROOT, queries="tea"
    )
    assert spider.analysed_downstream is analysed
    url = ROOT + "records/r1.txt"
    meta = {"websim_query": "tea", "websim_page": 1}
    response = TextResponse(
        url=url, body=b"plain", encoding="utf-8", request=Request(url, meta=meta)
    )
    assert list(spider.parse_record(response)) == []
    assert spider.crawler.stats.get_value("websim/pages/skipped/not_html") == 1


def test_a_record_is_parsed_once_by_the_analysis_when_it_runs() -> None:
    """With the analysis pipeline on, a record's title and links come from its analysis."""
    from websim_crawler.pipelines.analysis import PageAnalysisPipeline

    spider = make_spider(DeepWebSpider, ANALYSIS_PIPELINE, start_url=ROOT, queries="tea")
    response = response_for("records/r4.html", websim_query="tea", websim_page=2)
    (item,) = spider.parse_record(response)
    assert "title" not in item and "links" not in item  # not parsed in the crawl's process
    assert item["html"] == response.text
    pipeline = PageAnalysisPipeline.from_crawler(spider.crawler)
    analysed_record = analysed(pipeline, item)
    parsed = make_spider(DeepWebSpider, start_url=ROOT, queries="tea")
    (expected,) = parsed.parse_record(response)
    assert (analysed_record["title"], analysed_record["links"]) == (
        expected["title"],
        expected["links"],
    )
    assert analysed_record["links"] == [ROOT + "index.html", ROOT + "about.html"]


def test_http_errors_are_counted_by_status() -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT, queries="tea")
    request = Request(ROOT + "gone.html")
    response = HtmlResponse(url=request.url, status=404, body=b"", request=request)
    failure = Failure(HttpError(response, "Ignoring non-200 response"))
    failure.request = request  # type: ignore[attr-defined]
    spider.count_failure(failure)
    assert spider.crawler.stats.get_value("websim/pages/failed/http_404") == 1


# --- the site spider ----------------------------------------------------------------------------


def test_site_spider_follows_same_site_pages_up_to_max_pages() -> None:
    spider = make_spider(SiteSpider, start_url=ROOT + "results.html", max_pages="4")
    (start_request,) = collect_start(spider)
    assert start_request.dont_filter is False
    items, requests = split(spider.parse_page(response_for("results.html")))
    assert [(item["kind"], item["query"], item["page"]) for item in items] == [("page", None, None)]
    # Same site, pages only (no PDFs, no partner site), at most max_pages including the start.
    assert [r.url for r in requests] == [
        ROOT + "index.html",
        ROOT + "about.html",
        ROOT + "help.html",
    ]
    assert spider.crawler.stats.get_value("websim/crawl/page_limit_reached") == 1


@pytest.mark.parametrize(
    "body", [b"", b"\x00\x01\xff\xfe<<<>>>", b"<html><body><a href='http://[x'>"]
)
def test_empty_or_garbled_record_becomes_an_item_for_the_pipelines_to_judge(body: bytes) -> None:
    spider = make_spider(DeepWebSpider, start_url=ROOT, queries="tea")
    url = ROOT + "records/odd.html"
    request = Request(url, meta={"websim_query": "tea", "websim_page": 1})
    response = HtmlResponse(url=url, body=body, encoding="utf-8", request=request)
    (item,) = spider.parse_record(response)
    assert (item["url"], item["kind"], item["title"]) == (url, "record", "")
    assert item["links"] == []
