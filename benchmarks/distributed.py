"""Scale-out: crawl pages/s with 1 vs 2 workers on one Redis frontier; Dask vs in-memory FCM.

(a) Crawl: a generated site of ``--pages`` pages (each links to a few others) is served on
  127.0.0.1 with ``--delay`` seconds per request, so a crawl is IO-bound as on the web. The
  ``site`` spider crawls it once with one worker and once with two workers sharing one
  scrapy-redis frontier (a throw-away redis-server; the start URL seeded with ``websim seed``).
  Each worker allows ``--concurrency`` requests at a time. Pages/s = pages crawled / (last
  response of any worker - first worker's start), from each worker's WEBSIM_STATS_OUTPUT,
  so process start-up and the idle wait before a worker stops are not counted.
(c) Kill and replace: the same site crawled by two workers; once worker 1 has written
  ``--kill-after`` pages it is killed with SIGKILL (a machine lost, requests in flight) and a
  replacement worker is started (``WEBSIM_REDIS_LEASE=--lease`` seconds, so the dead worker's
  leased requests are requeued that long after the kill). Reported: pages lost (site pages in no
  feed; must be 0), duplicates before de-duplication (lines of the feeds minus distinct URLs:
  the pages the dead worker had written but not yet acknowledged), and requests requeued. The
  same run with scrapy-redis' own scheduler and Scrapy's buffered feed storage (as before the
  leases) shows what they cost.
(d) Kills at random moments: a site of ``--article-pages`` large real pages (the
  article-extraction-benchmark's html.gz, the ones whose analysis takes 20-200 ms here; their own
  links disabled, each page linking to a few others) crawled with an end-of-crawl stage
  (WEBSIM_CLUSTERS_OUTPUT), SIGKILLed at ``--kills`` moments drawn at random (seeded) from four
  windows: once the feed holds a random share of the pages, early (5-33 %), mid (33-80 %) or at
  close (80-100 %), or a random time after the last page within the end-of-crawl stage's
  duration in an uninterrupted run (progress, not wall time: a loaded machine moves the
  timeline). Redis: the killed worker is replaced by a new one (``WEBSIM_REDIS_LEASE=--lease``).
  JOBDIR: the crawl is resumed from its JOBDIR into the same appended feed. Each run reports
  pages lost (site pages in no feed), cut or invalid lines, repeats (feed lines minus distinct
  pages) against the requests in flight at the kill (the killed worker's in-flight hash in
  Redis, the leased rows of the JOBDIR's frontier file), the pages the final clusters report
  accounts for (clustered, or skipped with a stated reason) out of the distinct pages crawled,
  the exit codes, and the same for the crawl's WARC files (WEBSIM_WARC_OUTPUT, one folder for
  both runs): pages with no response record, response records repeated. Targets: 0 lost, 0
  cut, repeats <= in flight (feed and WARC), clusters covering every page.
(e) Frontier: bytes per URL of the shared duplicate filter in Redis (``INFO memory``'s
  used_memory after adding N request fingerprints, minus before) for N in ``--fingerprints``,
  scrapy-redis' plain set against ``WEBSIM_REDIS_DUPEFILTER=bloom``; the Bloom filter's
  false-positive rate measured on 100,000 fingerprints never added; then the ``--pages`` crawl
  of (a) with 2 workers on each filter (pages/s).
(b) Clustering: fuzzy c-means on N=``--rows`` LSA-like rows (50 dims, float32, 10 blobs), the
  in-memory ``FuzzyCMeans`` against ``DaskFuzzyCMeans`` on a LocalCluster (2 worker processes,
  chunks of ``--chunk-rows`` rows), same seed, 20 iterations each; the largest membership difference
  shows both compute the same clusters.

Usage::

    .venv/bin/python benchmarks/distributed.py
    .venv/bin/python benchmarks/distributed.py --part crawl --pages 300 --delay 0.1
    .venv/bin/python benchmarks/distributed.py --part kill --pages 400 --kill-after 60
    .venv/bin/python benchmarks/distributed.py --part kills --kills 20 --article-pages 24 \
        --articles ../shared/datasets/article-extraction-benchmark/html \
        --articles <trafilatura-eval's tests folder, unpacked>
    .venv/bin/python benchmarks/distributed.py --part frontier --fingerprints 1000000,10000000
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# This script is named distributed.py: keep its folder off the import path, or ``import
# distributed`` (Dask's) would import the script itself.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO / "benchmarks"]
sys.path.insert(0, str(REPO))  # the throw-away redis-server of tests/support/local_redis.py


def page_handler(
    count: int, delay: float, body_of: Callable[[int], bytes]
) -> type[BaseHTTPRequestHandler]:
    """Serve ``body_of(i)`` at /p/i for i < ``count``, each after ``delay`` seconds."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            time.sleep(delay)
            number = int(self.path[3:]) if self.path[3:].isdigit() else count
            if not self.path.startswith("/p/") or number >= count:
                self.send_error(404)
                return
            body = body_of(number)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the worker was killed mid-response, as rounds (c) and (d) mean it to be

    return Handler


