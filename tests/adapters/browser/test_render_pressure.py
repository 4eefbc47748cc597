"""Shared bounds defer, own bounds refuse: pages killed for the browser's memory cap.

Unit tests of the policy (which renderer to kill and why, the next attempt, the admission of
pages), and crawls in Debian's Chromium of heavy pages that each fit the browser's memory cap
alone but not three at once: every page is stored, quiet and with every core busy; a page over
the per-page memory by itself is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.crawl_runs import crawl, read_pages
from support.load import every_core_busy

from websim_crawler._imports import available
from websim_crawler.browser.pressure import PageAdmission, next_attempt
from websim_crawler.browser.watchdog import choose_victim

CHROMIUM = "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and available("scrapy_playwright")),
    reason=f"needs Chromium at {CHROMIUM} and scrapy-playwright (the [render] extra)",
)
MIB = 1 << 20
HEAVY_PAGES = 6


def test_the_victim_is_a_page_over_its_own_bound_else_the_youngest() -> None:
    renderers = [(300 * MIB, 1.0), (900 * MIB, 2.0), (200 * MIB, 3.0), (1 * MIB, 4.0)]
    assert choose_victim(renderers, page_limit=768 * MIB, smallest=64 * MIB) == ("own", 1)
    ordinary = [(300 * MIB, 1.0), (250 * MIB, 2.0), (200 * MIB, 3.0), (1 * MIB, 4.0)]
    # The youngest worth killing: the empty tab started last frees nothing.
    assert choose_victim(ordinary, page_limit=768 * MIB, smallest=64 * MIB) == ("shared", 2)
    assert choose_victim([(1 * MIB, 1.0)], page_limit=768 * MIB, smallest=64 * MIB) is None


def test_a_deferred_page_is_retried_then_rendered_alone_and_refused_only_alone() -> None:
    attempts = []
    deferrals, alone = 0, False
    while True:
        attempt = next_attempt(deferrals, alone, retries=2)
        attempts.append((attempt.retry, attempt.alone))
        if not attempt.retry:
            break
        deferrals, alone = attempt.deferrals, attempt.alone
    assert attempts == [(True, False), (True, False), (True, True), (False, True)]
    assert next_attempt(0, False, retries=0).alone  # no retries: straight to alone


def test_admission_halves_under_pressure_and_opens_a_page_alone() -> None:
    async def scenario() -> list[str]:
        admission = PageAdmission(4)
        events: list[str] = []
        for _ in range(4):
            await admission.enter(False)
        admission.pressure()
        assert admission.allowed == 2

        async def alone() -> None:
            await admission.enter(True)
            events.append(f"alone opened with {admission.open_pages} open")
            await admission.leave(True)

        async def ordinary() -> None:
            await admission.enter(False)
            events.append("ordinary opened")
            await admission.leave(False)

        waiting = [asyncio.create_task(alone()), asyncio.create_task(ordinary())]
        await asyncio.sleep(0.01)
        assert events == []  # four open: the alone page waits, and so does every other
        for _ in range(4):
            await admission.leave(False)
        await asyncio.gather(*waiting)
        for _ in range(8):
            await admission.enter(False)
            await admission.leave(False)
        events.append(f"allowed {admission.allowed}")
        return events

    with ThreadPoolExecutor(1) as thread:  # pytest's reactor runs a loop in this thread
        events = thread.submit(asyncio.run, scenario()).result()
    assert events[0] == "alone opened with 1 open"
    assert events[1:] == ["ordinary opened", "allowed 3"]  # grown back by one after calm pages


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def heavy_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A start page linking to heavy pages, each holding ``MEMORY_MIB`` of script memory, and
    one page that takes far more than a page may (``/greedy.html``)."""
    root = tmp_path_factory.mktemp("heavy")
    links = "".join(f'<li><a href="/heavy{n}.html">heavy {n}</a></li>' for n in range(HEAVY_PAGES))
    (root / "index.html").write_text(f"<h1>Heavy pages</h1><ul>{links}</ul>")
    for n in range(HEAVY_PAGES):
        (root / f"heavy{n}.html").write_text(
            f"<h1>Heavy page {n}</h1><p>A page whose script keeps 180 MiB.</p><script>"
            "window.kept = []; for (let i = 0; i < 6; i++) { const b = new Uint8Array(30 << 20);"
            f" b.fill(i + {n} + 1); window.kept.push(b); }}</script>"
        )
    (root / "greedy.html").write_text(
        "<h1>Greedy</h1><script>window.kept = []; for (let i = 0; i < 48; i++) {"
        " const b = new Uint8Array(32 << 20); b.fill(i + 1); window.kept.push(b); }</script>"
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def render_crawl(tmp_path: Path, start_url: str, *, busy: bool = False) -> tuple[list, dict, str]:
    """Render-crawl ``start_url`` under a browser cap one heavy page fits and three do not;
    return the pages stored, the stats and the crawl's log."""
    output, stats_file = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    with every_core_busy(busy):
        finished = crawl(
            "site", output, "-a", f"start_url={start_url}", "-a", "render=1",
            "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}", "-s", "ROBOTSTXT_OBEY=False",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "WEBSIM_RENDER_MAX_MEMORY=700",
            "-s", "WEBSIM_RENDER_MAX_PAGE_MEMORY=400", "-s", "WEBSIM_RENDER_MAX_PAGES=4",
            "-s", "CONCURRENT_REQUESTS=8", "-s", "WEBSIM_CHUNK_DETAIL=none",
            "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        )  # fmt: skip
    assert finished.returncode in (0, 1), finished.stderr[-3000:]
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    return read_pages(output), stats, finished.stderr


def _stored(pages: list[dict[str, Any]]) -> set[str]:
    return {page["url"].rsplit("/", 1)[-1] for page in pages}


@pytest.mark.slow
@needs_browser
@pytest.mark.parametrize("busy", [False, True], ids=["quiet", "every-core-busy"])
def test_heavy_pages_that_fit_alone_are_all_stored(
    heavy_site: str, tmp_path: Path, busy: bool
) -> None:
    pages, stats, log = render_crawl(tmp_path, heavy_site, busy=busy)
    heavy = {f"heavy{n}.html" for n in range(HEAVY_PAGES)}
    assert heavy <= _stored(pages), stats
    assert stats.get("websim/pages/failed/render_memory", 0) == 0, stats
    assert "refused for their own bounds" not in log
    # Whether pressure struck depends on timing; when it did, each kill was deferred.
    assert stats.get("websim/render/memory_kills/own", 0) == 0, stats
    assert stats.get("websim/render/deferred", 0) == stats.get(
        "websim/render/memory_kills/shared", 0
    ), stats


@pytest.mark.slow
@needs_browser
def test_a_page_over_its_own_memory_is_refused_and_the_others_stored(
    heavy_site: str, tmp_path: Path
) -> None:
    (tmp_path / "start").mkdir()
    pages, stats, log = render_crawl(tmp_path / "start", heavy_site + "greedy.html")
    assert "greedy.html" not in _stored(pages)
    assert stats.get("websim/pages/failed/render_memory", 0) == 1, stats
    assert "1 refused for their own bounds: 1 render_memory (" in log  # named at the end
    assert "greedy.html)" in log
