"""Bounds on what a crawl reads itself: robots.txt up to 500 KiB (as Google reads it), screenshots
up to a pixel cap checked before decoding, forms with an http(s) action only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler
from support.crawl_runs import crawl, read_pages
from support.hostile_generators import blank_png

from websim_crawler.core.crawling import NextPage
from websim_crawler.core.similarity import SimilarityParams
from websim_crawler.core.similarity.comparison import features_from_item
from websim_crawler.core.similarity.visual import load_image
from websim_crawler.errors import InputFormatError
from websim_crawler.middlewares.robots_parser import ROBOTS_TXT_MAX_BYTES, capped_robots_txt
from websim_crawler.spiders.deepweb import DeepWebSpider

PAGE = "<html><body><h1>{name}</h1><p>" + "The fjord is deep and cold. " * 20 + "</p>"
# Wildcard rules that match nothing, to past the cap (1.9 MB); the rule after them is never read.
FILLER_RULES = "".join(f"Disallow: /*a*b*c*d*e*{n}*z\n" for n in range(60_000)).encode()
ROBOTS_TXT = b"User-agent: *\nDisallow: /secret.html\n" + FILLER_RULES + b"Disallow: /late.html\n"


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            body = ROBOTS_TXT
        elif self.path == "/":
            links = "".join(f"<a href='/{n}.html'>{n}</a> " for n in ("ok", "secret", "late"))
            body = f"<html><body>{links}{PAGE.format(name='start')}".encode()
        else:
            body = PAGE.format(name=self.path).encode()
        self.send_response(200)
        self.send_header(
            "Content-Type", "text/plain" if self.path == "/robots.txt" else "text/html"
        )
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_robots_txt_is_cut_after_its_last_whole_line_within_the_cap() -> None:
    assert len(ROBOTS_TXT) > 3 * ROBOTS_TXT_MAX_BYTES
    capped = capped_robots_txt(ROBOTS_TXT)
    assert len(capped) <= ROBOTS_TXT_MAX_BYTES and capped.endswith(b"z\n")
    assert ROBOTS_TXT.startswith(capped)
    assert capped_robots_txt(b"User-agent: *\nDisallow: /x") == b"User-agent: *\nDisallow: /x"


@pytest.mark.slow
def test_a_crawl_reads_the_first_500_kib_of_robots_txt_and_counts_the_cut(
    site_url: str, tmp_path: Path
) -> None:
    output = tmp_path / "pages.jsonl"
    finished = crawl("site", output, "-a", f"start_url={site_url}")
    assert finished.returncode == 0, finished.stderr[-3000:]
    urls = {page["url"] for page in read_pages(output)}
    assert f"{site_url}secret.html" not in urls  # a rule within the cap holds
    assert {f"{site_url}ok.html", f"{site_url}late.html"} <= urls  # past the cap: not read
    assert "'websim/robotstxt/truncated': 1" in finished.stderr


def test_a_screenshot_past_the_pixel_cap_is_refused_before_decoding() -> None:
    """100 megapixels in a few KB: refused from the header; the page's visual stage is skipped
    and its problem counted, the other stages still run."""
    huge = blank_png(10_000, 10_000)
    assert len(huge) < 100_000
    with pytest.raises(InputFormatError, match="over the cap of 64,000,000: not decoded"):
        load_image(huge)
    assert load_image(blank_png(1280, 2000)).size == (1280, 2000)  # a real page's size is read
    features = features_from_item(
        {"url": "http://s.test/a", "html": PAGE.format(name="a"), "screenshot": huge},
        SimilarityParams(),
    )
    assert features.signature is None and features.document is not None
    assert [problem.split(":", 1)[0] for problem in features.problems] == ["screenshot"]


def test_a_postback_form_whose_action_is_not_http_is_skipped_and_counted() -> None:
    """An ASP.NET pager whose form posts to ``javascript:``: no request (Scrapy would raise on
    the URL), one count; the same form with an http action is submitted."""
    url = "http://127.0.0.1:8000/results"
    crawler = get_crawler(DeepWebSpider)
    spider = DeepWebSpider.from_crawler(crawler, start_url=url, queries="tea")
    found = NextPage(how="postback", form_number=0, event_target="pager", event_argument="2")
    meta = {"websim_query": "tea", "websim_page": 1}
    for action, expected in (("javascript:void(0)", None), ("/results", url)):
        body = f"<html><body><form method='post' action='{action}'><input name='q'></form>"
        request = Request(url, meta=meta)
        response = HtmlResponse(url, body=body.encode(), encoding="utf-8", request=request)
        next_request = spider.next_page_request(response, found)
        assert (next_request.url if next_request else None) == expected
    assert crawler.stats is not None
    assert crawler.stats.get_value("websim/crawl/next_page/skipped/not_http") == 1
