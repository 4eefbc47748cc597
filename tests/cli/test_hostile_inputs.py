"""Hostile inputs outside the crawl: slow servers, FIFOs named like pages (all on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from websim_crawler.cli import main
from websim_crawler.cli._inputs import find_inputs
from websim_crawler.cli._sources import read_page
from websim_crawler.config import WebsimConfig
from websim_crawler.errors import PageError

TRICKLE_BYTES = 100
TRICKLE_PAUSE = 0.05  # 5 s for the whole body, each read well within a 1 s socket timeout


class _Trickle(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(TRICKLE_BYTES))
        self.end_headers()
        try:
            for _ in range(TRICKLE_BYTES):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(TRICKLE_PAUSE)
        except OSError:
            return  # the client gave up

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def trickle_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/slow.html"
    server.shutdown()
    server.server_close()


def test_a_fetch_has_a_deadline_for_the_whole_response(trickle_url: str) -> None:
    """One byte every 50 ms never trips a per-read timeout; the whole-response deadline does."""
    config = WebsimConfig.from_settings({"WEBSIM_FETCH_TIMEOUT": 1.0})
    with pytest.raises(PageError) as raised:
        read_page(trickle_url, config)
    assert raised.value.reason == "unreachable"
    assert "no complete response within 1 s (WEBSIM_FETCH_TIMEOUT)" in str(raised.value)


def test_extract_of_a_trickling_url_ends_with_a_one_line_error(
    trickle_url: str, capsys: Any
) -> None:
    assert main(["extract", trickle_url, "-s", "WEBSIM_FETCH_TIMEOUT=1"]) == 2
    err = capsys.readouterr().err
    assert "WEBSIM_FETCH_TIMEOUT" in err and "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX feature")
def test_a_fifo_named_like_a_page_is_counted_not_read(tmp_path: Path, capsys: Any) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "a.html").write_text("<html><body><p>" + "Lava flows slowly. " * 30 + "</p>")
    os.mkfifo(pages / "x.html")  # opening it for reading would block until a writer comes
    found = find_inputs([str(pages)], WebsimConfig.from_settings({}))
    assert found.sources == [(str(pages / "a.html"), "html")] and found.not_regular == 1
    output = tmp_path / "out.jsonl"
    assert main(["extract", str(pages), "-o", str(output), "--workers", "0"]) == 1
    err = capsys.readouterr().err
    assert "1 FIFO, socket or device file(s) in folders not read" in err
    assert [json.loads(line)["url"] for line in output.read_text().splitlines()] == [
        (pages / "a.html").as_uri()
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl", "pages"]  # no .tmp
    with pytest.raises(PageError, match="not a regular file"):
        read_page(str(pages / "x.html"), WebsimConfig.from_settings({}))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["cluster", "similar", "neardup"])
def test_feed_commands_analyse_pages_in_workers_with_the_crawls_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, command: str
) -> None:
    """A page whose analysis never ends or needs gigabytes is dropped by the per-page budget
    (the workers are forked from this process, so they run the patched analysis)."""
    import websim_crawler.core.stages as stages

    real_preparation = stages.prepare_record

    def hostile_preparation(record: Any, plan: Any, **options: Any) -> Any:
        if record.get("url") == "http://s.test/slow":
            time.sleep(60)
        if record.get("url") == "http://s.test/greedy":
            return bytearray(2 * 1024**3)  # 2 GB, over the 256 MB budget
        return real_preparation(record, plan, **options)

    # The workers prepare each record for the stage (analysing pages without keywords there).
    monkeypatch.setattr(stages, "prepare_record", hostile_preparation)
    text = "<html lang='en'><body><p>" + "Lava flows slowly down the volcano. " * 20
    records = [{"url": f"http://s.test/{n}", "html": text + f"magma {n}</p>"} for n in range(3)]
    records += [{"url": f"http://s.test/{name}", "html": text} for name in ("slow", "greedy")]
    feed = tmp_path / "f.jsonl"
    feed.write_text("".join(json.dumps(record) + "\n" for record in records))
    output = tmp_path / "out.json"
    budget = ["-s", "WEBSIM_ANALYSIS_TIMEOUT=0.25", "-s", "WEBSIM_WORKER_MEMORY_MB=256"]
    assert main([command, str(feed), "-o", str(output), "--no-progress", *budget]) == 1
    assert "2 page(s) could not be analysed" in capsys.readouterr().err
    report = json.loads(output.read_text())
    if command == "cluster":
        skipped = report["input"]["skipped"]
    elif command == "neardup":
        skipped = {
            f"analysis_{reason.removeprefix('analysis_')}": count
            for reason, count in report["stats"]["pages"]["dropped"].items()
        }
        assert report["stats"]["pages"]["indexed"] == 3
    else:
        skipped = report["skipped_pages"]
        assert report["pages"] == 3  # the three pages within the budget are compared
    assert skipped["analysis_timeout"] == 1 and skipped["analysis_too_large"] == 1


def test_compare_runs_in_a_worker_with_a_pages_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Features and stages of ``websim compare`` run in a budgeted worker: a page whose
    features never end is one line and exit 2, not a command that runs forever."""
    import websim_crawler.core.similarity.comparison as comparison

    def endless_features(*args: Any, **kwargs: Any) -> Any:
        time.sleep(60)

    pages = []
    for name in ("a", "b"):
        page = tmp_path / f"{name}.html"
        page.write_text("<html><body><p>" + "Lava flows slowly. " * 20 + "</p>")
        pages.append(str(page))
    assert main(["compare", *pages]) in (0, 1)  # unpatched: a verdict
    capsys.readouterr()
    monkeypatch.setattr(comparison, "page_features", endless_features)  # the worker is forked
    assert main(["compare", *pages, "-s", "WEBSIM_ANALYSIS_TIMEOUT=0.25"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "WEBSIM_ANALYSIS_TIMEOUT" in err[0] and "Traceback" not in err[0]
