"""The end-of-crawl diagnosis through ``scrapy crawl``: chrome taken for records warns, exits 1."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from websim_crawler.core.io import iter_jsonl

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

START_PAGE = """<html><head><title>Finder</title></head><body>
<form action="/search" method="get"><input type="text" name="q"><input type="submit"></form>
</body></html>"""


def results_page(query: str, page: int) -> str:
    """A result page whose results are plain text: the one link a crawler can take is the
    page's "Save this search" link (chrome), and a next link on the first page."""
    saved = hashlib.sha1(f"{query}/{page}".encode()).hexdigest()[:10]
    following = (
        f'<p><a href="/search?q={query}&amp;page={page + 1}">Next</a></p>' if page == 1 else ""
    )
    return f"""<html><head><title>Results for {query}</title></head><body>
<h1>Results for {query}, page {page}</h1>
<p>{query} is discussed in the archive of the society, volume {page}, and in its letters.</p>
<p><a href="/saved/{saved}">Save this search</a></p>{following}
</body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        arguments = parse_qs(parts.query)
        if parts.path == "/search":
            page = int(arguments.get("page", ["1"])[0])
            body = results_page(arguments.get("q", [""])[0], page)
        elif parts.path.startswith("/saved/"):
            body = "<html><body><p>Your search was saved to your account.</p></body></html>"
        else:
            body = START_PAGE
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def chrome_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_crawl_whose_records_are_chrome_warns_and_exits_1(
    chrome_site: str, tmp_path: Path
) -> None:
    feed = tmp_path / "pages.jsonl"
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={chrome_site}"]
    command += ["-a", "queries=owls,bridges,lanterns", "-a", "follow=1", "-O", str(feed)]
    command += ["-s", "LOG_LEVEL=INFO"]
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    finished = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )
    log = finished.stderr
    assert finished.returncode == 1, log[-3000:]
    assert "no record came from a data region" in log.splitlines()[-1]
    warnings = [line for line in log.splitlines() if "WARNING" in line and "deepweb" in line]
    assert len(warnings) == 1
    assert "page chrome" in warnings[0]
    assert "'websim/diagnosis/no_data_region': 1" in log
    assert "'websim/diagnosis/records/from_region': 0" in log
    # The crawl itself ran: its result pages and what it took for records are in the feed.
    kinds = [page["kind"] for page in iter_jsonl(feed)]
    assert kinds.count("results") == 6
