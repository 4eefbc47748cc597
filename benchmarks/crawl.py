"""Crawl throughput: a bare Scrapy spider vs ``scrapy crawl deepweb`` with the page analysis on.

The benchmark serves a search site on 127.0.0.1 itself: a home page with a GET search form,
result pages of ten record links with a "Next" link, and record pages that are the real pages of
``../shared/datasets/article-extraction-benchmark`` (181 news pages, 4 KB to 1.5 MB, average
174 KB; each served under two URLs by default, 362 records). Both crawlers search the same
queries, follow the result pages and fetch every record, with the same concurrency (default 4,
the project's ``CONCURRENT_REQUESTS_PER_DOMAIN``; ``--concurrency``), no
AutoThrottle and no robots.txt, and write a JSON Lines feed:

* ``bare``: a plain Scrapy spider that yields ``{url, html}`` items, no pipeline;
* ``deepweb``: the project's spider and settings with the analysis pipeline, for 0 (in the
  crawl's process), 1, 2 and 4 analysis workers and the default (the usable CPUs); with
  ``--warc`` each also with its WARC files written (``WEBSIM_WARC_OUTPUT``).

Each crawl is a subprocess; its time is Scrapy's own ``elapsed_time_seconds`` (spider open to
close, without the interpreter's start-up), and the peak resident memory of its process tree is
sampled every 0.1 s. Two rounds: (a) responses at once, (b) each response delayed 50-100 ms.
Ratios are crawl time / the bare spider's, from the same run. The machine is shared: run it
when it is quiet, and read the ratios, not the seconds.

``--reactor-per-item CHECKOUT...`` crawls round (a) with the clustering stage on once per
checkout given (a git worktree of another commit: the same crawl before and after a change) and
times the reactor thread per item: its CPU time in each item pipeline's ``process_item`` (every
step of its coroutine) and in all from the spider's opening to its closing, as
``reactor_clock.py`` (an extension the crawls run with) measures it.

Usage::

    .venv/bin/python benchmarks/crawl.py                  # both rounds, workers 0, 1, 2, 4
    .venv/bin/python benchmarks/crawl.py --copies 1 --workers 2  # 181 records, one config
    .venv/bin/python benchmarks/crawl.py --rounds a --repeat 5  # medians of 5 interleaved runs
    .venv/bin/python benchmarks/crawl.py --workers 2 --warc --repeat 3  # with and without WARC
    .venv/bin/python benchmarks/crawl.py --copies 6 --repeat 3 --reactor-per-item ../before .
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil

ROOT = Path(__file__).resolve().parents[1]
# ../shared/datasets beside the repository, or $DATASETS_DIR (a worktree elsewhere)
DATASETS = Path(os.environ.get("DATASETS_DIR") or ROOT / ".." / "shared" / "datasets")
PAGES_DIR = DATASETS / "article-extraction-benchmark" / "html"
QUERIES = ("volcano", "river", "election", "market")
RESULTS_PER_PAGE = 10
CONCURRENCY = 4  # the project's CONCURRENT_REQUESTS_PER_DOMAIN: a polite crawl of one site
_ELAPSED_RE = re.compile(r"'elapsed_time_seconds': ([0-9.]+)")
_SCRAPED_RE = re.compile(r"'item_scraped_count': (\d+)")
_CLOCK_RE = re.compile(r"'reactor_clock/(\w+)': ([0-9.e-]+)")

BARE_SPIDER = '''
import scrapy


class BareSpider(scrapy.Spider):
    """Search every query, follow the result pages, yield every record's URL and HTML."""

    name = "bare"

    async def start(self):
        yield scrapy.Request(self.start_url, callback=self.parse_home)

    def parse_home(self, response):
        action = response.urljoin(response.css("form::attr(action)").get())
        for query in self.queries.split(","):
            yield scrapy.FormRequest(
                action, method="GET", formdata={"q": query}, callback=self.parse_results
            )

    def parse_results(self, response):
        yield {"url": response.url, "html": response.text}
        for href in response.css("a.record::attr(href)").getall():
            yield response.follow(href, callback=self.parse_record)
        next_page = response.css("a[rel=next]::attr(href)").get()
        if next_page:
            yield response.follow(next_page, callback=self.parse_results)

    def parse_record(self, response):
        yield {"url": response.url, "html": response.text}
