"""A crawl that refused pages for their own bounds says so at its end, naming them."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.crawl_runs import crawl, read_pages

from websim_crawler.demo.site import DemoSite

pytestmark = pytest.mark.slow


def test_a_crawl_names_the_pages_it_refused_for_their_size(tmp_path: Path) -> None:
    """Pages over ``WEBSIM_MAX_PAGE_BYTES`` are dropped by the analysis; the crawl's last lines
    count them under ``too_large`` and name the first of them."""
    output = tmp_path / "pages.jsonl"
    with DemoSite() as site:
        finished = crawl(
            "site", output, "-a", f"start_url={site.url}", "-a", "max_pages=6",
            "-s", "WEBSIM_MAX_PAGE_BYTES=1024", "-s", "ROBOTSTXT_OBEY=False",
        )  # fmt: skip
    assert finished.returncode in (0, 1), finished.stderr[-3000:]
    assert read_pages(output) == []  # every demo page is over 1 KiB
    summary = [line for line in finished.stderr.splitlines() if "refused for their own" in line]
    assert len(summary) == 1, finished.stderr[-3000:]
    assert "WARNING" in summary[0] and " too_large (http://127.0.0.1:" in summary[0], summary
