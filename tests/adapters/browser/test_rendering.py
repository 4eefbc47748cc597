"""Rendering: the address rules and the confining proxy (no browser), JS pagination decisions, and
end to end with Chromium: settled script-filled pages, script and postback pagination, hostile
pages confined and bounded, ``websim compare --render`` of saved files.

Chromium tests skip with a reason when Chromium or scrapy-playwright is missing (CI has both);
each shares one server and one crawl per scenario.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.hostile_site import (
    DROPPED,
    POPUP_PATHS,
    STORED,
    WIDE_PIXELS,
    HostileSite,
    InternalService,
)

from websim_crawler._imports import available
from websim_crawler.browser.confine import Confinement, ConfiningProxy, is_internal_address
from websim_crawler.browser.session import CommandBrowser, PageToRender, Rendering, render_documents
from websim_crawler.cli import main
from websim_crawler.config.render import RenderParams
from websim_crawler.core.crawling import next_page
from websim_crawler.core.html import parse_html
from websim_crawler.demo import scripted
from websim_crawler.demo.site import Archive, DemoSite

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and available("scrapy_playwright")),
    reason=f"needs Chromium at {CHROMIUM} and scrapy-playwright (the [render] extra)",
)


# --- address rules and the proxy ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "internal"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("172.31.255.255", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),
        ("0.0.0.0", True),
        ("100.64.0.1", True),
        ("224.0.0.1", True),
        ("::1", True),
        ("::", True),
        ("fc00::1", True),
        ("fd12:3456::1", True),
        ("fe80::1%eth0", True),
        ("::ffff:127.0.0.1", True),
        ("::ffff:10.0.0.1", True),
        ("2002:7f00:1::", True),  # 6to4 around 127.0.0.1
        ("not an address", True),
        ("93.184.216.34", False),
        ("8.8.8.8", False),
        ("172.32.0.1", False),
        ("2606:4700:4700::1111", False),
        ("::ffff:93.184.216.34", False),
    ],
)
def test_internal_addresses_are_told_from_public_ones(address: str, internal: bool) -> None:
    assert is_internal_address(address) is internal


def run_async(coroutine: Any) -> Any:
    """Run a coroutine to its end in a thread of its own (pytest-twisted's loop runs here)."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def test_confinement_allows_own_sites_and_public_hosts_only_when_let_in() -> None:
    looked_up: list[str] = []
    table = {
        "127.0.0.1": ["127.0.0.1"],
        "cdn.example": ["93.184.216.34"],
        "sneaky.example": ["93.184.216.34", "10.0.0.5"],  # one private answer is enough
        "intranet.example": ["192.168.0.10"],
        "www.shop.example": ["127.0.0.2"],
    }

    async def resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return table.get(host, [])

    sites = ["http://127.0.0.1:8000/start", "https://shop.example/"]
    confined, open_to_public = (
        Confinement(sites, resolve),
        Confinement(sites, resolve, other_hosts=True),
    )

    def decide(host: str, port: int, scheme: str = "http") -> tuple[str | None, str]:
        return run_async(open_to_public.allowed_address(host, port, scheme))

    def decide_confined(host: str, port: int, scheme: str = "http") -> tuple[str | None, str]:
        return run_async(confined.allowed_address(host, port, scheme))

    # By default only the crawled sites: another host is refused before any lookup.
    assert decide_confined("127.0.0.1", 8000) == ("127.0.0.1", "own_site")
    assert decide_confined("www.shop.example", 443, "https") == ("127.0.0.2", "own_site")
    looked_up.clear()
    for host, port in (("127.0.0.1", 8001), ("cdn.example", 443), ("intranet.example", 80)):
        assert decide_confined(host, port) == (None, "other_host")
    assert looked_up == []
    # WEBSIM_RENDER_OTHER_HOSTS: public hosts too, never a private address.
    assert decide("127.0.0.1", 8000) == ("127.0.0.1", "own_site")
    assert decide("127.0.0.1", 8001) == (None, "private_address")
    assert decide("www.shop.example", 443, "https") == ("127.0.0.2", "own_site")
    assert decide("www.shop.example", 8443, "https") == (None, "private_address")
    assert decide("cdn.example", 443) == ("93.184.216.34", "public")
    assert decide("sneaky.example", 80) == (None, "private_address")
    assert decide("intranet.example", 80) == (None, "private_address")
    assert decide("unknown.example", 80) == (None, "unresolved")
    assert confined.is_own_url("http://127.0.0.1:8000/other")
    assert confined.is_own_url("https://www.shop.example/x")
    assert not confined.is_own_url("http://127.0.0.1:8001/")
    assert not confined.is_own_url("http://localhost:8000/")


def test_proxy_forwards_to_the_own_site_and_refuses_the_rest() -> None:
    internal = InternalService()
    with DemoSite() as site:
        refused: list[str] = []
        allowed: list[str] = []
        confinement = Confinement([site.url])

        async def exchange(proxy_url: str, raw: bytes) -> bytes:
            host, port = proxy_url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw)
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return answer

        async def scenario() -> list[bytes]:
            proxy = ConfiningProxy(confinement, refused.append, allowed.append)
            proxy_url = await proxy.start()
            inside = f"127.0.0.1:{internal.port}"
            try:
                return [
                    await exchange(proxy_url, f"GET {site.url}about HTTP/1.1\r\n\r\n".encode()),
                    await exchange(proxy_url, f"GET http://{inside}/ HTTP/1.1\r\n\r\n".encode()),
                    await exchange(proxy_url, f"CONNECT {inside} HTTP/1.1\r\n\r\n".encode()),
                    await exchange(
                        proxy_url,
                        f"GET {site.url} HTTP/1.1\r\nUpgrade: websocket\r\n\r\n".encode(),
                    ),
                    await exchange(proxy_url, b"GET file:///etc/passwd HTTP/1.1\r\n\r\n"),
                ]
            finally:
                await proxy.close()

        about, direct, tunnel, websocket, file = run_async(scenario())
    internal.stop()
    assert about.startswith(b"HTTP/1.0 200") and b"volunteer project" in about
    assert b"Connection: close" in about
    assert direct.startswith(b"HTTP/1.1 403") and tunnel.startswith(b"HTTP/1.1 403")
    assert websocket.startswith(b"HTTP/1.1 403") and file.startswith(b"HTTP/1.1 400")
    assert refused == ["other_host", "other_host", "websocket", "scheme"]
    assert allowed == ["own_site"]
    assert internal.connections == 0


