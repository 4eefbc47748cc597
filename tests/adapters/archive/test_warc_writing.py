"""A crawl with ``-a warc=FOLDER`` keeps every response it fetched, as sent, in WARC/1.1 files
that warcio checks and indexes; the files rotate by size, sort by name, and a file a kill left
open is cut back to its last whole record by the next run."""

from __future__ import annotations

import base64
import fcntl
import gzip
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import FormRequest, Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from support.crawl_runs import QUERIES
from support.warc_runs import (
    RecordingSite,
    read_records,
    serve_recording_demo,
    sha1_base32,
    stats_of,
    warcio_cli,
)

from websim_crawler._imports import available
from websim_crawler.archive.middleware import WarcWriterMiddleware, capture_of
from websim_crawler.archive.writer import WarcWriterThread, Written, serialise
from websim_crawler.config import RenderParams, WebsimConfig
from websim_crawler.core.archive.files import OPEN_SUFFIX, recover_folder, whole_members_end
from websim_crawler.core.archive.records import Capture
from websim_crawler.core.io import iter_jsonl
from websim_crawler.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
MAX_BYTES = 12_000  # a few pages a file: the crawl rotates many times


def deepweb_crawl(site: str, folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """Crawl the demo site with deepweb, its WARC files in ``folder/warc``."""
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site}"]
    command += ["-a", f"queries={QUERIES}", "-a", "follow=1", "-O", str(folder / "pages.jsonl")]
    command += [*options]
    for setting in (
        "AUTOTHROTTLE_ENABLED=0",
        "CONCURRENT_REQUESTS=4",
        "WEBSIM_ANALYSIS_WORKERS=0",
        f"WEBSIM_STATS_OUTPUT={folder / 'stats.json'}",
        "LOG_LEVEL=INFO",
        f"LOG_FILE={folder / 'crawl.log'}",
    ):
        command += ["-s", setting]
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def site() -> Iterator[RecordingSite]:
    recording = serve_recording_demo()
    yield recording
    recording.stop()


