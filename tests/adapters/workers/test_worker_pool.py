"""The analysis pool: pages analysed in worker processes, within a budget of elements, time and
memory per page, and a crawl that stays live and small while a site serves monster pages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pebble
import psutil
import pytest
import pytest_twisted
from conftest import serve_directory
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from support.load import every_core_busy

from websim_crawler.config.pool import PoolParams
from websim_crawler.core.page import AnalysisParams
from websim_crawler.pipelines import PageAnalysisPipeline
from websim_crawler.workers import pool as pool_module
from websim_crawler.workers.pool import DEFERRAL_RETRIES, AnalysisPool
from websim_crawler.workers.tasks import PageOutcome

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
ORDINARY_PAGES = sorted((TESTS / "support" / "site").glob("*.html")) + sorted(
    (TESTS / "support" / "pages_site").glob("*.html")
)


def many_divs(count: int) -> str:
    """A page of ``count`` one-digit divs (12 bytes each: 1,000,000 make 12 MB)."""
    return f"<html><body>{'<div>7</div>' * count}</body></html>"


def long_table(rows: int) -> str:
    """A page holding one table of ``rows`` one-cell rows."""
    return f"<html><body><table>{'<tr><td>1</td></tr>' * rows}</table></body></html>"


def pool_of(workers: int, **budget: Any) -> AnalysisPool:
    return AnalysisPool(
        AnalysisParams(), PoolParams(chunk_detail="full", workers=workers, **budget)
    )


@pytest.fixture(scope="module")
def pool() -> Iterator[AnalysisPool]:
    """Two workers with a 1 CPU s budget, shared by the tests of this module."""
    shared = pool_of(2, timeout=1.0)
    yield shared
    shared.close()


def test_monster_pages_are_dropped_within_budget_and_the_others_come_through(
    pool: AnalysisPool,
) -> None:
    pages: dict[str, str | bytes] = {
        "http://monsters.test/divs": many_divs(1_000_000),
        "http://monsters.test/table": long_table(400_000),
    }
    ordinary = {
        f"http://ordinary{n}.test/": path.read_bytes() for n, path in enumerate(ORDINARY_PAGES)
    }
    futures = {url: pool.submit(html, url) for url, html in {**pages, **ordinary}.items()}
    outcomes = {url: future.result(timeout=120) for url, future in futures.items()}
    assert outcomes["http://monsters.test/divs"].dropped == "too_many_elements"
    assert outcomes["http://monsters.test/table"].dropped == "too_many_elements"
    in_process = pool_of(0)
    for url, html in ordinary.items():
        assert outcomes[url] == in_process.submit(html, url).result(), url
    assert sum(outcomes[url].record is not None for url in ordinary) >= 10


def test_a_page_over_its_time_is_dropped_and_its_worker_replaced(pool: AnalysisPool) -> None:
    """The page (3 s of CPU time or more) uses its own CPU budget up: refused, its worker ended
    by the kernel and replaced. On a quiet machine it is refused at once; with every core busy
    (the suite's other processes) its worker may be starved past the wall-time backstop first,
    and the page is tried again with fewer pages beside it, as the pool is built to."""
    slow = pool.submit(many_divs(150_000), "http://slow.test/")
    outcome = slow.result(timeout=120)
    assert outcome.dropped == "analysis_timeout" and outcome.deferred <= DEFERRAL_RETRIES, outcome
    assert "CPU time" in outcome.message
    after = pool.submit(
        (TESTS / "support" / "pages_site" / "volcanoes.html").read_bytes(), "http://v.test/"
    )
    record = after.result(timeout=120).record
    assert record is not None and "lava" in record["main_text"]


def test_a_worker_that_dies_is_counted_and_replaced() -> None:
    crashing = pool_of(1, timeout=120.0)
    try:
        rivers = (TESTS / "support" / "pages_site" / "rivers.html").read_bytes()
        assert crashing.submit(rivers, None).result(timeout=120).record is not None  # warm
        slow = crashing.submit(many_divs(150_000), "http://slow.test/")
        worker = _busy_worker()
        worker.kill()
        outcome = slow.result(timeout=120)
        assert outcome.failed == "worker_crash" and outcome.record is None, outcome.message
        assert crashing.submit(rivers, None).result(timeout=120).record is not None
    finally:
        crashing.close()


def _busy_worker() -> psutil.Process:
    """Return the worker process (a child of the fork server) once it is analysing."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for child in psutil.Process().children(recursive=True):
            if (
                "forkserver" in " ".join(child.cmdline())
                and child.parent().pid != psutil.Process().pid
            ) and child.cpu_percent(interval=0.2) > 20:
                return child
        time.sleep(0.1)
    raise AssertionError("no busy worker found")


@pytest.mark.slow
def test_a_page_over_the_memory_cap_is_dropped_as_too_large() -> None:
    capped = pool_of(1, timeout=120.0, worker_memory_mb=150)
    try:
        outcome = capped.submit(many_divs(150_000), "http://big.test/").result(timeout=120)
        assert outcome.dropped == "too_large"
        after = capped.submit((TESTS / "support" / "pages_site" / "rivers.html").read_bytes(), None)
        assert after.result(timeout=120).record is not None  # the same worker goes on
    finally:
        capped.close()


def test_results_do_not_depend_on_the_workers_or_the_order(pool: AnalysisPool) -> None:
    pages = [
        (f"http://site{n}.test/page", path.read_bytes()) for n, path in enumerate(ORDINARY_PAGES)
    ]
    in_process = pool_of(0)
    expected = {url: in_process.submit(html, url).result() for url, html in pages}
    futures = {url: pool.submit(html, url) for url, html in reversed(pages)}
    got = {url: future.result(timeout=120) for url, future in futures.items()}
    assert got == expected
    assert sum(outcome.record is not None for outcome in got.values()) >= 10


def slowly(pages: list[Any]) -> Iterator[Any]:
    """Yield the pages as a slow source would (a feed read over the network): the pages in
    flight have finished before the next one is sent."""
    for page in pages:
        time.sleep(0.05)
        yield page


def site_template_fates(workers: int, max_pending: int) -> list[str]:
    """The fate of the chunk every page of one site repeats, page by page, through ``map``."""
    pages = [
        (
            f"""<html><body><div>
            <div>Visit our friendly store for gardening tools and seeds.</div>
            <div>Record {number} describes tomato variety {number} grown in {number} pots.</div>
            </div></body></html>""",
            f"http://shop.test/r{number}",
            None,
        )
        for number in range(24)
    ]
    mapped = AnalysisPool(
        AnalysisParams(),
        PoolParams(chunk_detail="full", workers=workers, max_pending=max_pending),
        fork_from_caller=True,
    )
    try:
        return [
            next(
                f"{chunk['fate']}:{chunk['reason']}"
                for chunk in outcome.record["chunks"]
                if chunk["text"].startswith("Visit")
            )
            for outcome in mapped.map(slowly(pages))
            if outcome.record is not None
        ]
    finally:
        mapped.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_map_gives_each_page_the_template_of_the_pages_max_pending_before_it(
    workers: int,
) -> None:
    # Recorded as they came back, the template a page saw depended on which pages had finished
    # when it was sent: the records changed from run to run. Recorded in the order pages were
    # sent, the k-th page sees the pages up to the (k - max_pending)-th, always. The chunk is
    # template once seen on 3 (WEBSIM_TEMPLATE_MIN_PAGES) earlier pages: from the 3 + 4 = 7th on.
    fates = site_template_fates(workers, max_pending=4)
    assert fates == ["kept:"] * 6 + ["duplicate:site_template"] * 18


@pytest.mark.slow
def test_workers_forked_from_the_caller_keep_the_budgets_and_the_results() -> None:
    """``websim extract`` forks its workers from itself: same budgets, same records."""
    forked = AnalysisPool(
        AnalysisParams(),
        PoolParams(chunk_detail="full", workers=2, timeout=3.0, worker_memory_mb=150),
        fork_from_caller=True,
    )
    try:
        slow = forked.submit(many_divs(150_000), "http://slow.test/")
        pages = [(f"http://site{n}.test/", p.read_bytes()) for n, p in enumerate(ORDINARY_PAGES)]
        futures = {url: forked.submit(html, url) for url, html in pages}
        in_process = pool_of(0)
        for url, html in pages:
            assert futures[url].result(timeout=120) == in_process.submit(html, url).result(), url
        assert slow.result(timeout=120).dropped in {"analysis_timeout", "too_large"}
        after = forked.submit((TESTS / "support" / "pages_site" / "rivers.html").read_bytes(), None)
        assert after.result(timeout=120).record is not None  # the replaced worker goes on
    finally:
        forked.close()


def test_template_memory_is_kept_across_workers() -> None:
    """Pages sent one after the other see the site's chunks recorded from the earlier ones."""
    banner = "<div>Welcome to the volcano observatory online shop and museum.</div>"
    pages = [
        f"<html><body>{banner}<div><p>Report {n} on volcano gas and lava.</p></div></body></html>"
        for n in range(4)
    ]
    for workers in (0, 2):
        memory_pool = AnalysisPool(
            AnalysisParams(template_min_pages=2), PoolParams(chunk_detail="full", workers=workers)
        )
        try:
            fates = []
            for n, html in enumerate(pages):
                record = memory_pool.submit(html, f"http://v.test/{n}").result(timeout=120).record
                assert record is not None
                fates.append(next(c["fate"] for c in record["chunks"] if "Welcome" in c["text"]))
        finally:
            memory_pool.close()
        assert fates == ["kept", "kept", "duplicate", "duplicate"], workers


@pytest_twisted.inlineCallbacks
def test_pipeline_bounds_pages_in_flight_and_drains_on_close() -> Any:
    crawler = get_crawler(
        settings_dict={"WEBSIM_ANALYSIS_WORKERS": 2, "WEBSIM_ANALYSIS_MAX_PENDING": 2}
    )
    pipeline = build_from_crawler(PageAnalysisPipeline, crawler)
    in_flight, most = [0], [0]
    submit = pipeline.pool.submit
    lock = threading.Lock()

    def counting_submit(*args: Any, **kwargs: Any) -> Any:
        future = submit(*args, **kwargs)
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])

        def done(_future: Any) -> None:
            with lock:
                in_flight[0] -= 1

        future.add_done_callback(done)
        return future

    pipeline.pool.submit = counting_submit  # type: ignore[method-assign,assignment]
    items = [
        {"url": f"http://site{n}.test/", "html": path.read_bytes()}
        for n, path in enumerate(ORDINARY_PAGES * 2)
    ]
    pending = [deferred_from_coro(pipeline.process_item(item)) for item in items]
    for deferred in pending:
        deferred.addErrback(lambda failure: failure.value)  # dropped pages: a DropItem
    yield deferred_from_coro(pipeline.close_spider())
    assert all(deferred.called for deferred in pending)
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    dropped = sum(value for key, value in stats.items() if "/dropped/" in key)
    assert stats["websim/pages/analysed"] + dropped == len(items)
    assert stats["websim/pages/analysed"] >= len(items) - 2
    assert 1 <= most[0] <= 2