def test_closing_the_proxy_with_idle_connections_is_quiet() -> None:
    """Connections that sent nothing yet are dropped without an "Exception in callback" (a
    cancelled handler trips Python 3.11's stream callback, which asks it for its exception)."""
    reported: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: reported.append(context)
        )
        proxy = ConfiningProxy(Confinement([]), lambda _reason: None, lambda _destination: None)
        host, port = (await proxy.start()).removeprefix("http://").split(":")
        idle = [await asyncio.open_connection(host, int(port)) for _ in range(3)]
        while len(proxy.connections) < len(idle):
            await asyncio.sleep(0.01)
        await proxy.close()
        for _reader, writer in idle:
            writer.close()
        await asyncio.sleep(0.05)  # the stream callbacks run after the handlers end

    run_async(scenario())
    assert reported == []


# --- JS pagination decisions (pure) ------------------------------------------------------------


def test_script_next_controls_are_told_apart_from_links() -> None:
    link = parse_html('<a href="/s?page=2">Next</a><button type="button">Next</button>')
    found = next_page(link, "http://a.org/s?page=1", 1)
    assert found is not None and (found.how, found.url) == ("link", "http://a.org/s?page=2")
    button = parse_html('<div><button id="n" type="button" onclick="go()">Next ›</button></div>')
    found = next_page(button, "http://a.org/s", 1, results_on_page=5)
    assert found is not None and found.how == "script"
    assert found.control is not None and button.xpath(found.control)[0].get("id") == "n"
    script_link = parse_html('<p><a href="javascript:void(0)" class="pager-next">›</a></p>')
    found = next_page(script_link, "http://a.org/s", 1)
    assert found is not None and found.how == "script"
    hidden = parse_html('<button type="button" hidden>Next</button>')
    assert next_page(hidden, "http://a.org/s?page=1", 1, results_on_page=5) is None
    search_button = parse_html('<form><input name="q"><button>Search</button></form>')
    found = next_page(search_button, "http://a.org/s?page=1", 1, results_on_page=5)
    assert found is not None and (found.how, found.url) == ("parameter", "http://a.org/s?page=2")


