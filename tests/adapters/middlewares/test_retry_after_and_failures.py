"""A crawl of a misbehaving server finishes, counts every failure by reason, stays small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from support.fault_server import ARRIVING, FAILING, GOOD, FaultServer
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.python.failure import Failure

from websim_crawler.core.io import iter_jsonl
from websim_crawler.middlewares.retry_after import failure_reason, retry_after_seconds

REPO = Path(__file__).resolve().parents[3]
PEAK_RSS_LIMIT_MB = 450  # a crawl's own baseline is about 150 MB; one 50 MB body would show
PEAK_RSS_WRAPPER = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def failure_of(error: BaseException) -> Failure:
    try:
        raise error
    except BaseException:
        return Failure()


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Mon, 30 Nov 2026 12:01:30 GMT", now) == 90.0
    assert retry_after_seconds("Mon, 30 Nov 2026 11:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_failure_reasons_are_short_slugs() -> None:
    response = Response("http://a.org/", status=503, request=Request("http://a.org/"))
    assert failure_reason(failure_of(HttpError(response, "503"))) == "http_503"
    assert failure_reason(failure_of(TxTimeoutError())) == "timeout"
    assert failure_reason(failure_of(IgnoreRequest("max redirections reached"))) == (
        "redirect_loop"
    )
    assert failure_reason(failure_of(IgnoreRequest("Forbidden by robots.txt"))) == "robots_txt"
    assert failure_reason(failure_of(IgnoreRequest("something else"))) == "ignored"
    assert failure_reason(failure_of(ConnectionResetError())) == "connection_reset"
    assert failure_reason(failure_of(KeyError("x"))) == "key"


@pytest.mark.slow
def test_crawl_of_a_faulty_server_finishes_and_counts_every_failure(tmp_path: Path) -> None:
    pages, stats_path = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    settings = {
        "DOWNLOAD_TIMEOUT": "4",  # generous: a loaded CI machine must not time out good pages
        "AUTOTHROTTLE_ENABLED": "0",
        "RETRY_TIMES": "1",
        "WEBSIM_STATS_OUTPUT": str(stats_path),
        "LOG_FILE": str(tmp_path / "crawl.log"),
    }
    with FaultServer(timeout_seconds=12.0) as server:
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a"]
        command += [f"start_url={server.url}", "-O", str(pages)]
        for name, value in settings.items():
            command += ["-s", f"{name}={value}"]
        environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
        # Linux carries a parent's peak RSS over fork and exec into the child's ru_maxrss, so a
        # fat pytest process would inflate the crawl's figure: measure from a small process.
        peak_file = tmp_path / "peak_rss_kb"
        process = subprocess.run(
            [sys.executable, "-c", PEAK_RSS_WRAPPER, str(peak_file), *command],
            cwd=REPO,
            env=environment,
            check=False,
        )
    assert process.returncode == 0
    peak_rss_mb = int(peak_file.read_text()) / 1024
    assert peak_rss_mb < PEAK_RSS_LIMIT_MB, f"peak RSS {peak_rss_mb:.0f} MB"

    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    assert stats["finish_reason"] == "finished"
    assert not any(key.startswith("spider_exceptions") for key in stats), stats
    failed = {
        key.removeprefix("websim/pages/failed/"): value
        for key, value in stats.items()
        if key.startswith("websim/pages/failed/")
    }
    assert failed == dict(Counter(FAILING.values()))
    assert stats["websim/retry_after/waited"] == 1  # /fault/503, retried once after 1 s
    assert stats["websim/retry_after/too_long"] == 1  # /fault/503-long asks for an hour

    records = {
        str(record["url"]).removeprefix(server.url.rstrip("/")): record
        for record in iter_jsonl(pages)
    }
    assert set(GOOD) <= set(records)
    assert "/slow" in records and "/bad/charset" in records and "/bad/truncated-html" in records
    charset_text = records["/bad/charset"]["main_text"]  # cp1252 bytes declared as utf-8
    assert "la carte" in charset_text and "\ufffd" not in charset_text  # re-decoded, not mangled
    assert "pages end mid tag" in records["/bad/truncated-html"]["main_text"]
    assert "/bad/image-type" in records  # Scrapy sniffs HTML under a wrong Content-Type
    assert stats["websim/pages/dropped/binary"] == 1  # binary bytes served as text/html
    # Every link of the index is accounted for: kept, dropped or failed by reason.
    accounted = len(records) - 1 + stats["websim/pages/dropped/binary"] + sum(failed.values())
    assert accounted == len(FAILING) + len(ARRIVING) + len(GOOD)