def _serve_monster_site(folder: Path) -> list[str]:
    """Write a site of ordinary pages and four monsters; return the ordinary pages' names."""
    ordinary = []
    for path in [page for page in ORDINARY_PAGES if page.name != "index.html"][:6]:
        (folder / path.name).write_bytes(path.read_bytes())
        ordinary.append(path.name)
    (folder / "divs.html").write_text(many_divs(1_000_000))
    (folder / "table.html").write_text(long_table(400_000))
    (folder / "slow.html").write_text(many_divs(150_000))
    names = [*ordinary, "divs.html", "table.html", "slow.html"]
    links = "".join(f'<li><a href="{name}">{name}</a></li>' for name in names)
    (folder / "index.html").write_text(f"<html><body><ul>{links}</ul></body></html>")
    return ordinary


@pytest.mark.slow
def test_crawl_of_a_site_with_monster_pages_stays_live_and_small(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    ordinary = _serve_monster_site(site)
    server, url = serve_directory(site)
    output = tmp_path / "pages.jsonl"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={url}/index.html",
        "-O", str(output), "-s", "LOG_LEVEL=INFO", "-s", "LOGSTATS_INTERVAL=1",
        "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "ROBOTSTXT_OBEY=False",
        "-s", "WEBSIM_ANALYSIS_WORKERS=2", "-s", "WEBSIM_ANALYSIS_TIMEOUT=1",
        "-s", "WEBSIM_STATS_OUTPUT=" + str(tmp_path / "stats.json"),
    ]  # fmt: skip
    try:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        log: list[str] = []
        reader = threading.Thread(target=lambda: log.append(process.stderr.read()))  # type: ignore[union-attr]
        reader.start()
        peak = _peak_tree_memory(process, deadline=time.monotonic() + 120)
        reader.join()
    finally:
        server.shutdown()
        server.server_close()
    text = "".join(log)
    assert process.returncode == 0, text[-3000:]
    assert "Disabled" not in text  # no warnings for the stages that were not asked for
    assert "<p>" not in text and "'chunks'" not in text  # items are logged as one line
    items = [json.loads(line) for line in output.read_text().splitlines()]
    names = {item["url"].rsplit("/", 1)[-1] for item in items}
    assert set(ordinary) <= names
    assert not names & {"divs.html", "table.html", "slow.html"}
    stats = json.loads((tmp_path / "stats.json").read_text())
    # The spider parses no page over the element budget: it skips them, counted.
    assert stats["websim/pages/skipped/too_many_elements"] == 2
    assert stats["websim/pages/dropped/analysis_timeout"] == 1
    assert peak < 1024**3, f"peak memory of the crawl's processes: {peak / 2**20:.0f} MB"
    # LogStats went on logging while the slow pages were analysed.
    dropped_at = [
        _seconds(line)
        for line in text.splitlines()
        if "analysis_timeout" in line and "Dropped" in line
    ]
    logged_at = [
        _seconds(line) for line in text.splitlines() if "[scrapy.extensions.logstats]" in line
    ]
    assert dropped_at and any(
        sum(drop - 3 <= at <= drop for at in logged_at) >= 2 for drop in dropped_at
    ), text[-3000:]


