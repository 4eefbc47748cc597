"""JOBDIR: a crawl stopped by SIGTERM and resumed ends with the pages and clusters of one run."""

from __future__ import annotations

import json
import re
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from conftest import analysed
from scrapy.utils.defer import deferred_from_coro
from support.crawl_runs import (
    QUERIES,
    in_flight_in_frontier,
    run_crawl,
    serve_slow_demo,
    stage_pipelines,
)

from websim_crawler.core.io import ReadReport, iter_jsonl
from websim_crawler.core.page import SiteTemplateMemory
from websim_crawler.demo.site import DemoSite
from websim_crawler.frontier.jobdir_scheduler import FRONTIER_FILE, SqliteFrontier
from websim_crawler.frontier.jobdir_state import load_state, save_state, state_path
from websim_crawler.pipelines._collection import StageJournal

REPO = Path(__file__).resolve().parents[3]


def test_state_round_trip_and_bad_files_start_afresh(tmp_path: Path) -> None:
    settings = {"JOBDIR": str(tmp_path / "job")}
    assert state_path({}, "x") is None
    save_state({}, "x", {"a": 1})  # no JOBDIR: nothing written
    assert load_state(settings, "x", dict) is None
    save_state(settings, "x", {"a": 1})
    assert load_state(settings, "x", dict) == {"a": 1}
    path = state_path(settings, "x")
    assert path is not None
    path.write_text("{truncated", encoding="utf-8")
    assert load_state(settings, "x", dict) is None
    path.write_text('{"sites": 3}', encoding="utf-8")
    assert load_state(settings, "x", SiteTemplateMemory.from_dict) is None  # malformed


def test_stage_journal_replays_whole_lines_and_cuts_off_a_cut_one(tmp_path: Path) -> None:
    path = tmp_path / "websim-cluster-journal.jsonl"
    journal = StageJournal(path)
    assert journal.replay() == []
    journal.append({"url": "http://a/1", "keywords": {"bee": 2}})
    journal.append("no_keywords")  # a record skipped before the stage: its reason
    journal.close()
    assert path.read_text(encoding="utf-8").splitlines()[1] == '{"skipped":"no_keywords"}'
    with path.open("ab") as handle:
        handle.write(b'{"url": "http://a/2", "keyw')  # a SIGKILL in the middle of a line
    resumed = StageJournal(path)
    assert resumed.replay() == [
        {"url": "http://a/1", "keywords": {"bee": 2}},
        "no_keywords",
    ]
    assert (resumed.replayed, resumed.lost) == (2, 1)
    resumed.append({"url": "http://a/3"})  # appended after the last whole line
    resumed.close()
    again = StageJournal(path)
    assert [entry if isinstance(entry, str) else entry.get("url") for entry in again.replay()] == [
        "http://a/1",
        "no_keywords",
        "http://a/3",
    ]
    assert again.lost == 0


def page(number: int) -> dict[str, object]:
    body = "".join(
        f"<p>Unique paragraph {number} about topic {number} number {i}.</p>" for i in range(4)
    )
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/about'>About this archive</a></nav>"
        f"<article><h1>Page {number}</h1>{body}</article>"
        "<footer>Copyright the archive volunteers, all rights reserved.</footer></body></html>"
    )
    return {"url": f"http://s.org/{number}", "kind": "record", "html": html}


@pytest_twisted.inlineCallbacks
def test_pipelines_save_and_restore_their_state(tmp_path: Path) -> Any:
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "WEBSIM_CLUSTERS_OUTPUT": str(tmp_path / "clusters.json"),
        "WEBSIM_CLUSTERS_N": 2,
        "WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "pairs.json"),
        "WEBSIM_NEARDUP_OUTPUT": str(tmp_path / "neardup.json"),
        "WEBSIM_ANALYSIS_WORKERS": 0,
        "WEBSIM_CHUNK_DETAIL": "full",
    }
    _, analysis, stages = stage_pipelines(settings)
    for number in range(5):
        item = analysed(analysis, page(number))
        for stage in stages:
            analysed(stage, item)
    yield deferred_from_coro(analysis.close_spider())
    # The stages are not closed: as after a SIGKILL, only their journals are left.
    for stage in stages:
        assert stage.journal is not None
        stage.journal.close()

    _, resumed_analysis, resumed = stage_pipelines(settings)
    assert resumed_analysis.pool.site_memory.to_dict() == analysis.pool.site_memory.to_dict()
    assert len(resumed_analysis.pool.site_memory) > 0
    resumed_pages, pages = resumed[0].stage.pages, stages[0].stage.pages
    assert resumed_pages.urls == pages.urls
    assert len(resumed_pages) == 5
    assert [resumed_pages.keyword_counts(row) for row in range(5)] == [
        pages.keyword_counts(row) for row in range(5)
    ]
    assert resumed_pages.form_votes == pages.form_votes
    assert [p.url for p in resumed[1].stage.pages] == [p.url for p in stages[1].stage.pages]
    assert resumed[2].stage.pages_seen == 5
    # The footer, seen on 5 pages before, is template for the resumed pipeline at once.
    item = analysed(resumed_analysis, page(6))
    (footer,) = [chunk for chunk in item["chunks"] if "Copyright" in chunk["text"]]
    assert footer["is_main"] is False
    for stage in resumed:
        analysed(stage, item)
        yield deferred_from_coro(stage.close_spider())
    # Every output covers the pages of both runs.
    clusters = json.loads((tmp_path / "clusters.json").read_text(encoding="utf-8"))
    assert clusters["input"]["pages"] == 6  # (unrelated pages: no keyword is shared)
    assert json.loads((tmp_path / "pairs.json").read_text(encoding="utf-8"))["pages"] == 6
    neardup = json.loads((tmp_path / "neardup.json").read_text(encoding="utf-8"))
    assert neardup["stats"]["pages"]["indexed"] == 6


