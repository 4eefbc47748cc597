"""``scrapy crawl deepweb`` with no queries surfaces the gallery's hidden databases
(tests/support/hidden_databases.py): the way in (form, OpenSearch, a form one link away), the
stats and the end-of-crawl line, a JOBDIR resume that asks nothing twice, and a search that
answers nothing (exit 1, one line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hidden_databases import HiddenDatabase, HiddenDatabaseSite, failing, gallery
from support.real_apps import AppMissing

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def spec(name: str) -> HiddenDatabase:
    return next(one for one in [*gallery(), *failing()] if one.name == name)


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Iterator[HiddenDatabaseSite]:
    try:
        with HiddenDatabaseSite(spec(request.param)) as running:
            yield running
    except AppMissing as missing:
        pytest.skip(str(missing))


def crawl(site: HiddenDatabaseSite, folder: Path, *arguments: str) -> dict[str, Any]:
    """Run the crawl with no queries; return its exit code, stats, reached record ids, log."""
    output, stats_file = folder / "pages.jsonl", folder / "stats.json"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site.url}",
        "-O", str(output), "-s", "ROBOTSTXT_OBEY=False", "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", f"WEBSIM_STATS_OUTPUT={stats_file}", "-s", "WEBSIM_CHUNK_DETAIL=none",
        "-s", "WEBSIM_ANALYSIS_WORKERS=0", *arguments,
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    done = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=900
    )
    items = (
        [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    )
    reached = {
        site.record_id_of(link)
        for item in items
        if item["kind"] == "results"
        for link in item.get("links") or []
    } - {None}
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return {"exit": done.returncode, "stats": stats, "reached": reached, "log": done.stderr}


@pytest.mark.parametrize("site", ["en-and-cap50"], indirect=True)
def test_no_queries_surfaces_the_database_and_says_how_much(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path, "-a", "max_queries=100")
    assert run["exit"] == 0, run["log"][-3000:]
    stats = run["stats"]
    assert stats["websim/surfacing/queries"] <= 100
    assert len(run["reached"]) >= 0.85 * len(site.records)
    assert stats["websim/surfacing/records"] >= len(run["reached"])
    assert abs(stats["websim/surfacing/estimate"] - 360) <= 72
    log = [entry["query"] for entry in stats["websim/surfacing/query_log"]]
    assert len(log) == len(set(log)) == stats["websim/surfacing/queries"]
    assert "deepweb surfacing: reached" in run["log"] and "the site holds about" in run["log"]
    assert stats["websim/surfacing/site_cap"] == 50
    picture = (tmp_path / "stats.json.surfacing.png").read_bytes()  # the curve, beside the stats
    assert picture.startswith(b"\x89PNG") and len(picture) > 2000


def test_answers_cut_at_max_pages_are_cut_answers_not_the_sites_cap(tmp_path: Path) -> None:
    # A site that shows every match and states no counts, read two pages a query: answers of
    # more than 20 matches go on past the pages read, which is the crawl's limit, not the site's.
    try:
        with HiddenDatabaseSite(HiddenDatabase("en-whole", cap=None, shows_count=False)) as site:
            run = crawl(site, tmp_path, "-a", "max_queries=12", "-a", "max_pages=2")
    except AppMissing as missing:
        pytest.skip(str(missing))
    assert run["exit"] == 0, run["log"][-3000:]
    stats = run["stats"]
    assert "websim/surfacing/site_cap" not in stats
    log = stats["websim/surfacing/query_log"]
    assert log and all(entry["pages"] <= 2 for entry in log)
    matches = {entry["query"]: len(site.matches(entry["query"])) for entry in log}
    long = [entry for entry in log if matches[entry["query"]] > 20]
    assert long and all(entry["capped"] for entry in long)
    assert not any(entry["capped"] for entry in log if 0 < matches[entry["query"]] <= 20)


@pytest.mark.parametrize("site", ["en-opensearch-cap50"], indirect=True)
def test_a_start_page_without_a_form_is_entered_by_its_opensearch_description(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path, "-a", "max_queries=30")
    assert run["exit"] == 0, run["log"][-3000:]
    assert site.requests["opensearch"] == 1
    assert run["stats"]["websim/crawl/entrance/opensearch"] == 1
    assert len(run["reached"]) >= 200


@pytest.mark.parametrize("site", ["en-linked-cap20"], indirect=True)
def test_a_search_form_one_link_away_is_found_and_used(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path, "-a", "max_queries=30")
    assert run["exit"] == 0, run["log"][-3000:]
    assert run["stats"]["websim/crawl/entrance/nearby_form"] == 1
    assert "one link away" in run["log"]
    assert len(run["reached"]) >= 150


@pytest.mark.parametrize("site", ["en-empty-always"], indirect=True)
def test_a_search_that_answers_nothing_ends_the_crawl_with_one_line(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path)
    assert run["exit"] == 1
    # WEBSIM_SURFACING_MAX_UNANSWERED (10), plus the one chosen while the last was in flight
    assert 10 <= run["stats"]["websim/surfacing/queries"] <= 11
    errors = [line for line in run["log"].splitlines() if "answered nothing" in line]
    assert errors and len(set(errors)) <= 2  # the log line and the exit line


@pytest.mark.parametrize("site", ["en-and-cap50"], indirect=True)
def test_a_resumed_jobdir_crawl_asks_nothing_twice(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    jobdir = tmp_path / "job"
    first = crawl(site, tmp_path, "-a", "max_queries=15", "-s", f"JOBDIR={jobdir}")
    assert first["exit"] == 0, first["log"][-3000:]
    asked_first = len(site.queries_seen)
    second = crawl(site, tmp_path, "-a", "max_queries=30", "-s", f"JOBDIR={jobdir}")
    assert second["exit"] == 0, second["log"][-3000:]
    chosen = [
        json.loads(line)["query"]
        for line in (jobdir / "websim-surfacing.jsonl").read_text().splitlines()
        if json.loads(line)["event"] == "chosen"
    ]
    assert len(chosen) == len(set(chosen)) == 30
    again = set(site.queries_seen[asked_first:]) & set(chosen[:15])
    assert not again
    assert second["stats"]["websim/surfacing/records"] > first["stats"]["websim/surfacing/records"]


@pytest.mark.parametrize("site", ["en-advanced-cap50", "de-advanced-cap20"], indirect=True)
def test_advanced_forms_are_surfaced_through_their_informative_inputs(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path, "-a", "max_queries=100")
    assert run["exit"] == 0, run["log"][-3000:]
    assert len(run["reached"]) == len(site.records)
    # The form's page size is left at its default (10): at most 3x the fewest pages with it.
    assert site.requests["search"] <= 3 * site.fewest_result_pages(page_size=10)
    assert "input 'category' is informative" in run["log"]
    assert "input 'sort' is left as it is" in run["log"]
    stats = run["stats"]
    assert stats["websim/surfacing/estimate_method"] == "partition"
    assert stats["websim/surfacing/estimate"] == len(site.records)
    assert stats["websim/surfacing/stopped"] == "every record reached"


@pytest.mark.parametrize("site", ["en-captcha"], indirect=True)
def test_a_required_input_the_crawl_cannot_fill_is_named_in_one_line(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    run = crawl(site, tmp_path)
    assert run["exit"] == 1
    assert "requires input 'captcha'" in run["log"]
    assert site.requests["search"] == 0


@pytest.mark.parametrize("site", ["en-and-cap50"], indirect=True)
def test_a_crawl_killed_mid_surfacing_resumes_without_asking_anything_twice(
    site: HiddenDatabaseSite, tmp_path: Path
) -> None:
    jobdir = tmp_path / "job"
    journal = jobdir / "websim-surfacing.jsonl"
    output, stats_file = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a", f"start_url={site.url}",
        "-a", "max_queries=40", "-O", str(output), "-s", f"JOBDIR={jobdir}",
        "-s", "ROBOTSTXT_OBEY=False", "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", "DOWNLOAD_DELAY=0.05", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        "-s", "WEBSIM_CHUNK_DETAIL=none", "-s", "WEBSIM_ANALYSIS_WORKERS=0",
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    first = subprocess.Popen(command, cwd=REPO, env=environment, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300

    def chosen() -> list[str]:
        lines = journal.read_text().splitlines() if journal.exists() else []
        events = [json.loads(line) for line in lines if line.endswith("}")]
        return [event["query"] for event in events if event["event"] == "chosen"]

    while len(chosen()) < 12 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.kill()  # SIGKILL: nothing is saved at close
    first.wait(timeout=60)
    before_kill = chosen()
    assert 12 <= len(before_kill) < 40, "the crawl was killed mid-surfacing"
    second = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=600
    )
    assert second.returncode == 0, second.stderr[-3000:]
    after = chosen()
    assert after[: len(before_kill)] == before_kill
    assert len(after) == len(set(after))  # nothing chosen twice across the kill
    assert 40 <= len(after) <= 41
    stats = json.loads(stats_file.read_text())
    assert stats["websim/surfacing/queries"] == len(after)
