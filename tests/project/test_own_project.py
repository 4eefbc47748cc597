"""A user's own Scrapy project with the README's blocks works on the first try.

A fresh ``scrapy startproject`` (in ``tmp_path``) gets the settings block and the spider block of
the README's "Using the pipelines in your own Scrapy project" section verbatim, parsed out of
README.md (so a wrong README fails here), only the site's URL swapped for the bundled demo site
on 127.0.0.1 (whose footer links to other hosts and to a ``mailto:`` address). The section's
install step is not run here: it would reinstall the package into the shared environment; the
test checks that the folder it installs is this repository's package and that the project the
step creates is the one the blocks go into.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from websim_crawler.demo.site import DemoSite

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


README_SITE = "https://docs.example.org/"  # the spider block's site, swapped for the demo's


def readme_blocks() -> tuple[str, str, str]:
    """Return the install, settings and spider blocks of the own-project section."""
    section = README.split("## Using the pipelines in your own Scrapy project", 1)[1]
    section = section.split("\n## ", 1)[0]
    [install] = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    settings = next(block for block in blocks if "# settings.py of any Scrapy project" in block)
    spider = next(block for block in blocks if "class PagesSpider" in block)
    return install, settings, spider


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def test_the_install_step_installs_this_repository_into_the_project_it_creates() -> None:
    install, _settings, spider = readme_blocks()
    assert install.startswith("pip install /path/to/websim-crawler && scrapy startproject mine")
    assert 'name = "websim-crawler"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert spider.startswith("# mine/spiders/pages.py")  # the project that step creates


def test_a_fresh_project_with_the_readme_blocks_clusters_pairs_and_neardups(
    tmp_path: Path,
) -> None:
    _install, settings_block, spider_block = readme_blocks()
    created = run([sys.executable, "-m", "scrapy", "startproject", "mine"], tmp_path)
    assert created.returncode == 0, created.stderr
    project = tmp_path / "mine"
    settings_file = project / "mine" / "settings.py"
    settings_file.write_text(settings_file.read_text() + "\n" + settings_block)
    with DemoSite() as site:
        host = urlsplit(site.url).hostname
        assert host is not None and README_SITE in spider_block
        spider = spider_block.replace(README_SITE, site.url)
        spider = spider.replace(f'"{urlsplit(README_SITE).hostname}"', f'"{host}"')
        (project / "mine" / "spiders" / "pages.py").write_text(spider)
        crawl = [sys.executable, "-m", "scrapy", "crawl", "pages", "-O", "pages.jsonl"]
        crawl += ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=INFO"]  # a quick test crawl
        finished = run(crawl, project)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "Traceback" not in finished.stderr and " ERROR: " not in finished.stderr
    assert "'offsite/filtered'" in finished.stderr  # the footer's links to other hosts
    pages = [json.loads(line) for line in (project / "pages.jsonl").read_text().splitlines()]
    assert len(pages) >= 40 and all("kind" not in page for page in pages)
    assert all(page["url"].startswith(site.url) for page in pages)

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


def test_the_block_pasted_above_the_templates_addons_line_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    """Scrapy's template ends with ``ADDONS = {}``: pasted above it, the README's block loses its
    add-on, and the stages whose outputs it sets would never run (before: exit 0, no word)."""
    _install, settings_block, spider_block = readme_blocks()
    created = run([sys.executable, "-m", "scrapy", "startproject", "mine"], tmp_path)
    assert created.returncode == 0, created.stderr
    project = tmp_path / "mine"
    settings_file = project / "mine" / "settings.py"
    template = settings_file.read_text()
    assert "\nADDONS = {}\n" in template  # the line a user pastes above
    settings_file.write_text(
        template.replace("\nADDONS = {}\n", f"\n{settings_block}\nADDONS = {{}}\n")
    )
    (project / "mine" / "spiders" / "pages.py").write_text(spider_block)
    finished = run([sys.executable, "-m", "scrapy", "crawl", "pages", "-O", "pages.jsonl"], project)
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    assert (
        "WEBSIM_CLUSTERS_OUTPUT, WEBSIM_SIMILARITY_OUTPUT, WEBSIM_NEARDUP_OUTPUT set but "
        "ClusteringPipeline, SimilarityPipeline, NearDuplicatePipeline not running"
    ) in finished.stderr
    assert not (project / "pages.jsonl").exists() or not (project / "pages.jsonl").read_text()