def site_handler(pages: int, delay: float) -> type[BaseHTTPRequestHandler]:
    """Pages /p/0 .. /p/N-1; page i links to 2i+1, 2i+2 (a tree) and to i//3 and i+7 (mesh)."""

    def body_of(number: int) -> bytes:
        targets = sorted({2 * number + 1, 2 * number + 2, number // 3, number + 7})
        links = "".join(f"<li><a href='/p/{t}'>page {t}</a></li>" for t in targets if t < pages)
        words = " ".join(f"word{(number * 7 + i) % 97}" for i in range(60))
        return (
            f"<html><head><title>Page {number}</title></head><body><nav><ul>{links}</ul>"
            f"</nav><article><h1>Page {number}</h1><p>{words}</p></article></body></html>"
        ).encode()

    return page_handler(pages, delay, body_of)


def worker_command(
    redis_url: str, prefix: str, out: Path, concurrency: int, *extra: str
) -> list[str]:
    """Return the command of one ``site`` worker writing ``out``.jsonl, .stats.json and .log."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-O", f"{out}.jsonl"]
    for setting in (
        f"WEBSIM_REDIS_URL={redis_url}",
        f"WEBSIM_REDIS_PREFIX={prefix}",
        "WEBSIM_REDIS_MAX_IDLE=3",
        "WEBSIM_REDIS_POLL_INTERVAL=0.2",
        f"WEBSIM_STATS_OUTPUT={out}.stats.json",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
        "AUTOTHROTTLE_ENABLED=0",
        "DEPTH_LIMIT=0",
        "LOG_LEVEL=WARNING",
        f"LOG_FILE={out}.log",
        *extra,
    ):
        command += ["-s", setting]
    return command


ENVIRONMENT = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")


def seed(redis_url: str, prefix: str, start_url: str) -> None:
    """Reset the crawl's keys and seed its start URL."""
    command = [sys.executable, "-m", "websim_crawler", "seed", "site", start_url]
    options = ["--redis", redis_url, "--prefix", prefix, "--reset"]
    subprocess.run([*command, *options], check=True, stdout=subprocess.DEVNULL)


def feed_urls(path: Path) -> list[str]:
    """Return the URLs of a feed's complete lines."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []
    return [json.loads(line)["url"] for line in lines if line.endswith("\n")]


def crawl_with_workers(
    redis_url: str,
    start_url: str,
    workers: int,
    concurrency: int,
    folder: Path,
    *extra: str,
    prefix: str = "",
) -> tuple[int, float]:
    """Crawl with ``workers`` processes; return (distinct pages, seconds of crawling)."""
    prefix = prefix or f"bench{workers}"
    seed(redis_url, prefix, start_url)
    processes = [
        subprocess.Popen(
            worker_command(redis_url, prefix, folder / f"{prefix}-{n}", concurrency, *extra),
            cwd=REPO,
            env=ENVIRONMENT,
        )
        for n in range(workers)
    ]
    for process in processes:
        if process.wait() != 0:
            raise SystemExit(f"a worker failed; see {folder}")
    urls: list[str] = []
    starts, ends = [], []
    for number in range(workers):
        out = folder / f"{prefix}-{number}"
        urls += feed_urls(Path(f"{out}.jsonl"))
        stats = json.loads(Path(f"{out}.stats.json").read_text(encoding="utf-8"))
        starts.append(datetime.fromisoformat(stats["start_time"]))
        ends.append(datetime.fromisoformat(stats["websim/redis/last_response_time"]))
    if len(urls) != len(set(urls)):
        raise SystemExit("a page was crawled twice")
    return len(urls), (max(ends) - min(starts)).total_seconds()


def kill_and_replace(
    redis_url: str,
    start_url: str,
    concurrency: int,
    folder: Path,
    kill_after: int,
    extra: tuple[str, ...],
) -> tuple[set[str], int, int]:
    """Two workers, worker 1 SIGKILLed after ``kill_after`` pages, a replacement started.

    Return (distinct URLs in the feeds, feed lines in all, requests requeued).
    """
    import redis

    prefix = f"benchkill{len(extra)}"
    seed(redis_url, prefix, start_url)
    outs = [folder / f"{prefix}-{n}" for n in range(3)]

    def start(number: int) -> subprocess.Popen[bytes]:
        command = worker_command(redis_url, prefix, outs[number], concurrency, *extra)
        return subprocess.Popen(command, cwd=REPO, env=ENVIRONMENT)

    processes = [start(0), start(1)]
    deadline = time.monotonic() + 600
    while len(feed_urls(Path(f"{outs[0]}.jsonl"))) < kill_after:
        if time.monotonic() > deadline or processes[0].poll() is not None:
            raise SystemExit(f"worker 1 did not reach {kill_after} pages; see {folder}")
        time.sleep(0.05)
    processes[0].send_signal(signal.SIGKILL)
    processes[0].wait()
    processes.append(start(2))
    for process in processes[1:]:
        if process.wait() != 0:
            raise SystemExit(f"a worker failed; see {folder}")
    urls = [url for out in outs for url in feed_urls(Path(f"{out}.jsonl"))]
    requeued = int(redis.Redis.from_url(redis_url).get(f"{prefix}:site:requeued") or 0)
    return set(urls), len(urls), requeued


def crawl_part(pages: int, delay: float, concurrency: int) -> None:
    from tests.support.local_redis import LocalRedis

    if shutil.which("redis-server") is None:
        print("(a) skipped: redis-server is not installed")
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), site_handler(pages, delay))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start_url = f"http://127.0.0.1:{server.server_address[1]}/p/0"
    rates = {}
    print(
        f"(a) crawl of {pages} pages, {delay * 1000:.0f} ms per request, {concurrency} per worker"
    )
    print(f"{'workers':>8} {'pages':>6} {'seconds':>8} {'pages/s':>8}")
    with LocalRedis() as redis, tempfile.TemporaryDirectory() as folder:
        for workers in (1, 2):
            count, seconds = crawl_with_workers(
                redis.url, start_url, workers, concurrency, Path(folder)
            )
            rates[workers] = count / seconds
            print(f"{workers:>8} {count:>6} {seconds:>8.2f} {rates[workers]:>8.1f}")
    server.shutdown()
    print(f"speed-up, 2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


def kill_part(pages: int, delay: float, concurrency: int, kill_after: int, lease: float) -> None:
    from tests.support.local_redis import LocalRedis

    if shutil.which("redis-server") is None:
        print("(c) skipped: redis-server is not installed")
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), site_handler(pages, delay))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print(
        f"\n(c) kill and replace: {pages} pages, {delay * 1000:.0f} ms per request, "
        f"{concurrency} per worker, worker 1 SIGKILLed after {kill_after} pages, lease {lease:g} s"
    )
    # As before leases: scrapy-redis' own scheduler, Scrapy's buffered file feed storage.
    scrapy_redis_only = (
        "SCHEDULER=scrapy_redis.scheduler.Scheduler",
        'FEED_STORAGES={"": "scrapy.extensions.feedexport.FileFeedStorage", '
        '"file": "scrapy.extensions.feedexport.FileFeedStorage"}',
    )
    runs = (
        ("websim leases", (f"WEBSIM_REDIS_LEASE={lease}",)),
        ("scrapy-redis", scrapy_redis_only),
    )
    header = ("frontier", "pages", "in feeds", "distinct", "lost", "duplicates", "requeued")
    print("{:>14} {:>6} {:>9} {:>9} {:>5} {:>11} {:>9}".format(*header))
    site_urls = {f"{base}/p/{n}" for n in range(pages)}
    lost_with_leases = 0
    with LocalRedis() as redis, tempfile.TemporaryDirectory() as folder:
        for name, extra in runs:
            urls, lines, requeued = kill_and_replace(
                redis.url, f"{base}/p/0", concurrency, Path(folder), kill_after, extra
            )
            lost = len(site_urls - urls)
            lost_with_leases += lost if name == "websim leases" else 0
            row = (name, pages, lines, len(urls), lost, lines - len(urls), requeued)
            print("{:>14} {:>6} {:>9} {:>9} {:>5} {:>11} {:>9}".format(*row))
    server.shutdown()
    if lost_with_leases:
        raise SystemExit(f"{lost_with_leases} pages lost with leases")


ARTICLES = REPO / ".." / "shared" / "datasets" / "article-extraction-benchmark" / "html"
KILL_WINDOWS = (("early", 0.05, 0.33), ("mid", 0.33, 0.8), ("close", 0.8, 1.0), ("stages", 1, 1))
"""Where kills land: a share of the site's pages written, or (stages) after the last one."""


def article_pages(folders: Sequence[Path], count: int) -> tuple[list[bytes], list[float]]:
    """Return ``count`` real pages whose analysis takes 20-200 ms here, and those times.

    The pages are the ``.html`` and ``.html.gz`` files under ``folders``; most real pages take
    less than 20 ms, so large sets (trafilatura-eval's pages too) may be needed to find enough.
    """
    from websim_crawler.core.page import analyse_page

    timed = []
    analyse_page("<html><body><p>warm up</p></body></html>", "http://example.org/")
    paths = sorted(
        path
        for folder in folders
        for pattern in ("*.html", "*.html.gz")
        for path in folder.rglob(pattern)
    )
    if not paths:
        raise SystemExit(
            f"no .html or .html.gz pages in {', '.join(map(str, folders))}: give --articles"
        )
    for path in paths:
        html = path.read_bytes()
        html = gzip.decompress(html) if path.suffix == ".gz" else html
        started = time.perf_counter()
        try:
            analyse_page(html, "http://example.org/article")
        except Exception:  # a page the analysis refuses is no use here
            continue
        timed.append((time.perf_counter() - started, html))
    fitting = [entry for entry in timed if 0.02 <= entry[0] <= 0.2]
    if len(fitting) < count:
        raise SystemExit(f"only {len(fitting)} pages take 20-200 ms to analyse; ask fewer")
    chosen = random.Random(0).sample(fitting, count)
    # Their own links and <base> disabled: only the links added here are followed.
    pages = [re.sub(rb"(?i)\shref=|<base", b" data-href=", html) for _, html in chosen]
    return pages, sorted(seconds for seconds, _ in chosen)


def article_site_handler(pages: list[bytes], delay: float) -> type[BaseHTTPRequestHandler]:
    """Page i of ``pages`` at /p/i, linking to /p/2i+1, /p/2i+2 and /p/i+7."""

    def body_of(number: int) -> bytes:
        targets = [t for t in (2 * number + 1, 2 * number + 2, number + 7) if t < len(pages)]
        links = "".join(f"<a href='/p/{t}'>page {t}</a> " for t in targets).encode()
        html = pages[number]
        cut = html.lower().rfind(b"</body>")
        return html[:cut] + links + html[cut:] if cut >= 0 else html + links

    return page_handler(len(pages), delay, body_of)


@dataclass
class KillRun:
    """One crawl killed at ``at`` seconds and finished by a replacement or a resume."""

    frontier: str
    window: str
    kill_at: tuple[int, float]
    written_at_kill: int = 0
    in_flight: int = 0
    lost: int = 0
    cut: int = 0
    repeats: int = 0
    covered: int = 0
    distinct: int = 0
    codes: tuple[int, ...] = ()
    warc_lost: int = 0
    warc_repeats: int = 0

    def holds(self) -> bool:
        """Tell whether the run meets every target."""
        return (
            self.lost == 0
            and self.cut == 0
            and self.repeats <= self.in_flight
            and self.warc_lost == 0
            and self.warc_repeats <= self.in_flight
            and self.covered == self.distinct
            and self.codes[-1] == 0
        )


def read_feeds(feeds: list[Path]) -> tuple[list[str], int]:
    """Return the URLs of the feeds' records and how many lines were cut or invalid."""
    from websim_crawler.core.io import ReadReport, iter_jsonl

    report = ReadReport()
    urls = [str(r["url"]) for feed in feeds if feed.exists() for r in iter_jsonl(feed, report)]
    return urls, sum(report.skipped.values())


def count_archived(run: KillRun, folder: Path, pages: int) -> None:
    """Set the run's WARC counts: site pages in no response record of ``folder/warc``, and
    response records beyond one a page (robots.txt, fetched by every run, left out)."""
    from warcio.archiveiterator import ArchiveIterator

    urls = []
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "response" and not url.endswith("/robots.txt"):
                    urls.append(url)
    run.warc_lost = pages - len(set(urls))
    run.warc_repeats = len(urls) - len(set(urls))


def covered_pages(report_path: Path, urls: set[str]) -> int:
    """Return how many of ``urls`` a clusters report accounts for: clustered, or skipped with
    a reason it states (a page with no keyword shared with any other, say); 0 if unreadable.
    """
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    clustered = {str(document["url"]) for document in report["documents"]} & urls
    skipped = report["input"]["skipped"]
    return len(clustered) + sum(n for reason, n in skipped.items() if reason != "duplicate_url")


def run_until(
    command: list[str], kill_at: tuple[int, float] | None, feed: Path
) -> tuple[int, float, int]:
    """Run a crawl; SIGKILL it ``kill_at[1]`` s after its feed reaches ``kill_at[0]`` lines.

    Return (exit code, seconds from start to the last feed line written, feed lines).
    """
    started = time.monotonic()
    with (feed.parent / "stderr.txt").open("ab") as stderr:
        process = subprocess.Popen(command, cwd=REPO, env=ENVIRONMENT, stderr=stderr)
    last_line_at, lines, reached_at = 0.0, 0, None
    while process.poll() is None:
        now = time.monotonic()
        count = feed.read_bytes().count(b"\n") if feed.exists() else 0
        if count != lines:
            lines, last_line_at = count, now - started
        if kill_at is not None and reached_at is None and lines >= kill_at[0]:
            reached_at = now
        if reached_at is not None and kill_at is not None and now - reached_at >= kill_at[1]:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    code = process.wait()
    lines = feed.read_bytes().count(b"\n") if feed.exists() else 0
    return code, last_line_at, lines


def stage_options(folder: Path, name: str) -> list[str]:
    """The end-of-crawl stage and the crawl settings both frontiers share."""
    options = []
    for setting in (
        f"WEBSIM_CLUSTERS_OUTPUT={folder / name}-clusters.json",
        "WEBSIM_CLUSTERS_N=4",
        "CONCURRENT_REQUESTS=4",
        "CONCURRENT_REQUESTS_PER_DOMAIN=4",
        "AUTOTHROTTLE_ENABLED=0",
        "DEPTH_LIMIT=0",
        "LOG_LEVEL=INFO",
        f"LOG_FILE={folder / name}.log",
        f"WEBSIM_WARC_OUTPUT={folder / 'warc'}",
    ):
        options += ["-s", setting]
    return options


def jobdir_command(start_url: str, folder: Path) -> list[str]:
    """A ``site`` crawl with JOBDIR, an appended feed and a clusters report in ``folder``."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={start_url}"]
    command += ["-o", str(folder / "pages.jsonl"), "-s", f"JOBDIR={folder / 'job'}"]
    return command + stage_options(folder, "crawl")


def jobdir_kill(
    start_url: str, folder: Path, window: str, kill_at: tuple[int, float], pages: int
) -> KillRun:
    """Kill a JOBDIR crawl at ``kill_at`` (see ``run_until``), resume it; measure both runs."""
    from websim_crawler.frontier.jobdir_scheduler import FRONTIER_FILE, SqliteFrontier

    folder.mkdir()
    feed = folder / "pages.jsonl"
    run = KillRun("JOBDIR", window, kill_at)
    first, _, run.written_at_kill = run_until(jobdir_command(start_url, folder), kill_at, feed)
    frontier_file = folder / "job" / FRONTIER_FILE
    if frontier_file.exists():
        frontier = SqliteFrontier(frontier_file)
        run.in_flight = frontier.in_flight()
        frontier.close()
    resumed, _, _ = run_until(jobdir_command(start_url, folder), None, feed)
    run.codes = (first, resumed)
    urls, run.cut = read_feeds([feed])
    run.distinct, run.repeats = len(set(urls)), len(urls) - len(set(urls))
    run.lost = pages - run.distinct
    run.covered = covered_pages(folder / "crawl-clusters.json", set(urls))
    count_archived(run, folder, pages)
    return run


def redis_kill(
    redis_url: str,
    start_url: str,
    folder: Path,
    window: str,
    kill_at: tuple[int, float],
    pages: int,
    lease: float,
) -> KillRun:
    """Kill a Redis worker at ``kill_at`` (see ``run_until``), start a replacement; measure."""
    import redis

    folder.mkdir()
    prefix = folder.name
    seed(redis_url, prefix, start_url)
    run = KillRun("Redis", window, kill_at)
    feeds = [folder / "worker-1.jsonl", folder / "worker-2.jsonl"]

    def command(number: int) -> list[str]:
        out = folder / f"worker-{number}"
        worker = worker_command(redis_url, prefix, out, 4, f"WEBSIM_REDIS_LEASE={lease}")
        return worker + stage_options(folder, f"worker-{number}")

    first, _, run.written_at_kill = run_until(command(1), kill_at, feeds[0])
    server = redis.Redis.from_url(redis_url)
    for key in server.scan_iter(match=f"{prefix}:site:inflight:*"):
        fields = server.hkeys(key)
        run.in_flight += sum(1 for field in fields if field != b"s" and not field.startswith(b"h"))
    second, _, _ = run_until(command(2), None, feeds[1])
    run.codes = (first, second)
    urls, run.cut = read_feeds(feeds)
    run.distinct, run.repeats = len(set(urls)), len(urls) - len(set(urls))
    run.lost = pages - run.distinct
    # The end-of-crawl output of a distributed crawl: the workers' feeds clustered together.
    report = folder / "union-clusters.json"
    written = [str(feed) for feed in feeds if feed.exists()]
    cluster = [sys.executable, "-m", "websim_crawler", "cluster", *written, "-o", str(report)]
    subprocess.run(
        [*cluster, "--n-clusters", "4", "--no-progress"],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run.covered = covered_pages(report, set(urls))
    count_archived(run, folder, pages)
    return run


def random_kills_part(
    articles: Sequence[Path], kills: int, article_count: int, delay: float, lease: float
) -> None:
    from tests.support.local_redis import LocalRedis

    if shutil.which("redis-server") is None:
        print("(d) skipped: redis-server is not installed")
        return
    pages, analysis_seconds = article_pages(articles, article_count)
    server = ThreadingHTTPServer(("127.0.0.1", 0), article_site_handler(pages, delay))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start_url = f"http://127.0.0.1:{server.server_address[1]}/p/0"
    middle = analysis_seconds[len(analysis_seconds) // 2]
    print(
        f"\n(d) {kills} kills at random moments per frontier: {len(pages)} real pages "
        f"({sum(map(len, pages)) // len(pages) // 1000} KB on average; analysis "
        f"{analysis_seconds[0] * 1000:.0f}-{analysis_seconds[-1] * 1000:.0f} ms, median "
        f"{middle * 1000:.0f} ms), {delay * 1000:.0f} ms per request, 4 at a time, clusters "
        f"report at the end, Redis lease {lease:g} s"
    )
    header = ("frontier", "window", "kill at", "written", "in flight", "repeats", "lost", "cut")
    header += ("clusters", "exit codes", "warc lost", "warc repeats", "ok")
    line = "{:>8} {:>7} {:>9} {:>7} {:>9} {:>7} {:>4} {:>3} {:>9} {:>10} {:>9} {:>12} {:>3}"
    print(line.format(*header))
    failures = 0
    draw = random.Random(20)
    with LocalRedis() as redis, tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        # One uninterrupted run: how long the end-of-crawl stage lasts after the last page.
        reference = folder / "reference"
        reference.mkdir()
        feed = reference / "pages.jsonl"
        started = time.monotonic()
        code, last_page, _ = run_until(jobdir_command(start_url, reference), None, feed)
        stage_seconds = time.monotonic() - started - last_page
        if code != 0 or len(set(read_feeds([feed])[0])) != len(pages):
            raise SystemExit(f"the uninterrupted crawl failed; see {reference}")
        print(f"uninterrupted: last page at {last_page:.1f} s, then {stage_seconds:.1f} s to exit")
        # A kill once the feed holds a random share of the pages (early, mid, close), or a
        # random time after the last page (during the end-of-crawl stage).
        moments: list[tuple[str, tuple[int, float]]] = []
        for number in range(kills):
            window, low, high = KILL_WINDOWS[number % len(KILL_WINDOWS)]  # every window early
            if window == "stages":
                moments.append((window, (len(pages), draw.uniform(0, stage_seconds))))
            else:
                share = draw.uniform(low, high)
                moments.append(
                    (window, (max(1, min(len(pages) - 1, round(share * len(pages)))), 0.0))
                )
        for number, (window, kill_at) in enumerate(moments):
            for kind in ("Redis", "JOBDIR"):
                run_folder = folder / f"{kind.lower()}-{number}"
                if kind == "Redis":
                    run = redis_kill(
                        redis.url, start_url, run_folder, window, kill_at, len(pages), lease
                    )
                else:
                    run = jobdir_kill(start_url, run_folder, window, kill_at, len(pages))
                failures += not run.holds()
                at = f"{kill_at[0]}+{kill_at[1]:.1f}s" if kill_at[1] else str(kill_at[0])
                row = (run.frontier, run.window, at, run.written_at_kill)
                row += (run.in_flight, run.repeats, run.lost, run.cut)
                row += (f"{run.covered}/{run.distinct}", ",".join(map(str, run.codes)))
                row += (run.warc_lost, run.warc_repeats)
                print(line.format(*row, "yes" if run.holds() else "NO"), flush=True)
    server.shutdown()
    print(f"runs meeting every target: {2 * kills - failures}/{2 * kills}")


def clustering_part(rows: int, chunk_rows: int) -> None:
    import distributed

    from websim_crawler.core.clustering.dask_fcm import DaskFuzzyCMeans
    from websim_crawler.core.clustering.fcm import FuzzyCMeans

    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 1.0, size=(10, 50))
    data = (centres[rng.integers(0, 10, size=rows)] + rng.normal(0, 0.8, (rows, 50))).astype(
        np.float32
    )
    settings: dict[str, Any] = {"m": 1.1, "random_state": 0, "max_iter": 20, "tol": 0.0}
    print(f"\n(b) fuzzy c-means, N={rows} rows x 50 dims, k=10 (cosine, m=1.1), 20 iterations")
    started = time.perf_counter()
    memory = FuzzyCMeans(10, **settings).fit(data)
    memory_seconds = time.perf_counter() - started
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        started = time.perf_counter()
        dask = DaskFuzzyCMeans(
            10, scheduler=cluster.scheduler_address, chunk_rows=chunk_rows, **settings
        ).fit(data)
        dask_seconds = time.perf_counter() - started
    difference = float(np.abs(dask.membership_ - memory.membership_).max())
    print(f"{'engine':>8} {'seconds':>8} {'iterations':>10} {'s/iteration':>11}")
    for name, model, seconds in (("memory", memory, memory_seconds), ("dask", dask, dask_seconds)):
        print(f"{name:>8} {seconds:>8.2f} {model.n_iter_:>10} {seconds / model.n_iter_:>11.4f}")
    print(f"dask / memory time: {dask_seconds / memory_seconds:.2f}x")
    print(f"largest membership difference: {difference:.2e}")


def fingerprints(count: int, salt: str) -> Any:
    """Yield ``count`` request fingerprints (SHA-1 hex, as scrapy-redis makes them)."""
    import hashlib

    for index in range(count):
        yield hashlib.sha1(f"{salt}{index}".encode()).hexdigest()


def filter_memory(kind: str, count: int) -> tuple[float, float, float]:
    """Fill a fresh Redis with ``count`` fingerprints; return (bytes/URL, seconds, FP rate)."""
    import itertools

    import redis as redis_client

    from tests.support.local_redis import LocalRedis
    from websim_crawler.distributed.bloom import BATCH, RedisBloomFilter
    from websim_crawler.distributed.bloom_layout import ScalableBloomLayout

    with LocalRedis() as local:
        server = redis_client.Redis.from_url(local.url, socket_timeout=60)
        before = int(server.info("memory")["used_memory"])
        bloom = RedisBloomFilter(server, "bench:dupefilter", ScalableBloomLayout())
        started = time.perf_counter()
        items = fingerprints(count, "added")
        while batch := list(itertools.islice(items, BATCH * 20)):
            if kind == "bloom":
                bloom.add_many(batch)
            else:
                server.sadd("bench:dupefilter", *batch)
        seconds = time.perf_counter() - started
        used = int(server.info("memory")["used_memory"]) - before
        rate = float("nan")
        if kind == "bloom":
            probes = bloom.add_many(list(fingerprints(100_000, "never added")))
            rate = probes.count(False) / len(probes)
    return used / count, seconds, rate


def frontier_part(counts: list[int], pages: int, delay: float, concurrency: int) -> None:
    from tests.support.local_redis import LocalRedis

    if shutil.which("redis-server") is None:
        print("(e) skipped: redis-server is not installed")
        return
    print("(e) duplicate filter in Redis: bytes per URL (INFO memory), set vs bloom (p = 0.001)")
    print(
        f"{'filter':>7} {'URLs':>11} {'bytes/URL':>10} {'seconds':>8} {'URLs/s':>9} {'FP rate':>9}"
    )
    for count in counts:
        for kind in ("set", "bloom"):
            per_url, seconds, rate = filter_memory(kind, count)
            print(
                f"{kind:>7} {count:>11,} {per_url:>10.2f} {seconds:>8.1f} "
                f"{count / seconds:>9,.0f} {rate:>9.5f}"
            )
    server = ThreadingHTTPServer(("127.0.0.1", 0), site_handler(pages, delay))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start_url = f"http://127.0.0.1:{server.server_address[1]}/p/0"
    print(f"crawl of {pages} pages, {delay * 1000:.0f} ms per request, 2 workers")
    rates = {}
    with LocalRedis() as redis, tempfile.TemporaryDirectory() as folder:
        for kind in ("set", "bloom", "set", "bloom"):  # twice each, interleaved
            count, seconds = crawl_with_workers(
                redis.url,
                start_url,
                2,
                concurrency,
                Path(folder),
                f"WEBSIM_REDIS_DUPEFILTER={kind}",
                prefix=f"frontier-{kind}",
            )
            rates.setdefault(kind, []).append(count / seconds)
            print(f"{kind:>7} {count:>6} pages {seconds:>8.2f} s {count / seconds:>8.1f} pages/s")
    server.shutdown()
    ratio = (sum(rates["bloom"]) / 2) / (sum(rates["set"]) / 2)
    print(f"throughput, bloom / set (mean of 2 runs each): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--part",
        choices=("all", "crawl", "kill", "kills", "clustering", "frontier"),
        default="all",
    )
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--kill-after", type=int, default=60, help="(c): pages of worker 1")
    parser.add_argument("--lease", type=float, default=5.0, help="(c): WEBSIM_REDIS_LEASE")
    parser.add_argument("--kills", type=int, default=20, help="(d): kills per frontier")
    parser.add_argument("--article-pages", type=int, default=48, help="(d): site size")
    parser.add_argument(
        "--articles",
        type=Path,
        action="append",
        help="(d): a folder of real .html/.html.gz pages (repeatable; default: "
        "article-extraction-benchmark's)",
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chunk-rows", type=int, default=25_000)
    parser.add_argument(
        "--fingerprints",
        default="1000000,10000000",
        help="(d): numbers of fingerprints, comma-separated",
    )
    args = parser.parse_args()
    if args.part in ("all", "crawl"):
        crawl_part(args.pages, args.delay, args.concurrency)
    if args.part in ("all", "kill"):
        kill_part(args.pages, args.delay, args.concurrency, args.kill_after, args.lease)
    if args.part in ("all", "kill", "kills"):  # kills: round (d) alone
        random_kills_part(
            args.articles or [ARTICLES], args.kills, args.article_pages, args.delay, args.lease
        )
    if args.part in ("all", "clustering"):
        clustering_part(args.rows, args.chunk_rows)
    if args.part in ("all", "frontier"):
        counts = [int(count) for count in args.fingerprints.split(",")]
        frontier_part(counts, args.pages, args.delay, args.concurrency)


if __name__ == "__main__":
    main()