def crawl(site: str, folder: Path, *, stop_after: int | None = None) -> int:
    """Crawl the demo site with deepweb into ``folder`` (JOBDIR, appended feed, clusters)."""
    log = folder / "crawl.log"
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site}"]
    command += ["-a", f"queries={QUERIES}", "-a", "follow=1", "-o", str(folder / "pages.jsonl")]
    for setting in (
        f"JOBDIR={folder / 'job'}",
        f"WEBSIM_CLUSTERS_OUTPUT={folder / 'clusters.json'}",
        "WEBSIM_CLUSTERS_N=5",
        "CONCURRENT_REQUESTS=1",  # one order of pages, so both crawls analyse alike
        "WEBSIM_ANALYSIS_WORKERS=0",  # ... one page at a time, the template memory too
        "AUTOTHROTTLE_ENABLED=0",
        "DOWNLOAD_DELAY=0.05",
        "LOG_LEVEL=DEBUG",
        f"LOG_FILE={log}",
    ):
        command += ["-s", setting]

    def scraped_enough() -> bool:
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        return stop_after is not None and text.count("Scraped from") >= stop_after

    # SIGTERM: a graceful stop, as Ctrl-C
    return run_crawl(command, scraped_enough if stop_after else None, signal.SIGTERM)


def clusters_of(folder: Path) -> set[frozenset[str]]:
    report = json.loads((folder / "clusters.json").read_text(encoding="utf-8"))
    return {frozenset(cluster["members"]) for cluster in report["clusters"]}


@pytest.mark.slow
def test_sigterm_then_resume_gives_the_uninterrupted_pages_and_clusters(tmp_path: Path) -> None:
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    whole.mkdir()
    resumed.mkdir()
    with DemoSite() as site:
        assert crawl(site.url, whole) == 0
        expected = list(iter_jsonl(whole / "pages.jsonl"))
        assert crawl(site.url, resumed, stop_after=len(expected) // 2) == 0
        first_part = list(iter_jsonl(resumed / "pages.jsonl"))
        assert "'finish_reason': 'shutdown'" in (resumed / "crawl.log").read_text("utf-8")
        assert len(expected) // 2 <= len(first_part) < len(expected)
        assert crawl(site.url, resumed) == 0
        pages = list(iter_jsonl(resumed / "pages.jsonl"))
        clusters = clusters_of(resumed)
        assert crawl(site.url, resumed) == 0  # once more: nothing left to crawl is no failure

    assert Counter((p["kind"], p["url"]) for p in pages) == Counter(
        (p["kind"], p["url"]) for p in expected
    )  # every page once: none lost at the stop, none fetched again after it
    keywords = {p["url"]: p["keywords"] for p in expected}
    assert all(p["keywords"] == keywords[p["url"]] for p in pages)  # template memory restored
    assert clusters == clusters_of(whole)
    assert sum(len(members) for members in clusters_of(whole)) > 20
    # The third run crawled nothing, and its report still covers the whole crawl (journals).
    assert list(iter_jsonl(resumed / "pages.jsonl")) == pages
    assert "none left to crawl" in (resumed / "crawl.log").read_text("utf-8")
    assert clusters_of(resumed) == clusters_of(whole)


# --- SIGKILL: the SQLite frontier ------------------------------------------------------------

CONCURRENCY = 4
ANALYSIS_PENDING = 4


def fast_crawl(site: str, folder: Path, *, kill_at_lines: int | None = None) -> int:
    """Crawl with JOBDIR and CONCURRENCY requests at a time; SIGKILL at ``kill_at_lines``."""
    folder.mkdir(exist_ok=True)
    feed = folder / "pages.jsonl"
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site}"]
    command += ["-a", f"queries={QUERIES}", "-a", "follow=1", "-o", str(feed)]
    for setting in (
        f"JOBDIR={folder / 'job'}",
        f"CONCURRENT_REQUESTS={CONCURRENCY}",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}",
        f"WEBSIM_ANALYSIS_MAX_PENDING={ANALYSIS_PENDING}",
        "AUTOTHROTTLE_ENABLED=0",
        "LOG_LEVEL=INFO",
        f"LOG_FILE={folder / 'crawl.log'}",
    ):
        command += ["-s", setting]

    def written_enough() -> bool:
        lines = feed.read_bytes().count(b"\n") if feed.exists() else 0
        return kill_at_lines is not None and lines >= kill_at_lines

    # SIGKILL: no shutdown, nothing saved
    return run_crawl(command, written_enough if kill_at_lines else None, signal.SIGKILL)