def _peak_tree_memory(process: subprocess.Popen[str], deadline: float) -> int:
    """Sample the memory of a process and its descendants until it ends.

    Each process counts its proportional set size (PSS: its private pages and its share of the
    pages it shares): the workers share the fork server's libraries and modules, which a sum of
    resident sizes would count once per process.
    """
    watched = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the crawl took over its generous timeout")
        try:
            tree = [watched, *watched.children(recursive=True)]
            peak = max(peak, sum(member.memory_full_info().pss for member in tree))
        except psutil.Error:
            pass
        time.sleep(0.05)
    return peak


_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d (\d\d):(\d\d):(\d\d)")


def _seconds(line: str) -> int:
    found = _TIME_RE.match(line)
    assert found, line
    hours, minutes, seconds = map(int, found.groups())
    return hours * 3600 + minutes * 60 + seconds


def test_workers_that_cannot_start_fail_each_page_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that cannot fork (no memory, a process limit): a counted failure per page."""
    broken = pool_of(2)

    def cannot_fork() -> Any:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(broken, "_process_pool", cannot_fork)
    broken.start()  # logged, not raised: the crawl goes on and counts its pages
    outcome = broken.submit(b"<html><body><p>Honey bees.</p></body></html>", None).result()
    assert (outcome.failed, outcome.record) == ("worker_crash", None)
    assert "cannot run" in outcome.message and "unavailable" in outcome.message


def test_a_pool_looks_at_its_workers_at_least_every_poll_interval() -> None:
    # pebble's default, 0.1 s, is how long closing a pool waited for its threads.
    pool = AnalysisPool(AnalysisParams(), PoolParams(workers=1), fork_from_caller=True)
    try:
        assert pool.submit(b"<html><body><p>Honey bees.</p></body></html>", None).result().record
        assert pebble.CONSTS.sleep_unit <= pool_module.POOL_POLL_SECONDS < 0.1
    finally:
        pool.close()


@pytest.mark.parametrize("fork_from_caller", [False, True])
def test_workers_are_forked_warm(fork_from_caller: bool) -> None:
    warm = AnalysisPool(AnalysisParams(), PoolParams(workers=1), fork_from_caller=fork_from_caller)
    try:
        # Before any page, the worker already holds the keyword memo the warm-up page filled.
        memo = "__import__('websim_crawler.core.text').core.text._keyword_table.cache_info()"
        probe = warm._process_pool().schedule(eval, args=(f"{memo}.currsize",))
        assert probe.result(timeout=60) >= 1
    finally:
        warm.close()


@pytest.fixture
def short_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wall-time backstop of 1.25 s for a 0.25 CPU s budget (2.5 s, then 5 s, when tried
    again), so that the deferrals below take seconds, not minutes."""
    monkeypatch.setattr(pool_module, "WALL_BACKSTOP", 1.0)


