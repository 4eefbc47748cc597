"""A crawl's own site is scheme, host and port: another port of 127.0.0.1 is another site.

Two servers on 127.0.0.1: the crawled site, whose forms, ``<base href>``, links and redirects
aim at the other one's port, and the other site, which counts every request it gets (none
may reach it). A form whose action is ``javascript:`` is skipped with a counted reason.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler
from support.crawl_runs import crawl, read_pages

from websim_crawler.core.urls import origin_of
from websim_crawler.spiders.deepweb import DeepWebSpider

pytestmark = pytest.mark.slow

RECORD = "<html><body><h1>Fjord {n}</h1><p>" + "The fjord is deep and cold. " * 20 + "</p>"


def _form(action: str, method: str = "get", role: str = "") -> str:
    return (
        f"<form action='{action}' method='{method}' {role}>"
        "<input type='search' name='q'><button>Search</button></form>"
    )


class _Servers:
    """The crawled site and the other site (another port), both on 127.0.0.1."""

    def __init__(self) -> None:
        self.other_requests: list[str] = []
        self.other = self._serve(self._other_handler())
        self.own = self._serve(self._own_handler())
        self.other_url = f"http://127.0.0.1:{self.other.server_address[1]}/"
        self.own_url = f"http://127.0.0.1:{self.own.server_address[1]}/"

    @staticmethod
    def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def _other_handler(self) -> type[BaseHTTPRequestHandler]:
        servers = self

        class Other(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                servers.other_requests.append(f"GET {self.path}")
                self._answer()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                servers.other_requests.append(f"POST {self.path} {body}")
                self._answer()

            def _answer(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(RECORD.format(n="elsewhere").encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Other

    def _own_handler(self) -> type[BaseHTTPRequestHandler]:
        servers = self

        class Own(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                other = servers.other_url
                pages = {
                    # The most search-like forms go elsewhere; the last one is the site's own.
                    "/search.html": _form(f"{other}find", "post", "role='search'")
                    + _form("javascript:void(0)", "get", "role='search'")
                    + _form("/results"),
                    "/links.html": f"<a href='{other}x.html'>x</a> <a href='/go'>go</a> "
                    "<a href='/based.html'>based</a> <a href='/rec1.html'>one</a>",
                    "/based.html": f"<html><head><base href='{other}'></head><body>"
                    "<a href='y.html'>y</a>" + RECORD.format(n="based"),
                    "/rec1.html": RECORD.format(n=1),
                }
                path = self.path.split("?", 1)[0]
                if path == "/go":
                    self.send_response(302)
                    self.send_header("Location", f"{other}redirected.html")
                    self.end_headers()
                    return
                if path == "/results":
                    body = "<ul><li><a href='/rec1.html'>Fjord 1</a></li></ul>" + RECORD.format(
                        n="results"
                    )
                else:
                    body = pages.get(path, "")
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(f"<html><body>{body}</body></html>".encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Own

    def close(self) -> None:
        for server in (self.own, self.other):
            server.shutdown()
            server.server_close()


@pytest.fixture
def servers() -> Iterator[_Servers]:
    both = _Servers()
    yield both
    both.close()


def test_origin_is_scheme_host_and_port() -> None:
    assert origin_of("http://127.0.0.1:8000/a") == "http://127.0.0.1:8000"
    assert origin_of("HTTP://www.Example.org:80/") == "http://example.org"
    assert origin_of("https://example.org/") != origin_of("http://example.org/")
    assert origin_of("javascript:void(0)") == ""


def test_forms_aimed_at_another_port_or_javascript_are_skipped_and_counted(
    servers: _Servers, tmp_path: Path
) -> None:
    output = tmp_path / "pages.jsonl"
    finished = crawl(
        "deepweb", output, "-a", f"start_url={servers.own_url}search.html",
        "-a", "queries=fjord", "-a", "follow=1",
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "Traceback" not in finished.stderr
    assert servers.other_requests == []  # no POST body went to the other port
    assert "'websim/crawl/search_form/skipped/offsite': 1" in finished.stderr
    assert "'websim/crawl/search_form/skipped/not_http': 1" in finished.stderr
    urls = sorted(page["url"] for page in read_pages(output))
    assert urls == [f"{servers.own_url}rec1.html", f"{servers.own_url}results?q=fjord"]


def test_links_base_href_and_redirects_to_another_port_are_off_site(
    servers: _Servers, tmp_path: Path
) -> None:
    output = tmp_path / "pages.jsonl"
    finished = crawl("site", output, "-a", f"start_url={servers.own_url}links.html")
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert servers.other_requests == []
    urls = {page["url"] for page in read_pages(output)}
    assert urls <= {
        f"{servers.own_url}{name}" for name in ("links.html", "based.html", "rec1.html")
    }
    assert f"{servers.own_url}rec1.html" in urls
    assert "'websim/offsite/other_origin'" in finished.stderr  # the redirect, at least


def test_a_query_template_the_user_gives_is_an_own_origin_too() -> None:
    spider = DeepWebSpider.from_crawler(
        get_crawler(DeepWebSpider),
        start_url="http://127.0.0.1:8000/",
        query_template="http://127.0.0.1:8001/search?q={query}",
        queries="tea",
    )
    assert spider.site_origins == {"http://127.0.0.1:8000", "http://127.0.0.1:8001"}
