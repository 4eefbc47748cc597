"""Rendering: recall of script-filled results, time per page, Chromium's peak memory, confinement.

(a) Recall. The demo site's script patterns (``/js/patterns/...``: results added by timers over
  8 s, after a late ``fetch()``, streamed by a worker, on scroll, behind a script "Next" button,
  behind ``__doPostBack`` links) are rendered three ways in one Chromium:
  - reference: plain Playwright that waits until the page is stable (no change in the number of
    results or the page's size for ``--stable`` seconds), scrolls until nothing more loads, and
    clicks "Next" until there is none, each time waiting for stability again;
  - load: the HTML at the ``load`` event (what a crawl that does not wait sees);
  - websim: the browser module (guard, settle wait, ``WEBSIM_RENDER_SCROLLS=10``) and, for the
    pagination patterns, the crawl's own decision (``next_page``) and click.
  Recall = results websim (or load) shows / results the reference shows. Time per page is the
  websim rendering time divided by the result pages it took.
(b) Memory. A page allocating 4 GB (64 typed arrays of 64 MB, filled) rendered with the watchdog
  on (``WEBSIM_RENDER_MAX_MEMORY``, default 1024 MiB); the peak of Chromium's summed private
  memory is sampled every 20 ms by this script, apart from the watchdog.
(c) Confinement. A rendered ``scrapy crawl site`` of the hostile pages of
  ``tests/support/hostile_site.py``
  (escapes to a second loopback port, redirects, popups, downloads, a 8 MB page, the 4 GB page):
  the hostile pages stored, and the TCP connections the "internal" port received.

(d) Adaptive rendering (``--adaptive``, run alone). A search site served here in two variants,
  each a plain GET search form whose result pages are drawn by a script (20 results a page from
  a JSON API, the "Next" link added by the script too): in ``plain-records`` the record pages are
  server-rendered HTML, in ``scripted-records`` a script fetches and draws each record's body.
  ``scrapy crawl deepweb -a follow=1`` over ``--queries`` topics (``--records`` records in all)
  with ``render=1`` and with ``render=auto``: records stored with their content (the record's
  title in the item's main text), recall of auto against render=1, crawl wall time, and the
  pages Chromium rendered.
(e) The same (``--runs N``, run alone): ``render=1`` on ``scripted-records`` N times in a row;
  records stored in each run, the spread of recall against the union of the runs, and the pages
  refused, deferred and retried alone.

Usage::

    .venv/bin/python benchmarks/rendering.py
    .venv/bin/python benchmarks/rendering.py --adaptive --records 400
    .venv/bin/python benchmarks/rendering.py --runs 3 --records 200 --queries 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:1] = [str(REPO), str(REPO / "tests")]  # this file is named like nothing it imports

from playwright.async_api import async_playwright  # noqa: E402
from support.hostile_site import DROPPED, STORED, HostileSite, InternalService  # noqa: E402

from websim_crawler.browser.session import CONTEXT_OPTIONS, Rendering  # noqa: E402
from websim_crawler.browser.watchdog import chromium_processes, private_bytes  # noqa: E402
from websim_crawler.config.render import RenderParams  # noqa: E402
from websim_crawler.core.crawling import next_page  # noqa: E402
from websim_crawler.core.html import parse_html  # noqa: E402
from websim_crawler.demo import scripted  # noqa: E402
from websim_crawler.demo.site import DemoSite  # noqa: E402

_RESULTS = "() => Array.from(document.querySelectorAll('li.result h3 a'), a => a.textContent)"
_SIZE = "() => document.documentElement.scrollHeight + ':' + document.querySelectorAll('*').length"
PAGINATED = {"script-next": "#next", "postback": "text=Next"}


def titles_in(html: str) -> list[str]:
    """Return the result titles a page's HTML shows."""
    return [" ".join(a.text_content().split()) for a in parse_html(html).xpath("//li/h3/a")]


async def wait_stable(page: Any, stable: float, limit: float = 60.0) -> None:
    """Wait until the page's size and element count have not changed for ``stable`` seconds."""
    last, since, started = None, time.monotonic(), time.monotonic()
    while time.monotonic() - since < stable and time.monotonic() - started < limit:
        size = await page.evaluate(_SIZE)
        if size != last:
            last, since = size, time.monotonic()
        await asyncio.sleep(0.1)