def test_postback_links_name_their_event_and_form() -> None:
    root = parse_html(
        '<form id="search"><input name="q"></form>'
        '<form id="aspnetForm" method="post"><input type="hidden" name="__EVENTTARGET">'
        "<a href=\"javascript:__doPostBack('ctl00$Grid','Page$2')\">2</a>"
        "<a href=\"javascript:__doPostBack('ctl00$Grid','Page$Next')\">Next</a></form>"
    )
    found = next_page(root, "http://a.org/list.aspx", 1)
    assert found is not None and found.how == "postback"
    assert (found.event_target, found.event_argument) == ("ctl00$Grid", "Page$Next")
    assert found.form_number == 1
    options = parse_html(
        '<form><a href="#" onclick="WebForm_DoPostBackWithOptions(new WebForm_PostBackOptions('
        '&quot;ctl00$Next&quot;, &quot;&quot;, true))">Next page</a></form>'
    )
    found = next_page(options, "http://a.org/list.aspx", 1)
    assert found is not None and (found.how, found.event_target) == ("postback", "ctl00$Next")


# --- crawls -------------------------------------------------------------------------------------


def run_crawl(spider: str, tmp_path: Path, *arguments: str) -> tuple[list[dict[str, Any]], dict]:
    """Run ``scrapy crawl`` in a subprocess; return the items and the final stats."""
    output, stats_file = tmp_path / f"{spider}.jsonl", tmp_path / f"{spider}-stats.json"
    command = [
        sys.executable, "-m", "scrapy", "crawl", spider, "-O", str(output), *arguments,
        "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}", "-s", "ROBOTSTXT_OBEY=False",
        "-s", "AUTOTHROTTLE_ENABLED=False", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        "-s", "WEBSIM_CHUNK_DETAIL=none", "-s", "LOG_LEVEL=INFO",
    ]  # fmt: skip
    environment = {
        key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"
    }
    finished = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=400
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    items = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    return items, json.loads(stats_file.read_text(encoding="utf-8"))


def result_titles(html: str) -> list[str]:
    """Return the titles of the results a page shows."""
    return [" ".join(a.text_content().split()) for a in parse_html(html).xpath("//li/h3/a")]


@pytest.fixture(scope="module")
def demo_site() -> Iterator[DemoSite]:
    with DemoSite() as site:
        yield site


def postback_url(site: DemoSite) -> str:
    """Return the query template of the demo's postback result pages."""
    return f"{site.url}js/patterns/postback?q={{query}}"


@pytest.mark.slow
def test_postback_pages_are_followed_without_a_browser(demo_site: DemoSite, tmp_path: Path) -> None:
    items, stats = run_crawl(
        "deepweb", tmp_path, "-a", f"query_template={postback_url(demo_site)}",
        "-a", "queries=all", "-a", "max_pages=10",
    )  # fmt: skip
    pages = sorted(items, key=lambda item: item["page"])
    assert [item["page"] for item in pages] == list(range(1, scripted.POSTBACK_PAGES + 1))
    shown = [title for item in pages for title in result_titles(item["html"])]
    expected = [record.title for record in Archive.bundled().records]
    assert shown == expected[: scripted.POSTBACK_PAGES * scripted.RESULTS_PER_PAGE]
    assert stats["websim/crawl/next_page/postback"] == scripted.POSTBACK_PAGES - 1


@pytest.mark.slow
@needs_browser
def test_rendered_crawl_waits_for_every_script_pattern(demo_site: DemoSite, tmp_path: Path) -> None:
    # Chromium is restarted every 2 pages: every page is still stored, complete.
    items, stats = run_crawl(
        "site", tmp_path, "-a", f"start_url={demo_site.url}js/patterns/", "-a", "render=1",
        "-s", "WEBSIM_RENDER_SCROLLS=10", "-s", "DEPTH_LIMIT=1",
        "-s", "WEBSIM_RENDER_RESTART_EVERY=2",
    )  # fmt: skip
    counts = {item["url"].rsplit("/", 1)[-1]: len(result_titles(item["html"])) for item in items}
    failed = {key: value for key, value in stats.items() if key.startswith("websim/pages/failed")}
    assert len(items) == len({item["url"] for item in items}) == 14 and not failed, failed
    assert stats["websim/render/browser_restarts/every"] == 6  # before pages 3, 5, ... 13
    assert stats["playwright/browser_count"] == 7
    assert counts["timers"] == scripted.TIMER_RESULTS
    assert counts["late-fetch"] == 12
    assert counts["worker"] == 10
    assert counts["scroll"] == scripted.SCROLL_RESULTS
    assert counts["script-next"] == scripted.RESULTS_PER_PAGE
    assert counts["postback"] == scripted.RESULTS_PER_PAGE
    assert stats["websim/render/scrolls"] >= scripted.SCROLL_RESULTS // scripted.SCROLL_BATCH


