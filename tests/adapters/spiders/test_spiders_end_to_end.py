"""End to end: real ``python -m scrapy crawl`` subprocesses against sites on 127.0.0.1."""

from __future__ import annotations

import base64
import functools
import json
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from support.crawl_runs import crawl, read_pages

from websim_crawler.cli import main
from websim_crawler.core.html import parse_html
from websim_crawler.core.text import stemmer
from websim_crawler.demo.site import Archive, DemoSite

REPO = Path(__file__).resolve().parents[3]
SITE = Path(__file__).resolve().parents[2] / "support" / "site"
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.slow


class StaticSiteHandler(SimpleHTTPRequestHandler):
    """Serve ``tests/support/site``; a POST is answered with the file at its path, its body kept."""

    posted: list[str] = []  # noqa: RUF012 (shared by the handler instances of one server)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.posted.append(self.rfile.read(length).decode("utf-8"))
        self.do_GET()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def static_site() -> Iterator[tuple[str, list[str]]]:
    posted: list[str] = []
    handler = type("Handler", (StaticSiteHandler,), {"posted": posted})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", posted
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with DemoSite() as site:
        yield site.url


def test_deepweb_get_form_pagination_and_records(
    static_site: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _ = static_site
    output = tmp_path / "pages.jsonl"
    finished = crawl(
        "deepweb", output, "-a", f"start_url={url}index.html", "-a", "queries=fjord",
        "-a", "follow=1", "-a", "max_pages=3",
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    pages = read_pages(output)
    results = sorted((page["page"], page["url"]) for page in pages if page["kind"] == "results")
    assert results == [
        (1, f"{url}results.html?lang=en&query=fjord"),
        (2, f"{url}results-2.html"),
        (3, f"{url}results-3.html"),
    ]
    records = sorted(page["url"] for page in pages if page["kind"] == "record")
    assert records == [f"{url}records/r{number}.html" for number in range(1, 7)]  # not r7
    assert len(pages) == 9  # no page twice, nothing else
    assert output.read_bytes().startswith(b'{"url":"')  # written by orjson (no spaces)
    for page in pages:
        assert page["query"] == "fjord"
        assert page["status"] == 200
        # The analysis pipeline ran on every item.
        assert page["language"] == "en"
        assert isinstance(page["keywords"], dict)
    record = next(page for page in pages if page["url"].endswith("r2.html"))
    assert record["title"] == "Record r2"
    assert "fjord" in record["main_text"]
    assert "'websim/crawl/search_form/get': 1" in finished.stderr


def test_deepweb_post_form(static_site: tuple[str, list[str]], tmp_path: Path) -> None:
    url, posted = static_site
    output = tmp_path / "pages.jsonl"
    finished = crawl(
        "deepweb", output, "-a", f"start_url={url}post.html", "-a", "queries=aurora,fjord",
        "-a", "follow=1",
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert sorted(sorted(parse_qsl(body)) for body in posted) == [
        [("keywords", "aurora"), ("sort", "date")],
        [("keywords", "fjord"), ("sort", "date")],
    ]
    pages = read_pages(output)
    # Both queries POST to the same URL; the results of each are kept.
    results = [page for page in pages if page["kind"] == "results"]
    assert sorted(page["query"] for page in results) == ["aurora", "fjord"]
    assert {page["url"] for page in results} == {f"{url}post-results.html"}
    records = sorted(page["url"] for page in pages if page["kind"] == "record")
    assert records == [f"{url}records/p1.html", f"{url}records/p2.html"]


def test_site_spider_crawls_by_links_within_the_depth_limit(
    static_site: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _ = static_site
    output = tmp_path / "pages.jsonl"
    finished = crawl("site", output, "-a", f"start_url={url}index.html", "-s", "DEPTH_LIMIT=1")
    assert finished.returncode == 0, finished.stderr[-3000:]
    pages = read_pages(output)
    urls = sorted(page["url"] for page in pages)
    # The start page and what it links to on the same site; nothing two links away.
    assert urls == sorted(
        [f"{url}index.html", f"{url}about.html", f"{url}help.html", f"{url}records/r1.html"]
    )
    assert {page["kind"] for page in pages} == {"page"}


def test_bad_arguments_end_the_crawl_with_one_clear_line(tmp_path: Path) -> None:
    finished = crawl(
        "deepweb",
        tmp_path / "pages.jsonl",
        "-a",
        "start_url=http://127.0.0.1:9/",
        "-a",
        "queries=,",
    )
    assert finished.returncode == 1
    assert "ConfigError: deepweb: no queries given: use -a queries=Q1,Q2" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_missing_chromium_fails_loudly_with_the_fix(tmp_path: Path) -> None:
    finished = crawl(
        "deepweb", tmp_path / "pages.jsonl", "-a", "start_url=http://127.0.0.1:9/",
        "-a", "queries=tea", "-a", "render=1", "-s", "WEBSIM_CHROMIUM_PATH=/nonexistent/chromium",
    )  # fmt: skip
    assert finished.returncode != 0
    assert "BrowserMissingError: rendering needs Chromium" in finished.stderr
    assert "apt-get install chromium" in finished.stderr
    assert "WEBSIM_CHROMIUM_PATH" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert not (tmp_path / "pages.jsonl").exists()


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"needs Chromium at {CHROMIUM}")
def test_render_records_layout_boxes_and_a_screenshot(demo_site: str, tmp_path: Path) -> None:
    output = tmp_path / "pages.jsonl"
    finished = crawl(
        "deepweb", output, "-a", f"start_url={demo_site}", "-a", "queries=volcanoes",
        "-a", "render=1", "-a", "max_pages=1", "-s", "WEBSIM_RENDER_SCREENSHOT=1",
        "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}",
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    (page,) = read_pages(output)
    assert page["kind"] == "results"
    root = parse_html(page["html"])
    width, height = (int(value) for value in root.get("data-websim-page").split(","))
    assert width >= 800 and height > 600  # a real layout, longer than one screen
    body_box = [int(value) for value in root.body.get("data-websim-box").split(",")]
    assert body_box[2] > 0 and body_box[3] > 0
    first_result = root.xpath("//li[@class='result']")[0]
    x, y, w, h = (int(value) for value in first_result.get("data-websim-box").split(","))
    sidebar = root.xpath("//aside")[0]
    side_x = int(sidebar.get("data-websim-box").split(",")[0])
    assert w > 0 and h > 0 and 0 < y < height
    assert side_x > x  # the sidebar is laid out to the right of the results
    assert not root.xpath("//script[@data-websim-box]")
    screenshot = base64.b64decode(page["screenshot"])
    assert screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    assert "playwright/page_count" in finished.stderr


def test_demo_crawls_and_clusters_the_demo_site_by_topic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "demo"
    assert main(["demo", "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    assert f"clusters:     {output / 'clusters.json'}" in printed
    assert f"HTML report:  {output / 'clusters.html'}" in printed
    assert "crawled 50 pages (40 record, 10 results)" in printed
    pages = read_pages(output / "pages.jsonl")
    assert len(pages) == 50
    assert {page["query"] for page in pages} == {
        "astronomy", "bread", "beekeeping", "cycling", "volcanoes",
    }  # fmt: skip

    report = json.loads((output / "clusters.json").read_text())
    assert set(report) >= {"params", "validity", "clusters", "documents"}
    assert report["params"]["kind"] == "record"
    assert {"partition_coefficient", "partition_entropy", "xie_beni"} <= set(report["validity"])
    clusters = report["clusters"]
    assert len(clusters) == 5
    topic_of = {f"/record/{record.number}": record.topic for record in Archive.bundled().records}
    for cluster in clusters:
        assert set(cluster) >= {"id", "size", "top_keywords", "members"}
        assert cluster["size"] == len(cluster["members"]) == 8
        topics = {topic_of["/" + member.split("/", 3)[3]] for member in cluster["members"]}
        assert len(topics) == 1, cluster  # each cluster is one topic of the archive
        for keyword in cluster["top_keywords"]:
            assert keyword["weight"] > 0
            assert stemmer("en")(keyword["term"]) == keyword["stem"]  # a form of its stem
    readable = {k["stem"]: k["term"] for cluster in clusters for k in cluster["top_keywords"]}
    assert readable["telescop"] in {"telescope", "telescopes"}
    assert readable["volcano"] in {"volcano", "volcanoes"}
    documents = report["documents"]
    assert len(documents) == 40
    for document in documents:
        assert set(document) >= {"url", "cluster", "memberships"}
        assert len(document["memberships"]) == 5
        assert abs(sum(document["memberships"]) - 1.0) < 1e-3
        assert document["memberships"][document["cluster"]] == max(document["memberships"])
    html_report = (output / "clusters.html").read_text()
    assert "<html" in html_report and "volcano" in html_report
