"""Surfacing over Redis: two workers with ``-a queries=auto`` share one journal of answers, choose
each query once, and fetch each other's queries from the shared queue."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.hidden_databases import HiddenDatabaseSite, gallery
from support.real_apps import AppMissing

REPO = Path(__file__).resolve().parents[3]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]


class SlowSearchSite(HiddenDatabaseSite):
    """A gallery site that takes a quarter of a second to answer a search. Each worker below
    fetches one page at a time, so while one waits for an answer the other query's next page
    waits in the shared queue longer than the other worker's poll interval. Answered at once,
    the pages were each taken by the worker that queued them as soon as they were queued, and
    on a loaded machine one worker took all of them."""

    def answer(self, target: str) -> tuple[int, str, str]:
        if urlsplit(target).path == "/search":
            time.sleep(0.25)
        return super().answer(target)


def worker_command(start_url: str, redis_url: str, output: Path) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-O", str(output),
        "-a", f"start_url={start_url}", "-a", "queries=auto", "-a", "max_queries=40",
        "-s", f"WEBSIM_REDIS_URL={redis_url}", "-s", "WEBSIM_REDIS_PREFIX=surf",
        "-s", "WEBSIM_REDIS_MAX_IDLE=4", "-s", "WEBSIM_REDIS_POLL_INTERVAL=0.2",
        "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1",
        "-s", "WEBSIM_CHUNK_DETAIL=none", "-s", f"LOG_FILE={output}.log",
    ]  # fmt: skip


def test_two_workers_surface_one_database_choosing_each_query_once(
    redis_url: str, tmp_path: Path
) -> None:
    redis = pytest.importorskip("redis")
    try:
        site = SlowSearchSite(gallery()[0]).__enter__()
    except AppMissing as missing:
        pytest.skip(str(missing))
    try:
        outputs = [tmp_path / "worker-1.jsonl", tmp_path / "worker-2.jsonl"]
        environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        workers = [
            subprocess.Popen(worker_command(site.url, redis_url, output), cwd=REPO, env=environment)
            for output in outputs
        ]
        codes = [worker.wait(timeout=300) for worker in workers]
    finally:
        site.__exit__(None, None, None)
    assert codes == [0, 0], [output.with_suffix(".log").read_text()[-2000:] for output in outputs]
    server = redis.Redis.from_url(redis_url)
    events = [json.loads(raw) for raw in server.lrange("surf:deepweb:surfacing:events", 0, -1)]
    chosen = [event["query"] for event in events if event["event"] == "chosen"]
    assert len(chosen) == len(set(chosen)) == server.scard("surf:deepweb:surfacing:chosen")
    assert 30 <= len(chosen) <= 42  # the budget, and what was in flight when it was reached
    finished = Counter(event["query"] for event in events if event["event"] == "finished")
    assert set(finished) == set(chosen) and max(finished.values()) == 1
    items = [[json.loads(line) for line in output.read_text().splitlines()] for output in outputs]
    results = [[item for item in mine if item["kind"] == "results"] for mine in items]
    assert all(results), "both workers fetched result pages"
    pages = Counter(item["url"] for mine in results for item in mine)
    assert max(pages.values()) == 1  # each result page fetched once, by one worker
    reached = {
        site.record_id_of(link) for mine in results for item in mine for link in item["links"]
    } - {None}
    assert len(reached) >= 250
