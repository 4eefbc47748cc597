"""``scrapy crawl`` (the project's ``crawl`` command): exit code 1 when the crawl did nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import serve_directory

from websim_crawler.commands.crawl import crawl_failure

REPO = Path(__file__).resolve().parents[2]
SITE = Path(__file__).resolve().parents[1] / "support" / "site"


@pytest.mark.parametrize(
    ("stats", "failure"),
    [
        ({"finish_reason": "finished", "item_scraped_count": 3}, None),
        ({"finish_reason": "closespider_pagecount", "item_scraped_count": 9}, None),
        (
            {"finish_reason": "start_page_failed"},
            "the start page could not be fetched (finish reason start_page_failed)",
        ),
        (
            {"finish_reason": "no_search_form", "item_scraped_count": 0},
            "no search form on the start page, in its OpenSearch description or on the pages "
            "near it "
            "(finish reason no_search_form)",
        ),
        (
            {
                "finish_reason": "finished",
                "websim/pages/failed/timeout": 2,
                "websim/pages/dropped/binary": 1,
                "item_dropped_count": 1,
            },
            "every page failed (dropped binary: 1, failed timeout: 2)",
        ),
        ({"finish_reason": "finished"}, "no page was scraped (finish reason finished)"),
        ({"finish_reason": "shutdown"}, None),  # Ctrl-C: the user stopped it
        # A JOBDIR crawl resumed after its last page: nothing left, its outputs from journals.
        ({"finish_reason": "finished", "websim/jobdir/seen_before": 40}, None),
        (
            {
                "finish_reason": "finished",
                "websim/jobdir/seen_before": 40,
                "websim/pages/failed/dns": 1,
            },
            "every page failed (failed dns: 1)",
        ),
        (
            {"finish_reason": "finished", "item_scraped_count": 5, "websim/cluster/failed": 1},
            "the clusters report could not be written",
        ),
    ],
)
def test_crawl_failure_reads_the_finish_reason_and_stats(
    stats: dict[str, object], failure: str | None
) -> None:
    assert crawl_failure(stats) == failure


def test_an_idle_worker_on_a_shared_frontier_did_not_fail() -> None:
    idle = {"finish_reason": "finished"}
    assert crawl_failure(idle, shared_frontier=True) is None
    failing = {"finish_reason": "finished", "websim/pages/failed/timeout": 1}
    assert crawl_failure(failing, shared_frontier=True) == "every page failed (failed timeout: 1)"


@pytest.fixture(scope="module")
def static_site() -> Iterator[str]:
    server, url = serve_directory(SITE)
    yield url
    server.shutdown()
    server.server_close()


def crawl(tmp_path: Path, spider: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-O", str(tmp_path / "p.jsonl")]
    command += [*arguments, "-s", "RETRY_TIMES=0", "-s", "AUTOTHROTTLE_ENABLED=0"]
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_an_unreachable_start_page_is_exit_1_and_no_traceback(tmp_path: Path) -> None:
    finished = crawl(tmp_path, "deepweb", "-a", "start_url=http://127.0.0.1:9/", "-a", "queries=x")
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    assert finished.stderr.strip().splitlines()[-1] == (
        "scrapy crawl deepweb: the start page could not be fetched "
        "(finish reason start_page_failed)"
    )


@pytest.mark.slow
def test_a_site_without_a_search_form_is_exit_1(static_site: str, tmp_path: Path) -> None:
    start = f"start_url={static_site}/noform.html"
    finished = crawl(tmp_path, "deepweb", "-a", start, "-a", "queries=tea")
    assert finished.returncode == 1
    assert (
        finished.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "no search form on the start page, in its OpenSearch description or on the pages "
            "near it "
            "(finish reason no_search_form)"
        )
    )


@pytest.mark.slow
def test_a_good_crawl_is_exit_0_and_a_misspelt_setting_stops_it(
    static_site: str, tmp_path: Path
) -> None:
    start = f"start_url={static_site}/index.html"
    finished = crawl(tmp_path, "site", "-a", start, "-a", "max_pages=3")
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert (tmp_path / "p.jsonl").read_text().count("\n") == 3
    misspelt = crawl(tmp_path, "site", "-a", start, "-s", "WEBSIM_CLUSTER_OUTPUT=c.json")
    assert misspelt.returncode == 1
    assert (
        "ConfigError: unknown setting WEBSIM_CLUSTER_OUTPUT (did you mean WEBSIM_CLUSTERS_OUTPUT?)"
        in misspelt.stderr
    )
    assert "Traceback" not in misspelt.stderr
    assert not (tmp_path / "c.json").exists()