@pytest.mark.slow
@needs_browser
def test_rendered_crawl_clicks_postback_links(demo_site: DemoSite, tmp_path: Path) -> None:
    items, stats = run_crawl(
        "deepweb", tmp_path, "-a", f"query_template={postback_url(demo_site)}",
        "-a", "queries=all", "-a", "max_pages=3", "-a", "render=1",
    )  # fmt: skip
    pages = sorted(items, key=lambda item: item["page"])
    assert [item["page"] for item in pages] == [1, 2, 3]  # bounded by max_pages
    assert [len(result_titles(item["html"])) for item in pages] == [5, 5, 5]
    assert len({title for item in pages for title in result_titles(item["html"])}) == 15
    assert stats["websim/crawl/next_page/click/postback"] == 2


@pytest.mark.slow
@needs_browser
def test_render_auto_renders_the_script_search_and_fetches_records_plain(
    demo_site: DemoSite, tmp_path: Path
) -> None:
    queries = ("astronomy", "volcanoes", "bread")
    items, stats = run_crawl(
        "deepweb", tmp_path, "-a", f"start_url={demo_site.url}js/", "-a", "follow=1",
        "-a", f"queries={','.join(queries)}", "-a", "render=auto",
    )  # fmt: skip
    archive = Archive.bundled()
    expected = {
        f"{demo_site.url}record/{record.number}" for q in queries for record in archive.search(q)
    }
    records = [item for item in items if item["kind"] == "record"]
    assert {item["url"] for item in records} == expected  # every record, as render=1 finds them
    assert len(records) == len(expected)
    for item in items:
        if item["kind"] == "results":  # the script's results, so the result pages were rendered
            shown = [record.title for record in archive.search(item["query"])]
            first = (item["page"] - 1) * scripted.RESULTS_PER_PAGE
            assert result_titles(item["html"]) == shown[first : first + scripted.RESULTS_PER_PAGE]
    # the result pages' group is rendered, the records' plain: only the samples saw a browser
    assert stats["websim/render/auto/groups/render"] == 1
    assert stats["websim/render/auto/groups/plain"] >= 1
    samples = stats["websim/render/auto/sample"]
    assert stats["websim/render/auto/plain"] >= len(records) - samples
    assert stats["websim/render/auto/kept/rendered"] >= 1
    assert stats.get("websim/render/auto/render_failed", 0) == 0


@pytest.mark.slow
@needs_browser
def test_hostile_pages_are_confined_and_bounded(tmp_path: Path) -> None:
    internal = InternalService()
    site = HostileSite(internal.port)
    try:
        items, stats = run_crawl(
            "site", tmp_path, "-a", f"start_url={site.url}", "-a", "render=1",
            "-s", "WEBSIM_RENDER_SCREENSHOT=1", "-s", "DOWNLOAD_MAXSIZE=2000000",
            "-s", "WEBSIM_RENDER_MAX_MEMORY=800", "-s", "RETRY_ENABLED=False",
        )  # fmt: skip
    finally:
        site.stop()
        internal.stop()
    assert internal.connections == 0
    stored = {"/" + item["url"].split("/", 3)[3] for item in items}
    assert stored == {"/", *STORED}, stats  # the download page stands, though its load is slow
    assert {path: site.requests[path] for path in POPUP_PATHS} == dict.fromkeys(POPUP_PATHS, 0)
    assert site.requests["/popups.html"] == 1
    for path, stat in DROPPED.items():
        assert stats.get(stat, 0) >= 1, (path, stat, stats)
    assert stats["websim/pages/failed/offsite_navigation"] == 4
    assert "root:x:0" not in json.dumps(items)  # no file: content reached a page
    assert stats["websim/render/blocked/other_host"] >= 8  # the internal port is not the site's
    assert stats["websim/render/blocked/popup"] >= 1 + len(POPUP_PATHS) - 1  # window.open: null
    assert stats["websim/render/blocked/download"] >= 1
    assert stats["websim/render/memory_kills"] >= 1
    wide = next(item for item in items if item["url"].endswith("/wide.html"))
    png = base64.b64decode(wide["screenshot"])
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1920, 10_000) and WIDE_PIXELS > 10_000
    assert stats["websim/render/screenshot_clipped"] >= 1


