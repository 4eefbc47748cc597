"""Rendering budgets a real JavaScript search fits in (Sphinx's search over Debian's Python docs).

The search page loads a 3.6 MB index, lists the matching pages, then fetches each listed page to
show its summary; the server delays every such fetch, so results keep growing for well over
``WEBSIM_RENDER_SETTLE_MAX`` and the page's subresources add up to far more than
``DOWNLOAD_MAXSIZE``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html
from scrapy import Spider
from scrapy.crawler import Crawler
from support.real_apps import CHROMIUM, AppMissing, SphinxDocs

from websim_crawler.browser.confine import Confinement
from websim_crawler.browser.page import REFUSED_META, PageGuard
from websim_crawler.browser.playwright_wiring import enable_rendering
from websim_crawler.config import websim_config
from websim_crawler.config.render import RenderParams
from websim_crawler.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
QUERY = "function"  # lists 426 pages, 489 with a summary to fetch
FETCH_DELAY = 0.3


def test_settle_growing_max_is_not_below_settle_max() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_RENDER_SETTLE_GROWING_MAX"):
        RenderParams(settle_max=30.0, settle_growing_max=20.0)
    with pytest.raises(ConfigError, match="WEBSIM_RENDER_MAX_PAGE_BYTES"):
        RenderParams(max_page_bytes=-1)


class ClosablePage:
    """What the guard needs of a page to refuse it: ``close``."""

    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def received(events: list[tuple[str, str, int]], **bounds: int) -> tuple[PageGuard, Counter]:
    """Feed a guard CDP ``Network`` events (``data``/``done``, request id, bytes)."""
    counted: Counter[str] = Counter()

    async def feed() -> PageGuard:
        guard = PageGuard(
            ClosablePage(),
            Confinement(),
            count=lambda key: counted.update([key]),
            memory_kills=lambda: 0,
            **bounds,
        )
        for kind, request_id, size in events:
            if kind == "data":
                guard._data_received({"requestId": request_id, "dataLength": size})
            else:
                guard._response_ended({"requestId": request_id})
        await asyncio.sleep(0)  # the refused page's close runs
        return guard

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, feed()).result(), counted


def test_each_response_is_held_to_download_maxsize_and_the_page_to_its_budget() -> None:
    # Forty 1 MB responses: each under the per-response cap, 40 MB in all, under the budget.
    many = [("data", f"r{n}", 1_000_000) for n in range(40)]
    guard, counted = received(many, max_response_bytes=16_000_000, max_page_bytes=64_000_000)
    assert guard.refused is None and guard.bytes_received == 40_000_000 and not counted
    # One response that arrives in chunks, over the cap in all: refused, counted once.
    chunks = [("data", "big", 6_000_000)] * 3
    guard, counted = received(chunks, max_response_bytes=16_000_000, max_page_bytes=64_000_000)
    assert guard.refused == "too_large" and guard.page.closed
    assert guard.meta[REFUSED_META] == "websim/pages/dropped/too_large"
    assert counted == {"websim/render/too_large/response": 1}
    # The page's total over its budget, no response over the cap.
    guard, counted = received(many, max_response_bytes=16_000_000, max_page_bytes=30_000_000)
    assert counted == {"websim/render/too_large/page": 1}
    # Finished responses are forgotten: the per-response table holds only those loading.
    finished = [
        event for n in range(100) for event in (("data", f"r{n}", 10), ("done", f"r{n}", 0))
    ]
    guard, _ = received(finished, max_response_bytes=1000, max_page_bytes=0)
    assert guard.bytes_by_response == {} and guard.refused is None


def crawl_search(
    site: SphinxDocs, tmp_path: Path, *settings: str
) -> tuple[list[dict[str, Any]], dict]:
    """Render the search's result page with ``scrapy crawl deepweb``; return items and stats."""
    output, stats_file = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-O", str(output),
        "-a", f"start_url={site.url}{site.start_path}", "-a", f"queries={QUERY}",
        "-a", "render=1", "-a", "max_pages=1", "-s", "RETRY_ENABLED=False",
        "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}", "-s", "ROBOTSTXT_OBEY=False",
        "-s", "WEBSIM_RENDER_SCRIPT_TIMEOUT=120", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        "-s", "WEBSIM_CHUNK_DETAIL=none", *settings,
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    finished = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=600
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    items = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    return items, json.loads(stats_file.read_text(encoding="utf-8"))


def summaries_shown(page: dict[str, Any]) -> int:
    """Return how many listed results show the summary fetched for them."""
    return len(lxml_html.fromstring(page["html"]).xpath("//ul[@class='search']/li[p]"))


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_a_real_search_that_grows_past_settle_max_is_waited_for(tmp_path: Path) -> None:
    try:
        site = SphinxDocs(fetch_delay=FETCH_DELAY)
    except AppMissing as missing:
        pytest.skip(str(missing))
    with site:
        (page,), stats = crawl_search(site, tmp_path)
        fetched, fetch_seconds = site.site.fetches, site.site.fetch_seconds
        served = site.site.bytes_served
    assert served > 16 * 1024 * 1024 and fetch_seconds > 15, (served, fetch_seconds)
    assert "websim/pages/dropped/too_large" not in stats
    assert summaries_shown(page) >= 0.95 * fetched, (summaries_shown(page), fetched)
    assert page["render_partial"] is False and "websim/render/partial" not in stats
    with SphinxDocs(fetch_delay=FETCH_DELAY) as site:
        (page,), stats = crawl_search(site, tmp_path, "-s", "WEBSIM_RENDER_SETTLE_GROWING_MAX=17")
        fetched = site.site.fetches
    assert page["render_partial"] is True and stats["websim/render/partial"] == 1
    assert 0 < summaries_shown(page) < fetched  # the partial result is kept


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_a_crawl_bounds_each_response_by_download_maxsize_and_the_page_by_its_budget() -> None:
    crawler = Crawler(Spider, {"DOWNLOAD_MAXSIZE": 1000, "WEBSIM_RENDER_MAX_PAGE_BYTES": 5000})
    rendering = enable_rendering(crawler, "budgets", websim_config(crawler).render)
    assert rendering.max_response_bytes == 1000
    assert rendering.params.max_page_bytes == 5000  # what each page's guard is given
