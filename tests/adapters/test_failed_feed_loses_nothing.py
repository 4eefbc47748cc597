"""A feed write that fails mid-crawl loses no page: the next run crawls what the feed missed.

The crawl's feed storage fails as a full disk does after a few items; the requests whose items
did not reach the feed must stay in flight, so that a JOBDIR crawl resumed with a good feed, or a
Redis worker started again with one, crawls them: the union of the feeds covers the whole site.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.crawl_runs import serve_slow_demo

from websim_crawler.cli import main
from websim_crawler.core.io import iter_jsonl

REPO = Path(__file__).resolve().parents[2]
ITEMS_BEFORE_FULL_DISK = 15
FULL_DISK = json.dumps({"": "support.full_disk_feed.FullDiskFeedStorage"})


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    """The demo site, slow enough that requests are in flight when the feed fails."""
    server, url = serve_slow_demo(0.02)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def whole_site(demo_site: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The URLs of one uninterrupted crawl of the site."""
    feed = tmp_path_factory.mktemp("reference") / "pages.jsonl"
    assert site_crawl(demo_site, feed).returncode == 0
    return urls_of(feed)


def site_crawl(start_url: str, feed: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy crawl site`` writing ``feed`` (its log beside it), with ``-s`` settings."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={start_url}"]
    command += ["-O", str(feed)]
    for setting in (
        "WEBSIM_ANALYSIS_WORKERS=0",
        "CONCURRENT_REQUESTS=4",
        "LOG_LEVEL=INFO",
        f"LOG_FILE={feed.with_suffix('.log')}",
        *settings,
    ):
        command += ["-s", setting]
    environment = dict(
        os.environ,
        SCRAPY_SETTINGS_MODULE="websim_crawler.settings",
        PYTHONPATH=os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
    )
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


def failing_feed_settings() -> tuple[str, ...]:
    return (f"FEED_STORAGES={FULL_DISK}", f"FULL_DISK_AFTER_ITEMS={ITEMS_BEFORE_FULL_DISK}")


def urls_of(feed: Path) -> set[str]:
    return {str(record["url"]) for record in iter_jsonl(feed)}


def assert_stopped_by_the_full_disk(finished: subprocess.CompletedProcess[str], feed: Path) -> None:
    assert finished.returncode == 1, finished.stderr[-3000:]
    log = feed.with_suffix(".log").read_text(encoding="utf-8")
    assert "'finish_reason': 'feed_write_failed'" in log and "Traceback" not in log
    assert len(urls_of(feed)) == ITEMS_BEFORE_FULL_DISK
    assert "'websim/feed/requests_kept': " in log  # the failed item's request, at least


@pytest.mark.slow
def test_a_jobdir_crawl_resumed_after_a_failed_feed_write_misses_no_page(
    demo_site: str, whole_site: set[str], tmp_path: Path
) -> None:
    jobdir = f"JOBDIR={tmp_path / 'job'}"
    failed, resumed = tmp_path / "failed.jsonl", tmp_path / "resumed.jsonl"
    assert_stopped_by_the_full_disk(
        site_crawl(demo_site, failed, jobdir, *failing_feed_settings()), failed
    )
    finished = site_crawl(demo_site, resumed, jobdir)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "JOBDIR: resuming with" in resumed.with_suffix(".log").read_text(encoding="utf-8")
    missing = whole_site - urls_of(failed) - urls_of(resumed)
    assert not missing, sorted(missing)


@pytest.mark.slow
def test_a_redis_worker_run_again_after_a_failed_feed_write_misses_no_page(
    demo_site: str, whole_site: set[str], redis_url: str, tmp_path: Path
) -> None:
    prefix = "feedfull"
    assert main(["seed", "site", demo_site, "--redis", redis_url, "--prefix", prefix]) == 0
    worker = (
        f"WEBSIM_REDIS_URL={redis_url}",
        f"WEBSIM_REDIS_PREFIX={prefix}",
        "WEBSIM_REDIS_MAX_IDLE=2",
        "WEBSIM_REDIS_POLL_INTERVAL=0.2",
    )
    failed, again = tmp_path / "failed.jsonl", tmp_path / "again.jsonl"
    assert_stopped_by_the_full_disk(
        site_crawl(demo_site, failed, *worker, *failing_feed_settings()), failed
    )
    finished = site_crawl(demo_site, again, *worker)
    assert finished.returncode == 0, finished.stderr[-3000:]
    missing = whole_site - urls_of(failed) - urls_of(again)
    assert not missing, sorted(missing)
