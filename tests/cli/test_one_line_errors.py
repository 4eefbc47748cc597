"""A user's mistake costs one line and a nonzero exit code, never a traceback or a lost crawl.

Each test runs what a user runs (``scrapy crawl``, ``websim demo``) in a subprocess: a feed path
that cannot be written, a feed write that fails mid-crawl, a misspelt spider name or ``-a``
argument, a bad ``websim demo -o``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from websim_crawler.demo.site import DemoSite

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, **kwargs
    )


def scrapy_crawl(*arguments: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "scrapy", "crawl", *arguments], REPO, **kwargs)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " ERROR: " in line]


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with DemoSite() as site:
        yield site.url


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder nobody can create files in: read-only for a user, ``/proc`` for root."""
    if os.geteuid() == 0:
        return Path("/proc")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


@pytest.mark.parametrize("mistake", ["proc", "folder", "unwritable", "missing_root"])
def test_a_feed_path_that_cannot_be_written_stops_the_crawl_before_any_request(
    mistake: str, tmp_path: Path
) -> None:
    path, expected = {
        "proc": ("/proc/x/x.jsonl", "cannot write /proc/x/x.jsonl: cannot create its folder"),
        "folder": (str(tmp_path), f"{tmp_path} is a folder: give a file name"),
        "unwritable": (
            str(unwritable_folder(tmp_path) / "x.jsonl"),
            f"cannot write {unwritable_folder(tmp_path) / 'x.jsonl'}:",
        ),
        "missing_root": (
            str(tmp_path / "missing" / "sub" / "c.json"),
            f"the folder {tmp_path / 'missing'} does not exist",
        ),
    }[mistake]
    # Port 9 (discard) would refuse: a request made at all would show as a failure line.
    start = "start_url=http://127.0.0.1:9/"
    finished = scrapy_crawl("site", "-a", start, "-O", f"{path}:jsonlines", "-s", "LOG_LEVEL=INFO")
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    [line] = error_lines(finished.stderr)
    assert "[websim_crawler] ERROR: OutputPathError: " in line and expected in line, line
    assert "Spider opened" not in finished.stderr  # stopped before crawling
    assert not (tmp_path / "missing").exists()  # no folder made above the file's own


@pytest.mark.parametrize("leasing", ["JOBDIR", "none"])
def test_a_compressed_feed_is_refused_where_a_kill_could_lose_its_buffer(
    leasing: str, demo_site: str, tmp_path: Path
) -> None:
    feed = tmp_path / "pages.jsonl.gz"
    gzip_feed = {
        "format": "jsonlines",
        "postprocessing": ["scrapy.extensions.postprocessing.GzipPlugin"],
    }
    arguments = ["site", "-a", f"start_url={demo_site}", "-a", "max_pages=2"]
    arguments += ["-s", "FEEDS=" + json.dumps({str(feed): gzip_feed})]
    if leasing == "JOBDIR":
        arguments += ["-s", f"JOBDIR={tmp_path / 'job'}"]
    finished = scrapy_crawl(*arguments)
    if leasing == "JOBDIR":  # a resumable crawl: its items must not wait in a buffer
        assert finished.returncode == 1
        [line] = error_lines(finished.stderr)
        assert "OutputPathError: the feed " in line and "is post-processed" in line, line
        assert "Spider opened" not in finished.stderr and not feed.exists()
    else:  # nothing to resume: Scrapy's compressed feed as it is
        assert finished.returncode == 0, finished.stderr[-2000:]
        assert feed.read_bytes()[:2] == b"\x1f\x8b"


def test_the_feed_file_own_folder_is_created_when_its_parent_exists(
    demo_site: str, tmp_path: Path
) -> None:
    feed = tmp_path / "new" / "pages.jsonl"
    finished = scrapy_crawl(
        "site", "-a", f"start_url={demo_site}", "-a", "max_pages=2", "-O", str(feed)
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert len(feed.read_text().splitlines()) == 2


def limit_file_size() -> None:
    """In the crawl's process: files may not grow past 40 kB (as a full disk would refuse)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))


def test_a_feed_write_that_fails_mid_crawl_stops_it_with_one_line_and_exit_1(
    demo_site: str, tmp_path: Path
) -> None:
    feed = tmp_path / "pages.jsonl"
    arguments = ["deepweb", "-a", f"start_url={demo_site}", "-a", "queries=bread,bees,stars"]
    arguments += ["-a", "follow=1", "-O", str(feed), "-s", "LOG_LEVEL=INFO"]
    arguments += ["-s", "WEBSIM_ANALYSIS_WORKERS=0"]  # the workers' own files stay small anyway
    finished = scrapy_crawl(*arguments, preexec_fn=limit_file_size)
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    [line] = error_lines(finished.stderr)
    assert f"cannot write the feed {feed}: File too large; stopping the crawl" in line
    assert finished.stderr.strip().splitlines()[-1] == (
        "scrapy crawl deepweb: a feed could not be written and the crawl was stopped "
        "(the error above names the feed) (finish reason feed_write_failed)"
    )
    lines = feed.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) > 2  # items up to the failure, none cut short
    assert all(json.loads(text)["url"] for text in lines[:-1])
    assert (tmp_path / "pages.jsonl.incomplete").exists()  # the feed says it is not whole


def test_a_misspelt_spider_name_is_one_line_with_the_nearest_name() -> None:
    finished = scrapy_crawl("deepwb")
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    assert finished.stderr.strip().splitlines()[-1] == (
        "scrapy crawl: no spider named 'deepwb' (did you mean deepweb?); "
        "the spiders: compare, deepweb, site"
    )


@pytest.mark.parametrize(
    ("arguments", "nearest"),
    [
        (["deepweb", "-a", "queries=x", "-a", "folow=1"], "follow"),
        (["site", "-a", "max_page=3"], "max_pages"),
    ],
)
def test_an_unknown_spider_argument_is_one_line_with_the_nearest_one(
    arguments: list[str], nearest: str, tmp_path: Path
) -> None:
    start = "start_url=http://127.0.0.1:9/"
    finished = scrapy_crawl(*arguments, "-a", start, "-O", str(tmp_path / "p.jsonl"))
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    [line] = error_lines(finished.stderr)
    spider, name = arguments[0], arguments[-1].split("=")[0]
    assert f"ConfigError: {spider}: unknown argument -a {name} (did you mean {nearest}?)" in line
    assert not (tmp_path / "p.jsonl").exists()


def websim(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "websim_crawler", *arguments], cwd)


def test_websim_demo_refuses_an_output_it_cannot_use_in_one_line(tmp_path: Path) -> None:
    existing = tmp_path / "notes.txt"
    existing.write_text("mine")
    cases = {
        "/proc/x": "websim demo: error: cannot write /proc/x/pages.jsonl: cannot create its folder",
        str(existing): f"websim demo: error: -o {existing} is a file: give a folder",
        str(tmp_path / "missing" / "out"): f"the folder {tmp_path / 'missing'} does not exist",
    }
    for output, expected in cases.items():
        finished = websim("demo", "-o", output, cwd=tmp_path)
        assert finished.returncode == 2
        assert finished.stdout == ""
        [line] = finished.stderr.splitlines()
        assert expected in line
    assert existing.read_text() == "mine" and not (tmp_path / "missing").exists()


def test_the_demo_log_holds_one_run(tmp_path: Path) -> None:
    for _run in range(2):
        finished = websim("demo", "-o", "out", cwd=tmp_path)
        assert finished.returncode == 0, finished.stderr[-2000:]
    log = (tmp_path / "out" / "crawl.log").read_text()
    assert log.count("Spider opened") == 1