def requeued_at_last_start(log: Path) -> int:
    """Return how many in-flight requests the last run of a JOBDIR requeued when it started."""
    found = re.findall(r"JOBDIR: (\d+) request\(s\) in flight", log.read_text(encoding="utf-8"))
    return int(found[-1]) if found else 0


def page_keys(feed: Path, report: ReadReport | None = None) -> list[tuple[str, str]]:
    return [(str(p["kind"]), str(p["url"])) for p in iter_jsonl(feed, report)]


@pytest.mark.slow
def test_sigkill_at_several_points_then_resume_loses_nothing(tmp_path: Path) -> None:
    """Invariants only (the suite runs with every core busy): nothing lost, nothing cut, and
    each resumed run repeats at most the requests its frontier file held in flight at the kill.
    """
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    server, site = serve_slow_demo(0.05)
    try:
        assert fast_crawl(site, whole) == 0
        expected = Counter(page_keys(whole / "pages.jsonl"))
        assert max(expected.values()) == 1 and len(expected) > 40
        kills = [len(expected) // 5, len(expected) // 2, 4 * len(expected) // 5]
        previous: list[tuple[str, str]] = []
        in_flight = 0  # leased in the frontier file when the previous run was killed
        in_flight_at_kills = []
        for kill_at in kills:
            assert fast_crawl(site, killed, kill_at_lines=kill_at) == -signal.SIGKILL
            pages = page_keys(killed / "pages.jsonl")
            assert requeued_at_last_start(killed / "crawl.log") == in_flight
            recrawled = sum(1 for key in pages[len(previous) :] if key in set(previous))
            assert recrawled <= in_flight, (kill_at, recrawled, in_flight)
            assert len(pages) >= kill_at - 1  # the last line may be cut by the kill
            in_flight = in_flight_in_frontier(killed)
            in_flight_at_kills.append(in_flight)
            previous = pages
        assert fast_crawl(site, killed) == 0
        assert requeued_at_last_start(killed / "crawl.log") == in_flight
    finally:
        server.shutdown()
        server.server_close()
    report = ReadReport()
    pages = page_keys(killed / "pages.jsonl", report)
    assert set(pages) == set(expected)  # no page missing
    assert report.skipped == {}  # no line cut (the resumed runs removed the cut last lines)
    recrawled = sum(1 for key in pages[len(previous) :] if key in set(previous))
    assert recrawled <= in_flight
    assert len(pages) - len(set(pages)) <= sum(in_flight_at_kills)
    assert not (killed / "pages.jsonl.incomplete").exists()  # the last run closed cleanly
    assert in_flight_in_frontier(killed) == 0


def test_sqlite_frontier_filters_orders_leases_and_requeues(tmp_path: Path) -> None:
    path = tmp_path / "job" / FRONTIER_FILE
    frontier = SqliteFrontier(path)
    assert frontier.add("fp-a", 0, b"a") and frontier.add("fp-b", 0, b"b")
    assert not frontier.add("fp-a", 5, b"a again")  # seen: filtered
    assert frontier.add(None, 0, b"unfiltered") and frontier.add("fp-c", 1, b"urgent")
    assert frontier.pending() == 4
    order = [frontier.lease() for _ in range(3)]  # priority first, then newest first
    assert [entry[1] for entry in order if entry] == [b"urgent", b"unfiltered", b"b"]
    assert order[0] is not None
    frontier.release(order[0][0])  # finished
    frontier.close()  # killed with two requests in flight ("unfiltered", "b")
    resumed = SqliteFrontier(path)
    assert resumed.requeue_leased() == 2 and resumed.pending() == 3
    assert not resumed.mark_seen("fp-b") and resumed.mark_seen("fp-d")
    leased = [resumed.lease() for _ in range(4)]
    assert sorted(entry[1] for entry in leased if entry) == [b"a", b"b", b"unfiltered"]
    assert leased[3] is None
    resumed.close()
