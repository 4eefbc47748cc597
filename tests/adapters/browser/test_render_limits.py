"""A rendered page whose scripts never yield fails with a counted reason; the crawl goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"needs Chromium at {CHROMIUM}")
def test_busy_page_fails_on_the_script_timeout(site_url: str, tmp_path: Path) -> None:
    output, stats_file = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={site_url}/index.html",
        "-a", "render=1", "-O", str(output), "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}",
        "-s", "WEBSIM_RENDER_SCRIPT_TIMEOUT=2", "-s", "ROBOTSTXT_OBEY=False",
        "-s", "AUTOTHROTTLE_ENABLED=False", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        "-s", "WEBSIM_CHUNK_DETAIL=none",
    ]  # fmt: skip
    environment = {
        key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"
    }
    finished = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    assert stats["websim/pages/failed/render_script_timeout"] == 1
    pages = {Path(json.loads(line)["url"]).name for line in output.read_text().splitlines()}
    assert {"index.html", "volcanoes.html", "rivers.html"} <= pages
    assert "busy.html" not in pages