async def reference(context: Any, url: str, pattern: str, stable: float) -> set[str]:
    """Render like a patient person: wait for stability, scroll, page through every "Next"."""
    page = await context.new_page()
    seen: set[str] = set()
    await page.goto(url, wait_until="load")
    while True:
        await wait_stable(page, stable)
        for _ in range(20):
            before = await page.evaluate(_SIZE)
            await page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
            await wait_stable(page, stable)
            if await page.evaluate(_SIZE) == before:
                break
        seen.update(" ".join(title.split()) for title in await page.evaluate(_RESULTS))
        control = page.locator(PAGINATED.get(pattern, "#no-next-control"))
        if not await control.count() or not await control.first.is_visible():
            break
        await control.first.click()
        await page.wait_for_load_state("load")
    await page.close()
    return seen


async def at_load(context: Any, url: str) -> set[str]:
    """Return the results shown when the ``load`` event fires."""
    page = await context.new_page()
    await page.goto(url, wait_until="load")
    shown = set(titles_in(await page.content()))
    await page.close()
    return shown


async def websim(rendering: Rendering, context: Any, url: str) -> tuple[set[str], int, float]:
    """Render with the browser module and follow script pagination as the crawl does."""
    started = time.monotonic()
    page = await context.new_page()
    await page.route("**", lambda route: route.continue_())
    await rendering.guard(page)
    await page.goto(url, wait_until="load")
    await rendering.render(page, screenshot=False)
    html, number, seen = await page.content(), 1, set()
    while True:
        seen.update(titles_in(html))
        found = next_page(parse_html(html), page.url, number)
        if found is None or found.control is None or number >= 10:
            break
        rendered = await rendering.click_next(page, found.control, screenshot=False)
        html, number = rendered.html, number + 1
    await page.close()
    return seen, number, time.monotonic() - started


async def recall_table(site_url: str, stable: float) -> list[dict[str, Any]]:
    """Measure (a) for every pattern."""
    counters: Counter[str] = Counter()
    params = RenderParams(scrolls=10)
    rendering = Rendering(
        params,
        max_response_bytes=16 << 20,
        count=lambda key: counters.update([key]),
        sites=[site_url],
    )
    await rendering.start()
    rows = []
    async with async_playwright() as playwright:
        plain = await playwright.chromium.launch(
            executable_path=params.chromium_path, args=["--no-sandbox", "--disable-gpu"]
        )
        confined = await playwright.chromium.launch(**rendering.launch_options())
        rendering.watch(confined.close)
        plain_context = await plain.new_context(viewport=CONTEXT_OPTIONS["viewport"])
        confined_context = await confined.new_context(**CONTEXT_OPTIONS)
        for pattern in scripted.PATTERNS:
            url = f"{site_url}js/patterns/{pattern}"
            expected = await reference(plain_context, url, pattern, stable)
            loaded = await at_load(plain_context, url)
            found, pages, seconds = await websim(rendering, confined_context, url)
            rows.append(
                {
                    "pattern": pattern,
                    "reference": len(expected),
                    "load recall": len(loaded & expected) / len(expected),
                    "websim recall": len(found & expected) / len(expected),
                    "pages": pages,
                    "s per page": seconds / pages,
                }
            )
        await confined.close()
        await plain.close()
    await rendering.close()
    return rows


async def memory_peak(page_url: str) -> tuple[int, int, str]:
    """Measure (b): the peak summed private memory, the watchdog's kills, how the page ended."""
    counters: Counter[str] = Counter()
    rendering = Rendering(
        RenderParams(),
        max_response_bytes=16 << 20,
        count=lambda key: counters.update([key]),
        sites=[page_url],
    )
    await rendering.start()
    peak = 0

    async def sample() -> None:
        nonlocal peak
        while True:
            total = 0
            for process in chromium_processes():
                try:
                    total += private_bytes(process)
                except Exception:
                    continue
            peak = max(peak, total)
            await asyncio.sleep(0.02)

    sampler = asyncio.get_running_loop().create_task(sample())
    outcome = "stored"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**rendering.launch_options())
        rendering.watch(browser.close)
        context = await browser.new_context(**CONTEXT_OPTIONS)
        page = await context.new_page()
        await page.route("**", lambda route: route.continue_())
        guard = await rendering.guard(page)
        try:
            await page.goto(page_url, wait_until="load")
            await rendering.render(page, screenshot=False)
        except Exception as exc:
            outcome = f"refused ({guard.refused or type(exc).__name__})"
        await browser.close()
    sampler.cancel()
    await rendering.close()
    return peak, counters["websim/render/memory_kills"], outcome