@pytest.fixture(scope="module")
def crawled(site: RecordingSite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One crawl of the demo site with its WARC files (``-a warc=``, rotated every 12 kB)."""
    folder = tmp_path_factory.mktemp("warc-crawl")
    options = ["-a", f"warc={folder / 'warc'}", "-s", f"WEBSIM_WARC_MAX_BYTES={MAX_BYTES}"]
    done = deepweb_crawl(site.url, folder, *options)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


@pytest.mark.slow
def test_warcio_checks_and_indexes_every_file(crawled: Path) -> None:
    files = sorted((crawled / "warc").glob("*.warc.gz"))
    assert len(files) >= 3
    checked = warcio_cli("check", "-v", *map(str, files))
    assert checked.returncode == 0, checked.stdout[-2000:]
    assert "digest pass" in checked.stdout and "fail" not in checked.stdout
    index = warcio_cli("index", "-f", "warc-type,warc-target-uri,offset", *map(str, files))
    assert index.returncode == 0
    entries = [json.loads(line) for line in index.stdout.splitlines()]
    assert Counter(entry["warc-type"] for entry in entries)["warcinfo"] == len(files)
    assert not list((crawled / "warc").glob("*" + OPEN_SUFFIX))  # every file completed


@pytest.mark.slow
def test_every_fetch_has_one_response_record_with_the_bytes_the_server_sent(
    site: RecordingSite, crawled: Path
) -> None:
    records = read_records(crawled / "warc")
    responses = [record for record in records if record.type == "response"]
    by_target: dict[str, list[bytes]] = {}
    for record in responses:
        path = record.url.split("/", 3)[3]
        by_target.setdefault("/" + path, []).append(record.payload)
    # Each body the server sent is in the WARC files once per fetch, as sent: still gzipped.
    assert {path: sorted(bodies) for path, bodies in by_target.items()} == {
        path: sorted(bodies) for path, bodies in site.sent.items()
    }
    pages = {str(page["url"]) for page in iter_jsonl(crawled / "pages.jsonl")}
    assert len(pages) > 40 and pages <= {record.url for record in responses}
    for record in responses:
        assert record.http_headers["Content-Encoding"] == "gzip"
        if record.http_headers["Content-Type"].startswith("text/html"):
            assert b"</html>" in gzip.decompress(record.payload)
        assert record.warc_headers["WARC-Payload-Digest"] == sha1_base32(record.payload)
    # Each response has its request, concurrent to it.
    requests = {
        record.warc_headers["WARC-Concurrent-To"]: record
        for record in records
        if record.type == "request"
    }
    for record in responses:
        request = requests[record.warc_headers["WARC-Record-ID"]]
        assert request.url == record.url
        assert request.http_headers["User-Agent"].startswith("websim-crawler/")


@pytest.mark.slow
def test_files_rotate_by_size_and_sort_in_writing_order(crawled: Path) -> None:
    files = sorted((crawled / "warc").glob("*.warc.gz"))
    records = read_records(crawled / "warc")
    starts = [record for record in records if record.type == "warcinfo"]
    assert [record.file for record in starts] == [path.name for path in files]
    dates = [record.warc_headers["WARC-Date"] for record in records if record.type != "warcinfo"]
    assert dates == sorted(dates)  # names sort in the order the records were written
    largest_capture = max(len(record.payload) for record in records) * 2 + 4096
    for path in files[:-1]:
        assert MAX_BYTES <= path.stat().st_size < MAX_BYTES + largest_capture
    info = starts[0].payload.decode("utf-8")
    assert "software: websim-crawler/" in info and "Scrapy" in info
    assert '"WEBSIM_WARC_MAX_BYTES": 12000' in info and "isPartOf: deepweb" in info
    stats = stats_of(crawled / "stats.json")
    assert stats["websim/warc/files"] == len(files)
    assert stats["websim/warc/records"] == len(records)
    assert stats["websim/warc/bytes"] == sum(path.stat().st_size for path in files)


PLAIN_SPIDER = """
import scrapy


class Plain(scrapy.Spider):
    name = "plain"

    def __init__(self, start_url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response):
        yield {"url": response.url}
"""


@pytest.mark.slow
def test_any_scrapy_project_with_the_addon_writes_warc(site: RecordingSite, tmp_path: Path) -> None:
    """A spider that is not the project's, in no project, with only the add-on and the setting."""
    (tmp_path / "plain.py").write_text(PLAIN_SPIDER, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "runspider",
        "plain.py",
        "-a",
        "start_url=" + site.url,
    ]
    command += ["-s", 'ADDONS={"websim_crawler.addon.WebsimAddon": 0}', "-s", "LOG_LEVEL=INFO"]
    command += ["-s", f"WEBSIM_WARC_OUTPUT={tmp_path / 'warc'}", "-s", "ROBOTSTXT_OBEY=0"]
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    done = subprocess.run(
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = read_records(tmp_path / "warc")
    assert [(record.type, record.url) for record in records[1:]] == [
        ("response", site.url),
        ("request", site.url),
    ]
    assert records[0].type == "warcinfo" and "isPartOf: plain" in records[0].payload.decode()


def pywb_bin() -> Path | None:
    """Return the folder of pywb's ``wayback`` and ``wb-manager`` (``$PYWB_BIN``, the Makefile's
    ``.venv-pywb``, or ``PATH``), or ``None``."""
    folders = [os.environ.get("PYWB_BIN"), str(REPO / ".venv-pywb" / "bin")]
    found = shutil.which("wayback")
    folders.append(str(Path(found).parent) if found else None)
    for folder in filter(None, folders):
        if all((Path(folder) / tool).exists() for tool in ("wayback", "wb-manager")):
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def replayed(port: int, url: str) -> bytes:
    """Fetch ``url`` from pywb's replay as it was archived (``id_``: not rewritten)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/coll/id_/{url}", timeout=60) as answer:
        body = answer.read()
        return gzip.decompress(body) if answer.headers.get("Content-Encoding") == "gzip" else body


@pytest.mark.slow
@pytest.mark.skipif(
    pywb_bin() is None,
    reason="pywb is not installed: make .venv-pywb/bin/wayback (pywb pins redis==2.10.6, which "
    "the [distributed] extra's redis>=5 excludes, so it has a virtualenv of its own)",
)
def test_pywb_replays_crawled_pages_with_the_bodies_the_server_sent(
    site: RecordingSite, crawled: Path, tmp_path: Path
) -> None:
    tools = pywb_bin()
    assert tools is not None
    files = sorted(str(path) for path in (crawled / "warc").glob("*.warc.gz"))
    for command in (["init", "coll"], ["add", "coll", *files]):
        subprocess.run([tools / "wb-manager", *command], cwd=tmp_path, check=True, timeout=300)
    port = free_port()
    wayback = [tools / "wayback", "-p", str(port), "-b", "127.0.0.1"]
    server = subprocess.Popen(wayback, cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        pages = sorted(path for path in site.sent if path.startswith(("/record/", "/search?")))
        assert len(pages) > 20
        for path in pages[:: len(pages) // 5]:
            (sent,) = site.sent[path]
            assert replayed(port, site.url + path.lstrip("/")) == gzip.decompress(sent)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.access(RenderParams().chromium_path, os.X_OK) and available("scrapy_playwright")),
    reason="chromium or scrapy-playwright is not installed",
)
def test_rendered_pages_keep_their_dom_and_screenshot_linked_to_each_other(
    tmp_path: Path,
) -> None:
    site = serve_recording_demo()  # its own: the browser's fetches are not the crawl's
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={site.url}"]
    command += ["-a", "max_pages=3", "-a", "render=1", "-a", f"warc={tmp_path / 'warc'}"]
    command += ["-O", str(tmp_path / "pages.jsonl"), "-s", "WEBSIM_RENDER_SCREENSHOT=1"]
    command += ["-s", "AUTOTHROTTLE_ENABLED=0", "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"]
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    try:
        done = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, timeout=300)
    finally:
        site.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    files = [str(path) for path in (tmp_path / "warc").glob("*.warc.gz")]
    assert warcio_cli("check", *files).returncode == 0
    records = read_records(tmp_path / "warc")
    by_id = {record.warc_headers["WARC-Record-ID"]: record for record in records}
    doms = {record.url: record for record in records if record.type == "resource"}
    pages = list(iter_jsonl(tmp_path / "pages.jsonl"))
    assert len(pages) == 3 and {page["url"] for page in pages} == set(doms)
    for page in pages:
        dom = doms[str(page["url"])]
        assert dom.payload == str(page["html"]).encode("utf-8")
        assert dom.warc_headers["Content-Type"] == "text/html; charset=utf-8"
        (shot,) = [r for r in records if r.type == "conversion" and r.url == page["url"]]
        assert by_id[shot.warc_headers["WARC-Refers-To"]] is dom
        assert shot.payload == base64.b64decode(str(page["screenshot"]))
        assert shot.payload.startswith(b"\x89PNG")
        (seen,) = [r for r in records if r.type == "metadata" and r.url == page["url"]]
        assert by_id[seen.warc_headers["WARC-Concurrent-To"]] is dom
        assert seen.payload.startswith(b"http-status: 200\r\n")


def capture(number: int, body: bytes = b"<html>page</html>") -> Capture:
    return Capture(
        url=f"http://127.0.0.1/{number}",
        method="GET",
        request_target=f"/{number}",
        request_headers=((b"Host", b"127.0.0.1"),),
        request_body=b"",
        protocol="HTTP/1.1",
        status=200,
        response_headers=((b"Content-Type", b"text/html"), (b"Transfer-Encoding", b"chunked")),
        body=body,
        date="2026-12-03T00:00:00.000000Z",
    )


def write_captures(folder: Path, count: int) -> list[Written]:
    """Write ``count`` captures with the writer thread; return what it reported."""
    written: list[Written] = []
    writer = WarcWriterThread(folder, "test", 1 << 30, {"software": "test"}, written.append, _fail)
    for number in range(count):
        writer.submit(capture(number, os.urandom(3000)))
    writer.close()
    return written


def _fail(error: OSError) -> None:
    raise AssertionError(error)


def test_writer_reports_durable_groups_and_drops_chunked_framing(tmp_path: Path) -> None:
    written = write_captures(tmp_path, 30)
    assert written[-1].sequence == 30 and sum(item.records for item in written) == 61
    records = read_records(tmp_path)
    assert [record.type for record in records[:3]] == ["warcinfo", "response", "request"]
    assert all("Transfer-Encoding" not in record.http_headers for record in records)
    assert warcio_cli("check", *map(str, tmp_path.glob("*.warc.gz"))).returncode == 0


def test_a_post_request_is_kept_with_the_headers_and_body_sent(tmp_path: Path) -> None:
    request = FormRequest("http://127.0.0.1:8000/search", formdata={"q": "honey bees"})
    response = HtmlResponse(
        request.url, body=b"<html></html>", request=request, protocol="HTTP/1.0", status=201
    )
    data, count = serialise(capture_of(request, response))
    (tmp_path / "post.warc.gz").write_bytes(data)
    assert warcio_cli("check", str(tmp_path / "post.warc.gz")).returncode == 0
    response_record, request_record = read_records(tmp_path)
    assert count == 2 and response_record.status == 201
    assert request_record.payload == b"q=honey+bees"
    assert request_record.http_headers["Content-Length"] == "12"
    assert request_record.http_headers["Host"] == "127.0.0.1:8000"


def test_a_file_cut_by_a_kill_is_truncated_to_its_last_whole_record(tmp_path: Path) -> None:
    write_captures(tmp_path, 10)
    (whole,) = tmp_path.glob("*.warc.gz")
    data = whole.read_bytes()
    with open(whole, "rb") as handle:
        records, end = whole_members_end(handle)
    assert (records, end) == (21, len(data))
    # The kill cut the 21st record (the last request) in its middle.
    cut = whole.with_name(whole.name + ".cut" + OPEN_SUFFIX)
    cut.write_bytes(data[:-1])
    with open(cut, "rb") as handle:
        assert whole_members_end(handle)[0] == 20
        members_end = whole_members_end(handle)[1]
    cut.write_bytes(data[: members_end + (len(data) - members_end) // 2])
    # A file a live writer holds (its lock taken) is left alone.
    held = whole.with_name("held" + OPEN_SUFFIX)
    held.write_bytes(data[:members_end])
    with open(held, "rb") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        (recovery,) = recover_folder(tmp_path)
    assert held.exists()
    assert recovery.records == 20 and recovery.dropped_bytes == (len(data) - members_end) // 2
    assert recovery.path is not None and recovery.path.stat().st_size == members_end
    assert not cut.exists()
    assert warcio_cli("check", str(recovery.path)).returncode == 0
    # Nothing whole (the kill came during the warcinfo record): the file is removed.
    empty = tmp_path / ("empty" + OPEN_SUFFIX)
    empty.write_bytes(data[:40])
    held.unlink()
    (recovery,) = recover_folder(tmp_path)
    assert recovery.path is None and not empty.exists()


def test_records_larger_than_a_read_are_found_whole_or_cut(tmp_path: Path) -> None:
    """Members that inflate to more than the scan's 1 MiB reads (a page of 3 MB, as real pages
    reach), cut in their middle or followed by garbage, are still told apart."""
    text = b" ".join(b"word%d" % (number % 5000) for number in range(450_000))  # 3.2 MB
    writer = WarcWriterThread(tmp_path, "big", 1 << 30, {}, lambda written: None, _fail)
    for number in range(3):
        writer.submit(capture(number, text))
    writer.close()
    (path,) = tmp_path.glob("*.warc.gz")
    data = path.read_bytes()
    assert whole_members_end(io.BytesIO(data)) == (7, len(data))
    assert whole_members_end(io.BytesIO(data + b"not gzip")) == (7, len(data))
    records, end = whole_members_end(io.BytesIO(data[: len(data) // 2]))
    assert 1 <= records < 7 and 0 < end < len(data) // 2
    assert whole_members_end(io.BytesIO(data[:end])) == (records, end)


def handed_on(coroutine: Any) -> Any:
    """Run a ``process_response`` that must return without waiting for the writer."""
    try:
        coroutine.send(None)
    except StopIteration as returned:
        return returned.value
    raise AssertionError("the response waited for the writer")


def test_responses_over_the_size_cap_or_from_the_cache_are_not_written(tmp_path: Path) -> None:
    crawler = get_crawler(
        settings_dict={"WEBSIM_WARC_OUTPUT": str(tmp_path / "warc"), "DOWNLOAD_MAXSIZE": 1000}
    )
    crawler.stats.open_spider()
    middleware = WarcWriterMiddleware.from_crawler(crawler)
    request = Request("http://127.0.0.1/big")
    big = HtmlResponse(request.url, body=b"x" * 1001, request=request)
    assert handed_on(middleware.process_response(request, big)) is big
    allowed = Request(request.url, meta={"download_maxsize": 2000})
    cached = HtmlResponse(request.url, body=b"x" * 1001, request=allowed, flags=["cached"])
    assert handed_on(middleware.process_response(allowed, cached)) is cached
    assert crawler.stats.get_value("websim/warc/skipped/too_large") == 1
    assert crawler.stats.get_value("websim/warc/skipped/cached") == 1
    assert list((tmp_path / "warc").iterdir()) == []


def test_bad_settings_name_the_setting() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_WARC_MAX_BYTES"):
        WebsimConfig.from_settings({"WEBSIM_WARC_MAX_BYTES": 0})
    config = WebsimConfig.from_settings({"WEBSIM_WARC_OUTPUT": "warcs"})
    assert config.archive.warc_output == "warcs"


@pytest.mark.slow
def test_a_folder_that_cannot_be_written_is_one_line_and_exit_1(
    site: RecordingSite, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    done = deepweb_crawl(site.url, tmp_path, "-s", f"WEBSIM_WARC_OUTPUT={tmp_path / 'a-file'}")
    assert done.returncode == 1
    assert "WEBSIM_WARC_OUTPUT" in done.stderr + (tmp_path / "crawl.log").read_text()
    assert "Traceback" not in done.stderr