@pytest.mark.slow
@pytest.mark.usefixtures("short_backstop")
def test_a_page_slowed_only_by_the_wall_clock_is_deferred_then_refused_alone() -> None:
    """A task that uses no CPU but outlasts the wall-time backstop (a starved worker looks
    the same to the pool) is tried again with fewer pages beside it, then alone, each time with
    twice the backstop, and refused only when it fails alone."""
    waiting = pool_of(2, timeout=0.25)
    try:
        outcome = waiting._schedule(time.sleep, (60,)).result(timeout=120)
        assert waiting.allowed_at_once == 1
    finally:
        waiting.close()
    assert outcome.dropped == "analysis_timeout" and outcome.deferred == DEFERRAL_RETRIES
    assert "s of wall time alone in the pool" in outcome.message


def crowded_task(registry: str, name: str) -> PageOutcome:
    """A task that takes 0.3 s alone and stalls if another one runs at any time beside it (a
    page that fits its budget alone, on a machine too crowded for two).

    Its first try waits (up to 60 s) for another task to run beside it, so the first tries
    crowd each other however far apart a loaded machine starts the workers: each ends at its
    backstop.
    """
    running = Path(registry, "running")
    mine = running / str(os.getpid())
    mine.touch()
    try:
        tried = Path(registry, "tried", name)
        first_try = not tried.exists()
        tried.touch()
        crowded = False
        ends = time.monotonic() + (60.0 if first_try else 0.3)
        while not crowded and time.monotonic() < ends:
            crowded = any(other != mine and _alive(int(other.name)) for other in running.iterdir())
            time.sleep(0.02)
        if crowded:
            time.sleep(60)
        return PageOutcome(record={"name": name})
    finally:
        mine.unlink()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a worker killed at its backstop may linger as a zombie)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
