"""JOBDIR: a crawl stopped by SIGTERM and resumed ends with the pages and clusters of one run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from websim_crawler.core.clustering import DocumentCollector
from websim_crawler.core.io import iter_jsonl
from websim_crawler.core.page import SiteTemplateMemory
from websim_crawler.demo.site import DemoSite
from websim_crawler.jobdir import load_state, save_state, state_path
from websim_crawler.pipelines.analysis import PageAnalysisPipeline
from websim_crawler.pipelines.clustering import BUFFER_STATE, ClusteringPipeline

REPO = Path(__file__).resolve().parents[1]
QUERIES = "astronomy,bread,beekeeping,cycling,volcanoes"


def test_state_round_trip_and_bad_files_start_afresh(tmp_path: Path) -> None:
    settings = {"JOBDIR": str(tmp_path / "job")}
    assert state_path({}, "x") is None
    save_state({}, "x", {"a": 1})  # no JOBDIR: nothing written
    assert load_state(settings, "x", dict) is None
    save_state(settings, "x", {"a": 1})
    assert load_state(settings, "x", dict) == {"a": 1}
    path = state_path(settings, "x")
    assert path is not None
    path.write_text("{truncated", encoding="utf-8")
    assert load_state(settings, "x", dict) is None
    path.write_text('{"sites": 3}', encoding="utf-8")
    assert load_state(settings, "x", SiteTemplateMemory.from_dict) is None  # malformed


def test_collector_buffer_round_trips() -> None:
    collector = DocumentCollector("record")
    collector.add("http://a/1", "record", {"bee": 2, "hive": 1})
    collector.add("http://a/1", "record", {"bee": 2})
    collector.add("http://a/2", "results", {"x": 1})
    restored = DocumentCollector("record")
    restored.restore(json.loads(json.dumps(collector.to_dict())))
    assert restored.documents == collector.documents
    assert restored.report.skipped == {"duplicate_url": 1, "other_kind": 1}
    assert restored.report.pages == 3
    assert restored.add("http://a/1", "record", {"bee": 1}) is False  # still known


def page(number: int) -> dict[str, object]:
    body = "".join(
        f"<p>Unique paragraph {number} about topic {number} number {i}.</p>" for i in range(4)
    )
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/about'>About this archive</a></nav>"
        f"<article><h1>Page {number}</h1>{body}</article>"
        "<footer>Copyright the archive volunteers, all rights reserved.</footer></body></html>"
    )
    return {"url": f"http://s.org/{number}", "kind": "record", "html": html}


def test_pipelines_save_and_restore_their_state(tmp_path: Path) -> None:
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "WEBSIM_CLUSTERS_OUTPUT": str(tmp_path / "clusters.json"),
    }
    analysis = PageAnalysisPipeline.from_crawler(get_crawler(settings_dict=settings))
    clustering = ClusteringPipeline.from_crawler(get_crawler(settings_dict=settings))
    for number in range(5):
        clustering.process_item(analysis.process_item(page(number)))
    analysis.close_spider()
    # What ClusteringPipeline.close_spider saves before it clusters (the crawl test runs it).
    save_state(settings, BUFFER_STATE, clustering.collector.to_dict())

    resumed_analysis = PageAnalysisPipeline.from_crawler(get_crawler(settings_dict=settings))
    resumed_clustering = ClusteringPipeline.from_crawler(get_crawler(settings_dict=settings))
    assert resumed_analysis.site_memory.to_dict() == analysis.site_memory.to_dict()
    assert len(resumed_analysis.site_memory) > 0
    assert resumed_clustering.collector.documents == clustering.collector.documents
    assert len(resumed_clustering.collector.documents) == 5
    # The footer, seen on 5 pages before, is template for the resumed pipeline at once.
    item = resumed_analysis.process_item(page(6))
    (footer,) = [chunk for chunk in item["chunks"] if "Copyright" in chunk["text"]]
    assert footer["is_main"] is False


def crawl(site: str, folder: Path, *, stop_after: int | None = None) -> int:
    """Crawl the demo site with deepweb into ``folder`` (JOBDIR, appended feed, clusters)."""
    log = folder / "crawl.log"
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site}"]
    command += ["-a", f"queries={QUERIES}", "-a", "follow=1", "-o", str(folder / "pages.jsonl")]
    for setting in (
        f"JOBDIR={folder / 'job'}",
        f"WEBSIM_CLUSTERS_OUTPUT={folder / 'clusters.json'}",
        "WEBSIM_CLUSTERS_N=5",
        "CONCURRENT_REQUESTS=1",  # one order of pages, so both crawls analyse alike
        "AUTOTHROTTLE_ENABLED=0",
        "DOWNLOAD_DELAY=0.05",
        "LOG_LEVEL=DEBUG",
        f"LOG_FILE={log}",
    ):
        command += ["-s", setting]
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    process = subprocess.Popen(command, cwd=REPO, env=environment)
    try:
        if stop_after is not None:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                text = log.read_text(encoding="utf-8") if log.exists() else ""
                if text.count("Scraped from") >= stop_after:
                    process.send_signal(signal.SIGTERM)  # a graceful stop, as Ctrl-C
                    break
                time.sleep(0.05)
        return process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()


def clusters_of(folder: Path) -> set[frozenset[str]]:
    report = json.loads((folder / "clusters.json").read_text(encoding="utf-8"))
    return {frozenset(cluster["members"]) for cluster in report["clusters"]}


@pytest.mark.slow
def test_sigterm_then_resume_gives_the_uninterrupted_pages_and_clusters(tmp_path: Path) -> None:
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    whole.mkdir()
    resumed.mkdir()
    with DemoSite() as site:
        assert crawl(site.url, whole) == 0
        expected = list(iter_jsonl(whole / "pages.jsonl"))
        assert crawl(site.url, resumed, stop_after=len(expected) // 2) == 0
        first_part = list(iter_jsonl(resumed / "pages.jsonl"))
        assert "'finish_reason': 'shutdown'" in (resumed / "crawl.log").read_text("utf-8")
        assert len(expected) // 2 <= len(first_part) < len(expected)
        assert crawl(site.url, resumed) == 0

    pages = list(iter_jsonl(resumed / "pages.jsonl"))
    assert Counter((p["kind"], p["url"]) for p in pages) == Counter(
        (p["kind"], p["url"]) for p in expected
    )  # every page once: none lost at the stop, none fetched again after it
    keywords = {p["url"]: p["keywords"] for p in expected}
    assert all(p["keywords"] == keywords[p["url"]] for p in pages)  # template memory restored
    assert clusters_of(resumed) == clusters_of(whole)
    assert sum(len(members) for members in clusters_of(whole)) > 20
