"""Nothing fetched is lost from the WARC files: a crawl SIGKILLed and resumed, or stopped by a
WARC disk that fills up and resumed, has every page in its WARC files, each successful fetch
once, repeats bounded by what was in flight, and a record cut by a kill dropped and counted."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from support.crawl_runs import QUERIES, in_flight_in_frontier, run_crawl
from support.warc_runs import RecordingSite, read_records, serve_recording_demo, warcio_cli

from websim_crawler.cli import main
from websim_crawler.core.archive.files import OPEN_SUFFIX
from websim_crawler.core.io import iter_jsonl

REPO = Path(__file__).resolve().parents[3]
CONCURRENCY = 4
# Fetched again by every run of a crawl, by design: robots.txt, and deepweb's search-form page.
PER_RUN = ("/robots.txt", "/")


def crawl_command(site: str, folder: Path, *settings: str, spider: str = "deepweb") -> list[str]:
    """A crawl of the demo site with WARC files in ``folder`` (deepweb: with a JOBDIR there)."""
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-a", f"start_url={site}"]
    command += ["-o", str(folder / "pages.jsonl")]
    if spider == "deepweb":
        command += ["-a", f"queries={QUERIES}", "-a", "follow=1", "-s", f"JOBDIR={folder / 'job'}"]
    for setting in (
        f"WEBSIM_WARC_OUTPUT={folder / 'warc'}",
        "WEBSIM_WARC_MAX_BYTES=30000",
        f"CONCURRENT_REQUESTS={CONCURRENCY}",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}",
        "WEBSIM_ANALYSIS_MAX_PENDING=4",
        "AUTOTHROTTLE_ENABLED=0",
        "LOG_LEVEL=INFO",
        f"LOG_FILE={folder / 'crawl.log'}",
        f"WEBSIM_STATS_OUTPUT={folder / 'stats.json'}",
        *settings,
    ):
        command += ["-s", setting]
    return command


def page_urls(folder: Path) -> set[str]:
    return {str(page["url"]) for page in iter_jsonl(folder / "pages.jsonl")}


def response_paths(folder: Path) -> Counter[str]:
    """Count the response records of each path (and query) in the folder's WARC files."""
    return Counter(
        "/" + record.url.split("/", 3)[3]
        for record in read_records(folder / "warc")
        if record.type == "response"
    )