def hostile_crawl() -> tuple[list[str], int, dict[str, Any]]:
    """Measure (c): a rendered site crawl of the hostile pages."""
    internal = InternalService()
    site = HostileSite(internal.port)
    with tempfile.TemporaryDirectory() as folder:
        output, stats_file = Path(folder) / "pages.jsonl", Path(folder) / "stats.json"
        command = [
            sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={site.url}",
            "-a", "render=1", "-O", str(output), "-s", "ROBOTSTXT_OBEY=False",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "RETRY_ENABLED=False",
            "-s", "DOWNLOAD_MAXSIZE=2000000", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
            "-s", "LOG_LEVEL=WARNING",
        ]  # fmt: skip
        environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        subprocess.run(command, cwd=REPO, env=environment, check=True, timeout=600)
        stored = ["/" + json.loads(line)["url"].split("/", 3)[3] for line in output.open()]
        stats = json.loads(stats_file.read_text())
    site.stop()
    internal.stop()
    return stored, internal.connections, stats


_ADAPTIVE_PER_PAGE = 20
_ADAPTIVE_SEARCH = """<!doctype html><html><head><title>Search: %(query)s</title></head><body>
<nav><a href="/">Home</a> <a href="/%(variant)s/">Search</a></nav>
<h1>Results for %(query)s</h1><ol id="results"></ol><p id="pager"></p>
<script>
fetch("/api/search?" + new URLSearchParams({q: %(query_json)s, page: %(page)d}))
  .then(r => r.json()).then(data => {
    const list = document.getElementById("results");
    for (const hit of data.results) {
      const item = document.createElement("li");
      item.className = "result";
      item.innerHTML = '<h3><a href="/%(variant)s/record/' + hit.number + '"></a></h3><p></p>';
      item.querySelector("a").textContent = hit.title;
      item.querySelector("p").textContent = hit.snippet;
      list.appendChild(item);
    }
    if (%(page)d < data.pages) {
      const next = document.createElement("a");
      next.rel = "next";
      const after = new URLSearchParams({q: %(query_json)s, page: %(page)d + 1});
      next.href = "/%(variant)s/search?" + after;
      next.textContent = "Next";
      document.getElementById("pager").appendChild(next);
    }
  });
</script></body></html>"""
_ADAPTIVE_RECORD_SCRIPT = """<script>
fetch("/api/record/%(number)d").then(r => r.json()).then(record => {
  document.querySelector("h1").textContent = record.title;
  const body = document.getElementById("body");
  for (const text of record.paragraphs) {
    const paragraph = document.createElement("p");
    paragraph.textContent = text;
    body.appendChild(paragraph);
  }
});
</script>"""


