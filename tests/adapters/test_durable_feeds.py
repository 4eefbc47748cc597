"""Durable feeds: written item by item, cut lines skipped quietly, several feeds read URL-once."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scrapy.exporters import JsonLinesItemExporter
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.core.io import (
    ReadReport,
    feed_writer,
    incomplete_marker,
    iter_feeds,
    iter_jsonl,
    open_feed,
)
from websim_crawler.feeds import DurableFileFeedStorage, OrjsonLinesItemExporter

REPO = Path(__file__).resolve().parents[2]


def test_a_cut_last_line_is_skipped_quietly_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    feed = tmp_path / "pages.jsonl"
    feed.write_text('{"url": "a"}\nnot json\n{"url": "b"}\n{"url": "c", "ht', encoding="utf-8")
    report = ReadReport()
    with caplog.at_level(logging.INFO, logger="websim_crawler.core.io"):
        urls = [record["url"] for record in iter_jsonl(feed, report)]
    assert urls == ["a", "b"] and report.records == 2
    assert report.skipped == {"invalid_json": 1, "cut_last_line": 1}
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [f"{feed}:2: not valid JSON, line skipped"]


def test_appending_removes_a_cut_last_line_first(tmp_path: Path) -> None:
    feed = tmp_path / "pages.jsonl"
    feed.write_bytes(b'{"url": "a"}\n{"url": "b", "html": "<p>cut here')
    with open_feed(feed, overwrite=False, fsync=False, lines=True) as handle:
        handle.write(b'{"url": "c"}\n')
    assert feed.read_bytes() == b'{"url": "a"}\n{"url": "c"}\n'
    whole = b"x" * 70_000  # a cut line longer than one read block, and no newline at all
    feed.write_bytes(whole)
    with open_feed(feed, overwrite=False, fsync=False, lines=True) as handle:
        handle.write(b'{"url": "d"}\n')
    assert feed.read_bytes() == b'{"url": "d"}\n'


def test_feed_storage_writes_each_item_through_and_marks_the_feed_until_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = tmp_path / "out.jsonl"
    feed.write_bytes(b'{"url": "old"}\n')
    synced: list[int] = []
    monkeypatch.setattr(feed_writer.os, "fsync", lambda descriptor: synced.append(descriptor))
    crawler = get_crawler(settings_dict={"WEBSIM_FEED_FSYNC": True})
    options: dict[str, Any] = {"format": "jsonlines", "overwrite": True}
    storage = build_from_crawler(DurableFileFeedStorage, crawler, str(feed), feed_options=options)
    assert feed.read_bytes() == b'{"url": "old"}\n'  # -O: the old feed stays until opened
    handle = storage.open(None)  # type: ignore[arg-type]
    assert incomplete_marker(feed).exists()
    handle.write(b'{"url": "new"}\n')
    assert feed.read_bytes() == b'{"url": "new"}\n'  # on disk without a flush or a close
    assert len(synced) == 1
    storage.store(handle)
    assert not incomplete_marker(feed).exists()
    report = ReadReport()
    assert [r["url"] for r in iter_jsonl(feed, report)] == ["new"]
    assert report.incomplete_feeds == []


def page(number: int, topic: str) -> dict[str, Any]:
    """A page record as a crawl writes it (url, kind, html)."""
    sentences = " ".join(
        f"<p>The {topic} field note number {number} tells how the {topic} season went, "
        f"what the volunteers measured on day {day} and why it mattered to them.</p>"
        for day in range(6)
    )
    html = (
        f"<html><head><title>{topic} {number}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<article><h1>{topic.title()} note {number}</h1>{sentences}</article></body></html>"
    )
    return {"url": f"http://s.org/{topic}/{number}", "kind": "record", "html": html}


@pytest.fixture
def two_feeds(tmp_path: Path) -> list[str]:
    """Two worker feeds; one page is in both (a request requeued after its worker died)."""
    pages = [page(number, topic) for topic in ("volcanoes", "bread") for number in range(4)]
    first, second = tmp_path / "worker-1.jsonl", tmp_path / "worker-2.jsonl"
    first.write_text("".join(json.dumps(p) + "\n" for p in pages[:5]), encoding="utf-8")
    second.write_text("".join(json.dumps(p) + "\n" for p in pages[4:]), encoding="utf-8")
    return [str(first), str(second)]


def test_iter_feeds_counts_each_url_once(two_feeds: list[str]) -> None:
    report = ReadReport()
    urls = [record["url"] for record in iter_feeds(two_feeds, report)]
    assert len(urls) == len(set(urls)) == 8
    assert report.records == 8 and report.skipped == {"duplicate_url": 1}


def test_cluster_similar_and_neardup_count_each_url_once(
    two_feeds: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    assert main(["cluster", *two_feeds, "-o", str(out), "--n-clusters", "2", "--no-progress"]) == 0
    clusters = json.loads(out.read_text(encoding="utf-8"))
    assert len(clusters["documents"]) == 8
    assert clusters["input"]["skipped"]["duplicate_url"] == 1

    assert main(["similar", *two_feeds, "-o", str(out), "--no-progress"]) == 0
    similar = json.loads(out.read_text(encoding="utf-8"))
    assert similar["pages"] == 8 and similar["skipped_lines"] == {"duplicate_url": 1}
    assert similar["all_pairs"] == 28  # 8 pages; the repeated page would make it 9 and 36

    assert main(["neardup", *two_feeds, "-o", str(out), "--no-progress", "--min-shared", "1"]) == 0
    neardup = json.loads(out.read_text(encoding="utf-8"))
    assert neardup["stats"]["input_lines_skipped"] == {"duplicate_url": 1}
    assert neardup["stats"]["pages"]["seen"] == neardup["stats"]["pages"]["indexed"] == 8


class SlowPages(BaseHTTPRequestHandler):
    """Pages /p/0 .. /p/9 linking to the next two; the first answers after 3 s, the others 0.2 s."""

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        if not self.path.startswith("/p/") or not self.path[3:].isdigit():
            self.send_error(404)
            return
        number = int(self.path[3:])
        time.sleep(3.0 if number == 0 else 0.2)
        links = "".join(f"<a href='/p/{n}'>page {n}</a>" for n in (2 * number + 1, 2 * number + 2))
        body = f"<html><body><h1>Page {number}</h1><p>Text of page {number}.</p>{links}</body>"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.slow
def test_overwriting_feed_keeps_the_old_one_until_the_first_item(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowPages)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    feed = tmp_path / "pages.jsonl"
    feed.write_bytes(b'{"url": "old"}\n')
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-O", str(feed)]
    command += ["-a", f"start_url=http://127.0.0.1:{server.server_address[1]}/p/0"]
    command += ["-s", "AUTOTHROTTLE_ENABLED=0", "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"]
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    try:
        for stop_at_lines in (0, 3):  # killed before its first item, then after three
            crawl = subprocess.Popen(command, cwd=REPO, env=environment)
            deadline = time.monotonic() + 60
            log = tmp_path / "crawl.log"
            while time.monotonic() < deadline and crawl.poll() is None:
                opened = log.exists() and "Spider opened" in log.read_text("utf-8")
                if opened and feed.read_bytes().count(b"\n") >= stop_at_lines:
                    break
                time.sleep(0.02)
            crawl.send_signal(signal.SIGKILL)
            assert crawl.wait(timeout=30) == -signal.SIGKILL
            log.unlink()
            if stop_at_lines == 0:
                assert feed.read_bytes() == b'{"url": "old"}\n'  # not yet replaced
                assert not incomplete_marker(feed).exists()
    finally:
        server.shutdown()
        server.server_close()
    report = ReadReport()
    urls = [record["url"] for record in iter_jsonl(feed, report)]
    assert len(urls) >= 3 and "old" not in urls  # replaced, every full line a page
    assert set(report.skipped) <= {"cut_last_line"}
    assert report.incomplete_feeds == [str(feed)]  # the killed crawl left its marker


@dataclasses.dataclass
class DataclassItem:
    name: str
    when: datetime.datetime


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8", None])
def test_orjson_lines_read_as_scrapys_lines(encoding: str | None) -> None:
    """Every line holds the values Scrapy's exporter writes, whatever the item holds."""
    when = datetime.datetime(2026, 12, 1, 22, 5, 14, 123456)
    items: list[Any] = [
        {"url": "http://a.test/", "html": '<p>Zürich – 東京 \u2028 \x00 "q"</p>', "n": 3},
        {"keywords": Counter({"river": 2}), "links": ("http://a.test/b",), "ids": {7}},
        {
            "when": when,
            "day": when.date(),
            "price": decimal.Decimal("1.10"),
            "by": {1: "a", None: "b", 2.5: "c"},
        },
        {"item": DataclassItem("x", when), "big": 2**70, "nested": [{"f": 0.1}, None, True]},
        DataclassItem("top", when),
    ]

    def lines(exporter_class: type[JsonLinesItemExporter]) -> list[Any]:
        file = io.BytesIO()
        exporter = exporter_class(file, encoding=encoding)
        exporter.start_exporting()
        for item in items:
            exporter.export_item(item)
        exporter.finish_exporting()
        text = file.getvalue().decode(encoding or "ascii")
        assert text.endswith("\n") and text.count("\n") == len(items)
        return [json.loads(line) for line in text.split("\n")[:-1]]

    assert lines(OrjsonLinesItemExporter) == lines(JsonLinesItemExporter)
