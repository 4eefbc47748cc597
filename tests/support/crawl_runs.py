"""Crawls the JOBDIR and stage tests share: the demo site slowed down, a crawl stopped by a
signal, the pipelines of a crawl with its three end-of-crawl stages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scrapy.utils.test import get_crawler

from websim_crawler.core.io import iter_jsonl
from websim_crawler.demo.site import Archive, make_handler
from websim_crawler.frontier.jobdir_scheduler import FRONTIER_FILE, SqliteFrontier
from websim_crawler.pipelines._collection import CollectionPipeline
from websim_crawler.pipelines.analysis import PageAnalysisPipeline
from websim_crawler.pipelines.clustering import ClusteringPipeline
from websim_crawler.pipelines.neardup import NearDuplicatePipeline
from websim_crawler.pipelines.similarity import SimilarityPipeline

REPO = Path(__file__).resolve().parents[2]
QUERIES = "astronomy,bread,beekeeping,cycling,volcanoes"


def stage_pipelines(settings: dict[str, Any]) -> tuple[Any, Any, list[CollectionPipeline]]:
    """A crawler, its analysis pipeline and its three stages, as a crawl builds them."""
    # The add-on lists the stages, as the project's settings have it.
    crawler = get_crawler(
        settings_dict={"ADDONS": {"websim_crawler.addon.WebsimAddon": 0}, **settings}
    )
    crawler.stats.open_spider()
    analysis = PageAnalysisPipeline.from_crawler(crawler)
    stages = [
        ClusteringPipeline.from_crawler(crawler),
        SimilarityPipeline.from_crawler(crawler),
        NearDuplicatePipeline.from_crawler(crawler),
    ]
    return crawler, analysis, stages


def run_crawl(
    command: list[str], stop_when: Callable[[], bool] | None, stop_signal: signal.Signals
) -> int:
    """Run a crawl; send ``stop_signal`` once ``stop_when()`` holds; return its exit code."""
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    process = subprocess.Popen(command, cwd=REPO, env=environment)
    try:
        if stop_when is not None:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                if stop_when():
                    process.send_signal(stop_signal)
                    break
                time.sleep(0.01)
        return process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()


def in_flight_in_frontier(folder: Path) -> int:
    """Return how many requests a killed crawl's frontier file (``folder/job``) holds leased."""
    frontier = SqliteFrontier(folder / "job" / FRONTIER_FILE)
    try:
        return frontier.in_flight()
    finally:
        frontier.close()


def serve_slow_demo(delay: float) -> tuple[ThreadingHTTPServer, str]:
    """The demo site answering each request after ``delay`` s, so requests are in flight."""
    base = make_handler(Archive.bundled())

    class SlowHandler(base):  # type: ignore[valid-type,misc]
        def answer(self, path: str, parameters: dict[str, str]) -> None:
            time.sleep(delay)
            super().answer(path, parameters)

    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def crawl(spider: str, output: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m scrapy crawl`` from the repository root (where scrapy.cfg is)."""
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-O", str(output)]
    command += [*arguments, "-s", "LOG_LEVEL=INFO"]
    environment = {
        key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"
    }
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


def read_pages(path: Path) -> list[dict[str, Any]]:
    return list(iter_jsonl(path))