def cut_record() -> bytes:
    """The first half of a gzip member holding a WARC record: what a kill mid-write leaves."""
    member = gzip.compress(b"WARC/1.1\r\nWARC-Type: resource\r\n" + os.urandom(4000))
    return member[: len(member) // 2]


def assert_archive_sound(folder: Path, site: RecordingSite, *, kept: int) -> Counter[str]:
    """Check the WARC files: warcio passes them, each record is a fetch the server answered
    with those very bytes, and at most ``kept`` fetches (in flight at kills) are missing."""
    files = sorted((folder / "warc").glob("*.warc.gz"))
    assert files and not list((folder / "warc").glob("*" + OPEN_SUFFIX))
    checked = warcio_cli("check", *map(str, files))
    assert checked.returncode == 0, checked.stdout[-2000:]
    records = [r for r in read_records(folder / "warc") if r.type == "response"]
    for record in records:
        assert record.payload in site.sent["/" + record.url.split("/", 3)[3]]
    archived = response_paths(folder)
    sent = Counter({path: len(bodies) for path, bodies in site.sent.items()})
    assert not archived - sent  # no record without a fetch
    assert sum((sent - archived).values()) <= kept  # fetches lost: only those in flight
    return archived


@pytest.mark.slow
def test_sigkill_then_resume_keeps_every_fetch_once_and_drops_a_cut_record(
    tmp_path: Path,
) -> None:
    site = serve_recording_demo(delay=0.05)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    whole.mkdir()
    killed.mkdir()  # run_crawl does not create it
    try:
        assert run_crawl(crawl_command(site.url, whole), None, signal.SIGKILL) == 0
        expected = page_urls(whole)
        assert len(expected) > 40
        site.sent.clear()
        kills = [len(expected) // 3, 2 * len(expected) // 3]
        kept = 0
        for kill_at in kills:
            feed = killed / "pages.jsonl"

            def written_enough(feed: Path = feed, kill_at: int = kill_at) -> bool:
                return feed.exists() and feed.read_bytes().count(b"\n") >= kill_at

            command = crawl_command(site.url, killed)
            assert run_crawl(command, written_enough, signal.SIGKILL) == -signal.SIGKILL
            kept += in_flight_in_frontier(killed)
            # The kill may have cut a record itself; this one surely is.
            (left_open,) = (killed / "warc").glob("*" + OPEN_SUFFIX)
            with open(left_open, "ab") as handle:
                handle.write(cut_record())
        assert run_crawl(crawl_command(site.url, killed), None, signal.SIGKILL) == 0
    finally:
        site.stop()
    log = (killed / "crawl.log").read_text(encoding="utf-8")
    assert "a cut last record of 2" in log  # the cut record of the last kill, found and dropped
    stats = json.loads((killed / "stats.json").read_text(encoding="utf-8"))
    assert stats["websim/warc/truncated_dropped"] == 1
    assert stats["websim/warc/recovered_files"] == 1
    archived = assert_archive_sound(killed, site, kept=kept)
    # Every page is in the WARC files; a page is there twice only if it was in flight at a kill.
    assert {site.url.rstrip("/") + path for path in archived} >= expected
    repeats = sum(count - 1 for path, count in archived.items() if path not in PER_RUN)
    assert repeats <= kept, (repeats, kept)
    assert all(archived[path] <= 3 for path in PER_RUN)  # once per run


def site_crawl(
    site: str, folder: Path, *settings: str, spider: str = "deepweb"
) -> subprocess.CompletedProcess[str]:
    """Run the crawl with the test helpers importable (``tests/`` on ``PYTHONPATH``)."""
    folder.mkdir(exist_ok=True)
    environment = dict(
        os.environ,
        SCRAPY_SETTINGS_MODULE="websim_crawler.settings",
        PYTHONPATH=os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
    )
    return subprocess.run(
        crawl_command(site, folder, *settings, spider=spider),
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


FULL_DISK = (
    "DOWNLOADER_MIDDLEWARES="
    + json.dumps(
        {
            "websim_crawler.archive.middleware.WarcWriterMiddleware": None,
            "support.warc_runs.FullDiskWarcMiddleware": 890,
        }
    ),
    "FULL_DISK_AFTER_CAPTURES=12",
)


def assert_stopped_by_the_full_disk(done: subprocess.CompletedProcess[str], folder: Path) -> None:
    assert done.returncode == 1, done.stderr[-3000:]
    assert "the WARC files could not be written" in done.stderr
    log = (folder / "crawl.log").read_text(encoding="utf-8")
    assert "'finish_reason': 'warc_write_failed'" in log and "Traceback" not in log
    stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
    assert stats["websim/warc/write_failed"] == 1
    assert stats["websim/feed/requests_kept"] >= 1


@pytest.mark.slow
def test_a_full_warc_disk_stops_the_crawl_and_the_resumed_crawl_archives_the_rest(
    tmp_path: Path,
) -> None:
    site = serve_recording_demo(delay=0.02)
    whole, failed = tmp_path / "whole", tmp_path / "failed"
    try:
        assert site_crawl(site.url, whole).returncode == 0
        expected = page_urls(whole)
        site.sent.clear()
        assert_stopped_by_the_full_disk(site_crawl(site.url, failed, *FULL_DISK), failed)
        done = site_crawl(site.url, failed)
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        site.stop()
    archived = assert_archive_sound(failed, site, kept=CONCURRENCY * 4)
    assert {site.url.rstrip("/") + path for path in archived} >= expected


@pytest.mark.slow
def test_a_redis_worker_after_a_full_warc_disk_archives_the_rest(
    redis_url: str, tmp_path: Path
) -> None:
    site = serve_recording_demo(delay=0.02)
    prefix = "warcfull"
    whole, first, second = tmp_path / "whole", tmp_path / "first", tmp_path / "second"
    worker = (
        f"WEBSIM_REDIS_URL={redis_url}",
        f"WEBSIM_REDIS_PREFIX={prefix}",
        "WEBSIM_REDIS_MAX_IDLE=2",
        "WEBSIM_REDIS_POLL_INTERVAL=0.2",
    )
    try:
        assert site_crawl(site.url, whole, spider="site").returncode == 0
        expected = page_urls(whole)
        site.sent.clear()
        assert main(["seed", "site", site.url, "--redis", redis_url, "--prefix", prefix]) == 0
        assert_stopped_by_the_full_disk(
            site_crawl(site.url, first, *worker, *FULL_DISK, spider="site"), first
        )
        # The second worker writes beside the first one's files: it repairs the file left open.
        warc = f"WEBSIM_WARC_OUTPUT={first / 'warc'}"
        done = site_crawl(site.url, second, *worker, warc, spider="site")
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        site.stop()
    archived = assert_archive_sound(first, site, kept=CONCURRENCY * 4)
    assert {site.url.rstrip("/") + path for path in archived} >= expected