def adaptive_site(records: int) -> Any:
    """Serve the two variants of (d) on 127.0.0.1; return the server (``server.url``)."""
    import threading
    from html import escape
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    from websim_crawler.demo.site import Archive

    corpus = Archive.bundled().records
    entries = [(number, corpus[number % len(corpus)]) for number in range(1, records + 1)]

    def entry(number: int) -> dict[str, Any]:
        base = corpus[number % len(corpus)]
        return {
            "number": number,
            "topic": base.topic,
            "title": f"{base.title}, note {number}",
            "paragraphs": list(base.paragraphs),
        }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            segments = parts.path.strip("/").split("/")
            if parts.path == "/api/search":
                hits = [entry(n) for n, base in entries if base.topic == query.get("q", "")]
                page = int(query.get("page", "1"))
                shown = hits[(page - 1) * _ADAPTIVE_PER_PAGE : page * _ADAPTIVE_PER_PAGE]
                pages = max(1, -(-len(hits) // _ADAPTIVE_PER_PAGE))
                results = [{**hit, "snippet": hit["paragraphs"][0][:120]} for hit in shown]
                self.send(json.dumps({"results": results, "pages": pages}), "application/json")
            elif segments[:2] == ["api", "record"]:
                self.send(json.dumps(entry(int(segments[2]))), "application/json")
            elif len(segments) == 1 or segments[1] == "":
                form = (
                    f'<form action="/{segments[0]}/search" method="get">'
                    '<input type="search" name="q"><button>Search</button></form>'
                )
                self.send(f"<!doctype html><title>Archive</title><h1>Archive</h1>{form}")
            elif segments[1] == "search":
                page = int(query.get("page", "1"))
                values = {
                    "variant": segments[0],
                    "query": escape(query.get("q", "")),
                    "query_json": json.dumps(query.get("q", "")),
                    "page": page,
                }
                self.send(_ADAPTIVE_SEARCH % values)
            elif segments[1] == "record":
                record = entry(int(segments[2]))
                if segments[0] == "plain-records":
                    body = "".join(f"<p>{escape(text)}</p>" for text in record["paragraphs"])
                    heading, script = escape(record["title"]), ""
                else:
                    body, heading = "", "Loading"
                    script = _ADAPTIVE_RECORD_SCRIPT % {"number": record["number"]}
                self.send(
                    f"<!doctype html><html><head><title>Record</title></head><body>"
                    f'<nav><a href="/">Home</a></nav><h1>{heading}</h1><div id="body">{body}'
                    f"</div>{script}</body></html>"
                )
            else:
                self.send("<title>Not found</title>", status=404)

        def send(self, text: str, kind: str = "text/html", status: int = 200) -> None:
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.url = f"http://127.0.0.1:{server.server_address[1]}/"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def adaptive_crawl(start_url: str, queries: list[str], render: str) -> tuple[set[str], float, dict]:
    """Crawl with ``render``; return (record URLs stored with their content, seconds, stats)."""
    with tempfile.TemporaryDirectory() as folder:
        output, stats_file = Path(folder) / "pages.jsonl", Path(folder) / "stats.json"
        command = [
            sys.executable, "-m", "scrapy", "crawl", "deepweb", "-O", str(output),
            "-a", f"start_url={start_url}", "-a", f"queries={','.join(queries)}",
            "-a", "follow=1", "-a", f"render={render}", "-a", "max_pages=100",
            "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "ROBOTSTXT_OBEY=False",
            "-s", f"WEBSIM_STATS_OUTPUT={stats_file}", "-s", "LOG_LEVEL=WARNING",
            "-s", "WEBSIM_CHUNK_DETAIL=none",
        ]  # fmt: skip
        environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
        started = time.perf_counter()
        subprocess.run(command, cwd=REPO, env=environment, check=True, timeout=3600)
        seconds = time.perf_counter() - started
        stored = set()
        for line in output.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            number = item["url"].rsplit("/", 1)[-1]
            if item["kind"] == "record" and f"note {number}" in (item.get("main_text") or ""):
                stored.add(item["url"])
        return stored, seconds, json.loads(stats_file.read_text(encoding="utf-8"))


def adaptive_table(records: int, queries: int) -> None:
    """(d): render=1 against render=auto on both variants of the adaptive site."""
    from websim_crawler.demo.site import Archive

    topics = sorted({record.topic for record in Archive.bundled().records})[:queries]
    server = adaptive_site(records)
    print(f"(d) adaptive rendering: {records} records over {len(topics)} topic queries")
    print("| variant | render | records with content | recall vs render=1 | seconds | "
          "pages rendered | time vs render=1 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    try:
        for variant in ("plain-records", "scripted-records"):
            start_url = f"{server.url}{variant}/"
            reference, reference_seconds, reference_stats = adaptive_crawl(start_url, topics, "1")
            auto, seconds, stats = adaptive_crawl(start_url, topics, "auto")
            rows = (
                ("1", reference, reference_seconds, reference_stats),
                ("auto", auto, seconds, stats),
            )
            for render, stored, elapsed, counts in rows:
                recall = len(stored & reference) / max(1, len(reference))
                print(
                    f"| {variant} | {render} | {len(stored)} | {recall:.3f} | {elapsed:.1f} | "
                    f"{counts.get('playwright/page_count', 0)} | "
                    f"{elapsed / reference_seconds:.2f}x |"
                )
    finally:
        server.shutdown()


def repeated_table(records: int, queries: int, runs: int) -> None:
    """(e): the same rendered crawl ``runs`` times in a row: records stored in each run, the
    spread, recall against every record any run stored, and what was refused or deferred."""
    from websim_crawler.demo.site import Archive

    topics = sorted({record.topic for record in Archive.bundled().records})[:queries]
    server = adaptive_site(records)
    print(f"(e) {runs} runs of render=1 on scripted-records ({records} records, {queries} queries)")
    print("| run | records with content | refused (render_memory) | deferred | retried alone |")
    print("|---|---|---|---|---|")
    stored_by_run = []
    try:
        for run in range(1, runs + 1):
            stored, _seconds, stats = adaptive_crawl(f"{server.url}scripted-records/", topics, "1")
            stored_by_run.append(stored)
            print(
                f"| {run} | {len(stored)} | {stats.get('websim/pages/failed/render_memory', 0)} | "
                f"{stats.get('websim/render/deferred', 0)} | "
                f"{stats.get('websim/render/retried_alone', 0)} |"
            )
    finally:
        server.shutdown()
    union = set().union(*stored_by_run)
    recalls = [len(stored) / max(1, len(union)) for stored in stored_by_run]
    print(
        f"\nrecall against the union ({len(union)} records) per run: "
        + ", ".join(f"{recall:.3f}" for recall in recalls)
        + f"; spread {max(recalls) - min(recalls):.3f} (target 0)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements and print their tables (or only (d) with ``--adaptive``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--stable", type=float, default=3.0, help="reference stability (s)")
    parser.add_argument("--adaptive", action="store_true", help="run (d) only")
    parser.add_argument("--records", type=int, default=400, help="(d): records of the site")
    parser.add_argument("--queries", type=int, default=5, help="(d): topic queries")
    parser.add_argument("--runs", type=int, default=0, help="run (e) only: N rendered crawls")
    args = parser.parse_args(argv)
    if args.runs:
        repeated_table(args.records, args.queries, args.runs)
        return 0
    if args.adaptive:
        adaptive_table(args.records, args.queries)
        return 0
    with DemoSite() as site:
        rows = asyncio.run(recall_table(site.url, args.stable))
    print("| pattern | reference results | recall at load | websim recall | result pages | "
          "websim s/page |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['pattern']} | {row['reference']} | {row['load recall']:.2f} | "
            f"{row['websim recall']:.2f} | {row['pages']} | {row['s per page']:.2f} |"
        )
    total_pages = sum(row["pages"] for row in rows)
    mean = sum(row["s per page"] * row["pages"] for row in rows) / total_pages
    worst = min(row["websim recall"] for row in rows)
    print(f"\nlowest websim recall {worst:.3f} (target >= 0.95); {mean:.2f} s per rendered page")

    internal = InternalService()
    hostile = HostileSite(internal.port)
    peak, kills, outcome = asyncio.run(memory_peak(hostile.url + "memory.html"))
    hostile.stop()
    internal.stop()
    print(
        f"\n4 GB page: peak Chromium private memory {peak / 2**20:.0f} MiB "
        f"(target <= 1536), watchdog kills {kills}, page {outcome}"
    )

    stored, connections, stats = hostile_crawl()
    hostile_stored = sorted(set(stored) & set(DROPPED))
    print(
        f"\nhostile crawl: {len(stored)} pages stored ({sorted(set(stored) - {'/'})}, expected "
        f"{sorted(STORED)}); hostile pages stored: {hostile_stored or 'none'}; connections to "
        f"the internal port: {connections}"
    )
    for key in sorted(stats):
        if key.startswith(("websim/pages/failed", "websim/pages/dropped", "websim/render/")):
            print(f"  {key}: {stats[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
