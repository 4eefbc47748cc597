"""A user's own Scrapy project with the README's settings block works on the first try.

A fresh ``scrapy startproject`` (in ``tmp_path``) gets the settings block of the README's "Using
the pipelines in your own Scrapy project" section, parsed out of README.md (so a wrong README
fails here) and the README's minimal spider, and crawls the bundled demo site on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from websim_crawler.demo.site import DemoSite

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def readme_blocks() -> tuple[str, str]:
    """Return the settings block and the spider block of the own-project section."""
    section = README.split("## Using the pipelines in your own Scrapy project", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    settings = next(block for block in blocks if "# settings.py of any Scrapy project" in block)
    spider = next(block for block in blocks if "class PagesSpider" in block)
    return settings, spider


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def test_a_fresh_project_with_the_readme_settings_clusters_pairs_and_neardups(
    tmp_path: Path,
) -> None:
    settings_block, spider_block = readme_blocks()
    created = run([sys.executable, "-m", "scrapy", "startproject", "mine"], tmp_path)
    assert created.returncode == 0, created.stderr
    project = tmp_path / "mine"
    settings_file = project / "mine" / "settings.py"
    settings_file.write_text(settings_file.read_text() + "\n" + settings_block)
    (project / "mine" / "spiders" / "pages.py").write_text(
        "import scrapy\n\n\n" + spider_block.replace('    name = "pages"\n', PAGES_EXTRA)
    )
    with DemoSite() as site:
        crawl = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"start={site.url}"]
        crawl += ["-O", "pages.jsonl", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=INFO"]
        finished = run(crawl, project)
    assert finished.returncode == 0, finished.stderr[-3000:]
    pages = [json.loads(line) for line in (project / "pages.jsonl").read_text().splitlines()]
    assert len(pages) >= 40 and all("kind" not in page for page in pages)

    clusters = json.loads((project / "clusters.json").read_text())
    records = {page["url"] for page in pages if "/record/" in page["url"]}
    assert len(records) == 40  # the demo site's record pages, reached by links
    assert len(clusters["clusters"]) >= 2
    assert records <= {document["url"] for document in clusters["documents"]}
    assert (project / "clusters.json").stat().st_mode & 0o044 == 0o044  # readable by others
    pairs = json.loads((project / "pairs.json").read_text())
    distinct = len({page["url"] for page in pages})  # start_urls pass the duplicate filter
    assert pairs["pages"] == distinct and pairs["pairs"]
    neardup = json.loads((project / "neardup.json").read_text())
    assert neardup["stats"]["pages"]["indexed"] == distinct and neardup["pairs"]

    misspelt = run([*crawl, "-s", "WEBSIM_NEARDUP_OUTPT=n.json"], project)  # no site needed
    assert misspelt.returncode == 1
    assert "unknown setting WEBSIM_NEARDUP_OUTPT (did you mean WEBSIM_NEARDUP_OUTPUT?)" in (
        misspelt.stderr
    )
    assert "Traceback" not in misspelt.stderr


# The README's spider plus what a test needs: the start URL as an argument, stay on the site.
PAGES_EXTRA = """    name = "pages"
    allowed_domains = ["127.0.0.1"]

    def __init__(self, start: str = "", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]
"""