@pytest.mark.slow
@needs_browser
def test_compare_render_confines_saved_files_and_ends_on_busy_pages(tmp_path: Path) -> None:
    internal = InternalService()
    page = tmp_path / "page.html"
    page.write_text(
        "<html><body><h1>Saved</h1><p>A saved page with a list.</p>"
        '<iframe src="file:///etc/passwd" width="600" height="400"></iframe>'
        f'<img src="http://127.0.0.1:{internal.port}/x.png">'
        "<ul><li>one</li><li>two</li></ul></body></html>",
        encoding="utf-8",
    )
    busy = tmp_path / "busy.html"
    busy.write_text(
        "<html><body><p>busy</p><script>addEventListener('load', () => setTimeout(() => "
        "{ for (;;) {} }, 10))</script></body></html>",
        encoding="utf-8",
    )
    report = tmp_path / "report.json"

    def compare(a: Path, b: Path, *options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "websim_crawler", "compare", str(a), str(b), "--render",
                   "--mode", "full", "-o", str(report), "--format", "html", *options]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=200)

    same = compare(page, page, "-s", "WEBSIM_RENDER_RESTART_EVERY=1")  # B in a new browser
    internal.stop()
    assert same.returncode == 0, same.stderr[-2000:]
    assert "websim/render/browser_restarts/every: 1" in same.stderr
    html_report = report.read_text(encoding="utf-8")
    shots = [base64.b64decode(part.split('"', 1)[0])
             for part in html_report.split("data:image/png;base64,")[1:]]  # fmt: skip
    assert len(shots) == 2 and all(shot.startswith(b"\x89PNG") for shot in shots)
    assert internal.connections == 0
    layout = subprocess.run(
        [sys.executable, "-c", "import sys; from websim_crawler.cli.compare import render_pages;"
         "from websim_crawler.config import WebsimConfig;"
         "(html, png), = render_pages([sys.argv[1]], WebsimConfig())[0];"
         "bounded = WebsimConfig.from_settings({'WEBSIM_RENDER_MAX_BOXES': 3});"
         "[(few, _)], counters = render_pages([sys.argv[1]], bounded);"
         "print(html.count('data-websim-box'), 'root:x:0' in html, few.count('data-websim-box'),"
         " counters['websim/render/boxes_truncated'])", str(page)],
        capture_output=True, text=True, timeout=200,
    )  # fmt: skip
    boxes, leaked, bounded_boxes, truncated = layout.stdout.split()
    assert int(boxes) >= 6 and leaked == "False"  # same layout boxes as in a crawl
    assert (bounded_boxes, truncated) == ("3", "1")  # WEBSIM_RENDER_MAX_BOXES, counted
    finished = compare(page, busy, "-s", "WEBSIM_RENDER_SCRIPT_TIMEOUT=2")
    assert finished.returncode not in (0, 1)
    assert "cannot render" in finished.stderr and "WEBSIM_RENDER_SCRIPT_TIMEOUT" in finished.stderr


@pytest.mark.slow
@needs_browser
def test_render_documents_takes_context_options_and_a_resolver() -> None:
    page = (
        b"<html><body><h1>Saved</h1><img src='http://cdn.example/x.png'>"
        b"<script>document.body.insertAdjacentHTML('beforeend', '<p id=added>x</p>')</script>"
        b"</body></html>"
    )
    asked: list[str] = []

    async def nothing_resolves(host: str, port: int) -> list[str]:
        asked.append(host)
        return []

    def render(options: dict[str, Any]) -> tuple[Any, Counter[str]]:
        (rendered,), counters = run_async(
            render_documents(
                [PageToRender("saved.html", page)],
                RenderParams(settle_max=2, other_hosts=True),  # other hosts are looked up
                max_response_bytes=1 << 20,
                context_options=options,
                resolver=nothing_resolves,
            )
        )
        return rendered, counters

    scripted_page, counters = render({})
    assert 'id="added"' in scripted_page.html
    assert struct.unpack(">I", scripted_page.screenshot[16:20])[0] == 1280  # CONTEXT_OPTIONS
    assert counters["websim/render/blocked/unresolved"] >= 1 and "cdn.example" in asked
    plain_page, _ = render(
        {"java_script_enabled": False, "viewport": {"width": 800, "height": 600}}
    )
    assert 'id="added"' not in plain_page.html and "data-websim-box" in plain_page.html
    assert struct.unpack(">I", plain_page.screenshot[16:20])[0] == 800