'''


class SearchSite:
    """A search site on 127.0.0.1 whose records are real pages; optional latency per response."""

    def __init__(self, pages: Sequence[bytes], latency: tuple[float, float] | None) -> None:
        self.pages = pages
        self.latency = latency
        self.random = random.Random(7)
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                site.respond(self)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def respond(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one request after the configured latency."""
        if self.latency is not None:
            with self.lock:
                delay = self.random.uniform(*self.latency)
            time.sleep(delay)
        parts = urlsplit(handler.path)
        status, body = 200, b""
        if parts.path == "/":
            body = (
                b"<html><head><title>News archive</title></head><body><h1>News archive</h1>"
                b'<form action="/search" method="get"><input type="text" name="q">'
                b'<input type="submit" value="Search"></form></body></html>'
            )
        elif parts.path == "/search":
            body = self.results_page(parse_qs(parts.query))
        elif parts.path.startswith("/record/") and parts.path[8:].isdigit():
            number = int(parts.path[8:])
            if number < len(self.pages):
                body = self.pages[number]
            else:
                status = 404
        else:
            status = 404
        handler.send_response(status)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def results_page(self, query: dict[str, list[str]]) -> bytes:
        """List the query's share of the records, ten a page, with a "Next" link."""
        term = (query.get("q") or [""])[0]
        page = int((query.get("page") or ["1"])[0])
        if term not in QUERIES:
            return b"<html><body><p>No results.</p></body></html>"
        mine = list(range(QUERIES.index(term), len(self.pages), len(QUERIES)))
        shown = mine[(page - 1) * RESULTS_PER_PAGE : page * RESULTS_PER_PAGE]
        items = "".join(
            f'<li><a class="record" href="/record/{n}">Story {n} about {term}</a> '
            f"<p>A summary of story {n}, one of the results for {term}.</p></li>"
            for n in shown
        )
        more = page * RESULTS_PER_PAGE < len(mine)
        next_link = (
            f'<a rel="next" href="/search?q={term}&amp;page={page + 1}">Next</a>' if more else ""
        )
        return (
            f"<html><head><title>Results for {term}, page {page}</title></head><body>"
            f"<h1>Results for {term}</h1><ol>{items}</ol>{next_link}</body></html>"
        ).encode()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Crawl:
    """One crawl's measurements."""

    name: str
    seconds: float
    wall_seconds: float
    items: int
    peak_rss_mb: float
    feed_bytes: int
    crawl_cpu: float  # CPU seconds of the crawl's own process (the reactor thread and all)
    worker_cpu: float  # CPU seconds of its child processes (the analysis workers)
    # ReactorClock's stats: the reactor thread's CPU seconds by pipeline, in all ("reactor"),
    # and the items that entered the pipelines ("items")
    clock: dict[str, float] = field(default_factory=dict)


def load_pages(copies: int) -> list[bytes]:
    """Read the dataset's pages (sorted by name), ``copies`` times over."""
    files = sorted(PAGES_DIR.glob("*.html.gz"))
    if not files:
        raise SystemExit(f"no pages under {PAGES_DIR}: the datasets folder is missing")
    pages = [gzip.decompress(path.read_bytes()) for path in files]
    return pages * copies


def common_settings(feed: Path, concurrency: int) -> list[str]:
    """Return the settings both crawlers run with (same concurrency, no throttling)."""
    values = {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }
    settings = [f"{name}={value}" for name, value in values.items()]
    return [*(part for setting in settings for part in ("-s", setting)), "-O", str(feed)]


def run_crawl(name: str, command: list[str], cwd: Path, feed: Path, env: dict[str, str]) -> Crawl:
    """Run one crawl subprocess; return its Scrapy-measured time, items and peak memory."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    peak = 0
    watched = psutil.Process(process.pid)
    log_parts: list[str] = []
    reader = threading.Thread(target=lambda: log_parts.append(process.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    cpu: dict[int, float] = {}
    while process.poll() is None:
        try:
            tree = [watched, *watched.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
            for member in tree:
                times = member.cpu_times()
                cpu[member.pid] = times.user + times.system
        except psutil.Error:
            pass
        time.sleep(0.1)
    reader.join()
    wall = time.perf_counter() - started
    log = "".join(log_parts)
    elapsed = _ELAPSED_RE.search(log)
    scraped = _SCRAPED_RE.search(log)
    if process.returncode != 0 or elapsed is None:
        raise SystemExit(f"{name} failed (exit code {process.returncode}):\n{log[-3000:]}")
    return Crawl(
        name,
        float(elapsed.group(1)),
        wall,
        int(scraped.group(1)) if scraped else 0,
        peak / 2**20,
        feed.stat().st_size,
        cpu.get(process.pid, 0.0),
        sum(seconds for pid, seconds in cpu.items() if pid != process.pid),
        {name: float(value) for name, value in _CLOCK_RE.findall(log)},
    )


def bare_crawl(site: SearchSite, folder: Path, concurrency: int) -> Crawl:
    """Crawl the site with the bare spider (no project, no pipelines)."""
    spider = folder / "bare_spider.py"
    spider.write_text(BARE_SPIDER, encoding="utf-8")
    feed = folder / "bare.jsonl"
    command = [
        sys.executable, "-m", "scrapy", "runspider", str(spider),
        "-a", f"start_url={site.url}", "-a", "queries=" + ",".join(QUERIES),
        *common_settings(feed, concurrency),
    ]  # fmt: skip
    return run_crawl("bare", command, folder, feed, dict(os.environ))


def deepweb_crawl(
    site: SearchSite,
    folder: Path,
    workers: int | None,
    max_pages: int,
    concurrency: int,
    similarity: bool = False,
    warc: bool = False,
    checkout: Path | None = None,
) -> Crawl:
    """Crawl the site with ``scrapy crawl deepweb`` and the analysis on ``workers`` processes
    (with the similarity stage writing ``pairs.json`` when ``similarity``, and WARC files in
    ``warc-LABEL/`` when ``warc``); with a ``checkout``, its ``websim_crawler`` crawls with the
    clustering stage on and ``ReactorClock``."""
    label = (
        ("default" if workers is None else str(workers))
        + (", similarity" if similarity else "")
        + (", warc" if warc else "")
        + (f", clustering at {commit_of(checkout)}" if checkout is not None else "")
    )
    feed = folder / f"deepweb-{label.replace(', ', '-')}.jsonl"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb",
        "-a", f"start_url={site.url}", "-a", "queries=" + ",".join(QUERIES),
        "-a", "follow=1", "-a", f"max_pages={max_pages}",
        *common_settings(feed, concurrency),
    ]  # fmt: skip
    if workers is not None:
        command += ["-s", f"WEBSIM_ANALYSIS_WORKERS={workers}"]
    if similarity:
        command += ["-s", f"WEBSIM_SIMILARITY_OUTPUT={folder / 'pairs.json'}"]
    if warc:
        archive = folder / f"warc-{label.replace(', ', '-')}"
        shutil.rmtree(archive, ignore_errors=True)
        command += ["-s", f"WEBSIM_WARC_OUTPUT={archive}"]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    if checkout is not None:
        clusters = folder / f"clusters-{label.rsplit(' ', 1)[-1]}.json"
        command += ["-s", f"WEBSIM_CLUSTERS_OUTPUT={clusters}"]
        command += ["-s", 'EXTENSIONS={"reactor_clock.ReactorClock": 0}']
        env["PYTHONPATH"] = os.pathsep.join(map(str, (checkout, Path(__file__).parent)))
    return run_crawl(f"deepweb, workers {label}", command, checkout or ROOT, feed, env)


def html_bytes(feed: Path) -> int:
    """Return the UTF-8 size of the HTML the feed's items hold."""
    import json

    total = 0
    with feed.open(encoding="utf-8") as lines:
        for line in lines:
            html = json.loads(line).get("html")
            total += len(html.encode("utf-8")) if isinstance(html, str) else 0
    return total


def median_run(runs: Sequence[Crawl]) -> Crawl:
    """Return the run of median crawl time (the lower middle one of an even count)."""
    return sorted(runs, key=lambda crawl: crawl.seconds)[(len(runs) - 1) // 2]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds and print one table per round."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=2, help="times each page is served")
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[0, 1, 2, 4], help="worker counts to run"
    )
    parser.add_argument("--rounds", default="ab", help="a: no latency, b: 50-100 ms latency")
    parser.add_argument(
        "--concurrency", type=int, default=CONCURRENCY, help="requests at a time, both crawlers"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of every crawler, interleaved; each row is the run of median crawl time",
    )
    parser.add_argument(
        "--similarity",
        action="store_true",
        help="also crawl with the similarity stage on (WEBSIM_SIMILARITY_OUTPUT), per worker count",
    )
    parser.add_argument(
        "--warc",
        action="store_true",
        help="also crawl with WARC files written (WEBSIM_WARC_OUTPUT), per worker count, and "
        "time the reactor's and the writer thread's share of a page",
    )
    parser.add_argument(
        "--reactor-per-item",
        type=Path,
        nargs="+",
        metavar="CHECKOUT",
        help="only crawl round (a) with the clustering stage on, once per checkout (its "
        "websim_crawler), and time the reactor thread per item, by pipeline",
    )
    args = parser.parse_args(argv)
    # As pip does for an installed package: an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would compile websim's modules in every crawl and worker server.
    compileall.compile_dir(str(ROOT / "websim_crawler"), quiet=1)
    pages = load_pages(args.copies)
    max_pages = -(-len(pages) // (len(QUERIES) * RESULTS_PER_PAGE))
    print(
        f"{len(pages)} record pages, {sum(map(len, pages)) / len(pages) / 1024:.0f} KB on average"
        f" (largest {max(map(len, pages)) / 1024:.0f} KB); concurrency {args.concurrency}; "
        f"{len(os.sched_getaffinity(0))} usable CPUs; load average "
        + " ".join(f"{load:.1f}" for load in os.getloadavg())
    )
    if args.reactor_per_item:
        checkouts = [checkout.resolve() for checkout in args.reactor_per_item]
        print_reactor_per_item(pages, checkouts, args.repeat, args.concurrency)
        return 0
    rounds = {"a": ("(a) no latency", None), "b": ("(b) 50-100 ms per response", (0.05, 0.1))}
    for key in args.rounds:
        title, latency = rounds[key]
        site = SearchSite(pages, latency)
        try:
            with tempfile.TemporaryDirectory(prefix="websim-crawl-bench-") as temporary:
                folder = Path(temporary)
                runs: list[list[Crawl]] = []
                for _ in range(args.repeat):
                    crawls = [bare_crawl(site, folder, args.concurrency)]
                    for workers in [*args.workers, None]:
                        for similarity in [False, True] if args.similarity else [False]:
                            for warc in [False, True] if args.warc else [False]:
                                crawls.append(
                                    deepweb_crawl(
                                        site,
                                        folder,
                                        workers,
                                        max_pages,
                                        args.concurrency,
                                        similarity,
                                        warc,
                                    )
                                )
                    runs.append(crawls)
                crawls = [median_run(same) for same in zip(*runs, strict=True)]
                default = next(
                    crawl for crawl in crawls if crawl.name == "deepweb, workers default"
                )
                feed_ratio = default.feed_bytes / html_bytes(folder / "deepweb-default.jsonl")
                archived = sorted((folder / "warc-default-warc").glob("*.warc.gz"))
                archived_bytes = sum(path.stat().st_size for path in archived)
        finally:
            site.close()
        bare = crawls[0].seconds
        print(f"\n{title}" + (f" (median of {args.repeat} runs)" if args.repeat > 1 else ""))
        print(
            "| crawler | items | crawl s | ratio vs bare | CPU s crawl process | CPU s workers "
            "| peak RSS MB (all processes) | feed MB |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for crawl in crawls:
            print(
                f"| {crawl.name} | {crawl.items} | {crawl.seconds:.1f} | "
                f"{crawl.seconds / bare:.2f}x | {crawl.crawl_cpu:.1f} | {crawl.worker_cpu:.1f} | "
                f"{crawl.peak_rss_mb:.0f} | {crawl.feed_bytes / 2**20:.1f} |"
            )
        print(f"default crawl's feed / the HTML it holds: {feed_ratio:.2f}x")
        if archived:
            print(f"default crawl's WARC: {len(archived)} file(s), {archived_bytes / 2**20:.1f} MB")
    if args.warc:
        print_warc_shares(pages)
    return 0


def commit_of(checkout: Path) -> str:
    """Return the short commit a checkout is at (with ``+`` when it has changes)."""
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    changed = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return head + ("+" if changed else "")


def print_reactor_per_item(
    pages: Sequence[bytes], checkouts: Sequence[Path], repeat: int, concurrency: int
) -> None:
    """Crawl round (a) with the clustering stage on, per checkout, ``repeat`` times interleaved;
    print the reactor thread's CPU per item, by pipeline, of each checkout's median run."""
    max_pages = -(-len(pages) // (len(QUERIES) * RESULTS_PER_PAGE))
    for checkout in checkouts:
        compileall.compile_dir(str(checkout / "websim_crawler"), quiet=1)
    site = SearchSite(pages, None)
    try:
        with tempfile.TemporaryDirectory(prefix="websim-crawl-bench-") as temporary:
            runs = [
                [
                    deepweb_crawl(site, Path(temporary), None, max_pages, concurrency, checkout=c)
                    for c in checkouts
                ]
                for _ in range(repeat)
            ]
    finally:
        site.close()
    crawls = [median_run(same) for same in zip(*runs, strict=True)]
    pipelines = sorted({name for crawl in crawls for name in crawl.clock} - {"items", "reactor"})
    print(
        "\n(a) reactor thread CPU per item, us"
        + (f" (median crawl time of {repeat} runs)" if repeat > 1 else "")
    )
    print(f"| crawl | items | crawl s | {' | '.join(pipelines)} | all pipelines | reactor in all |")
    print("|---|---:|---:|" + "---:|" * (len(pipelines) + 2))
    for crawl in crawls:
        items = crawl.clock["items"]
        in_pipelines = [crawl.clock.get(name, 0.0) / items * 1e6 for name in pipelines]
        cells = [f"{micros:.0f}" for micros in (*in_pipelines, sum(in_pipelines))]
        print(
            f"| {crawl.name} | {items:.0f} | {crawl.seconds:.1f} | {' | '.join(cells)} | "
            f"{crawl.clock['reactor'] / items * 1e6:.0f} |"
        )


def print_warc_shares(pages: Sequence[bytes]) -> None:
    """Time what a page's archiving costs on the reactor (taking the capture and queueing it)
    against the writer thread's work (warcio's records, gzip, the append), on the dataset."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from websim_crawler.archive.middleware import capture_of
    from websim_crawler.archive.writer import serialise

    responses = [
        (
            request := Request(f"http://127.0.0.1/record/{number}"),
            HtmlResponse(
                request.url,
                body=page,
                headers={"Content-Type": "text/html; charset=utf-8"},
                request=request,
            ),
        )
        for number, page in enumerate(pages)
    ]
    started = time.process_time()
    captures = [capture_of(request, response) for request, response in responses]
    reactor = time.process_time() - started
    started = time.process_time()
    written = sum(len(serialise(capture)[0]) for capture in captures)
    thread = time.process_time() - started
    print(
        f"\nWARC per page ({len(pages)} pages): reactor (capture) {reactor / len(pages) * 1e6:.0f} "
        f"us, writer thread (warcio records + gzip) {thread / len(pages) * 1e3:.1f} ms; "
        f"thread / reactor = {thread / reactor:.0f}x; compressed to "
        f"{written / sum(map(len, pages)):.2f} of the bodies"
    )


if __name__ == "__main__":
    sys.exit(main())
