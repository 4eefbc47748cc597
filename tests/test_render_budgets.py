"""Rendering budgets a real JavaScript search fits in (Sphinx's search over Debian's Python docs).

The search page loads a 3.6 MB index, lists the matching pages, then fetches each listed page to
show its summary; the server delays every such fetch, so results keep growing for well over
``WEBSIM_RENDER_SETTLE_MAX`` and the page's subresources add up to far more than
``DOWNLOAD_MAXSIZE``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

from tests.real_apps import CHROMIUM, AppMissing, SphinxDocs
from websim_crawler.browser.params import RenderParams
from websim_crawler.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
QUERY = "function"  # lists 426 pages, 489 with a summary to fetch
FETCH_DELAY = 0.3


def test_settle_growing_max_is_not_below_settle_max() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_RENDER_SETTLE_GROWING_MAX"):
        RenderParams(settle_max=30.0, settle_growing_max=20.0)
    with pytest.raises(ConfigError, match="WEBSIM_RENDER_MAX_PAGE_BYTES"):
        RenderParams(max_page_bytes=-1)


def crawl_search(
    site: SphinxDocs, tmp_path: Path, *settings: str, exit_code: int = 0
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
    assert finished.returncode == exit_code, finished.stderr[-4000:]
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


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_the_page_budget_and_the_response_cap_refuse_pages_as_too_large(tmp_path: Path) -> None:
    try:
        site = SphinxDocs()
    except AppMissing as missing:
        pytest.skip(str(missing))
    with site:
        pages, stats = crawl_search(
            site, tmp_path, "-s", "WEBSIM_RENDER_MAX_PAGE_BYTES=8000000", exit_code=1
        )
    assert stats["websim/render/too_large/page"] == 1, stats
    assert stats["websim/pages/dropped/too_large"] == 1 and pages == []  # "every page failed"
    with SphinxDocs() as site:
        pages, stats = crawl_search(site, tmp_path, "-s", "DOWNLOAD_MAXSIZE=3000000", exit_code=1)
    assert stats["websim/render/too_large/response"] == 1, stats  # the 3.6 MB index
    assert "websim/render/too_large/page" not in stats and pages == []