@pytest.mark.parametrize(
    "options",
    [
        {"proxy": {"server": "http://127.0.0.1:9"}},
        {"accept_downloads": True},
        {"service_workers": "allow"},
    ],
)
def test_context_options_cannot_loosen_the_confinement(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="confine the page"):
        CommandBrowser(None, None, options)
    scripts_off = CommandBrowser(None, None, {"java_script_enabled": False}).context_options
    assert scripts_off["java_script_enabled"] is False and scripts_off["service_workers"] == "block"


@pytest.mark.slow
@needs_browser
def test_demo_render_crawls_the_javascript_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--render", "-o", str(tmp_path)]) == 0
    assert "crawled 50 pages (40 record, 10 results)" in capsys.readouterr().out
    pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    archive = Archive.bundled()
    for page in pages:
        if page["kind"] == "results":  # every result the script added, on pages 1 and 2
            expected = [record.title for record in archive.search(page["query"])]
            first = (page["page"] - 1) * scripted.RESULTS_PER_PAGE
            shown = expected[first : first + scripted.RESULTS_PER_PAGE]
            assert result_titles(page["html"]) == shown
            assert "/js/search?" in page["url"]


class FakePage:
    """A page that is open or closed (what the restart decision looks at)."""

    def __init__(self, closed: bool = False) -> None:
        self.closed = closed
        self.on_close: list[Any] = []

    def is_closed(self) -> bool:
        return self.closed

    def once(self, event: str, handler: Any) -> None:
        assert event == "close"
        self.on_close.append(handler)

    def close(self) -> None:
        self.closed = True
        for handler in self.on_close:
            handler(self)


def test_browser_restarts_every_n_pages_once_the_open_ones_have_closed() -> None:
    counted: list[str] = []
    rendering = Rendering(
        RenderParams(restart_every=2), max_response_bytes=1000, count=counted.append
    )
    events: list[str] = []

    async def restart() -> None:
        events.append("restart")

    async def scenario() -> list[FakePage]:
        rendering.watch(restart)
        pages: list[FakePage] = []

        async def new_page() -> FakePage:
            pages.append(FakePage())
            events.append(f"page {len(pages)}")
            return pages[-1]

        await rendering.open_page(new_page)
        await rendering.open_page(new_page)
        third = asyncio.create_task(rendering.open_page(new_page))
        await asyncio.sleep(0.3)
        events.append("closing")  # the third page waits for the open ones to close
        for page in pages:
            page.close()
        await third
        await rendering.close()
        return pages

    run_async(scenario())
    assert events == ["page 1", "page 2", "closing", "restart", "page 3"]
    assert counted == ["websim/render/browser_restarts/every"]
    assert rendering.pages_since_launch == 1
    never = Rendering(
        RenderParams(restart_every=0), max_response_bytes=1000, count=lambda key: None
    )
    never.pages_since_launch = 10**6
    assert not never._restart_due()


def test_memory_watchdog_loop_outlives_a_failed_check() -> None:
    counted: list[str] = []
    rendering = Rendering(RenderParams(), max_response_bytes=1000, count=counted.append)
    checks: list[str] = []

    async def check(restart: Any) -> None:
        checks.append("check")
        if len(checks) == 1:
            raise RuntimeError("psutil went away")
        if len(checks) == 3:
            await restart()

    async def restart() -> None:
        checks.append("restart")

    rendering.watchdog.check = check  # type: ignore[method-assign]

    async def scenario() -> None:
        rendering.watch(restart)
        await asyncio.sleep(0.5)
        await rendering.close()

    run_async(scenario())
    # Checked on after the failure; after the restart no browser runs, so nothing is checked.
    assert checks == ["check", "check", "check", "restart"] and rendering.closers == []
    assert counted == ["websim/render/watchdog_errors"]


def test_scrapy_playwright_still_has_the_methods_the_adapter_overrides() -> None:
    handler = pytest.importorskip("scrapy_playwright.handler").ScrapyPlaywrightDownloadHandler
    assert callable(handler._create_page) and callable(handler._get_response_and_download)
    assert hasattr(handler, "_browser_disconnected_callback")