@pytest.mark.usefixtures("short_backstop")
def test_pages_that_fit_alone_but_not_together_are_all_analysed(tmp_path: Path) -> None:
    """Four tasks started at once, each of which stalls beside another: the pool halves the
    pages it analyses at once and retries them, alone at last; none is refused."""
    crowded = pool_of(4, timeout=0.25)
    (tmp_path / "running").mkdir()
    (tmp_path / "tried").mkdir()
    try:
        futures = [crowded._schedule(crowded_task, (str(tmp_path), f"t{n}")) for n in range(4)]
        outcomes = [future.result(timeout=120) for future in futures]
        lowered = crowded.allowed_at_once
    finally:
        crowded.close()
    assert [outcome.dropped or outcome.failed for outcome in outcomes] == [None] * 4
    assert [outcome.record for outcome in outcomes] == [{"name": f"t{n}"} for n in range(4)]
    assert all(outcome.deferred > 0 for outcome in outcomes)  # the first tries crowded
    assert lowered < 4


def test_with_every_core_busy_pages_within_their_cpu_budget_are_all_analysed() -> None:
    """The budget is the page's own CPU time: processes spinning on every core slow the
    workers' wall clock, and still no page that fits its budget is dropped."""
    loaded = pool_of(2, timeout=1.0)
    pages = [path.read_bytes() for path in ORDINARY_PAGES] * 3
    urls = [f"http://p{n}.test/" for n in range(len(pages))]
    try:
        with every_core_busy():
            outcomes = list(loaded.map(zip(pages, urls, [None] * len(pages), strict=True)))
    finally:
        loaded.close()
    assert [outcome.dropped for outcome in outcomes if outcome.dropped] == []
    assert all(outcome.failed is None for outcome in outcomes)
