"""End to end against a database browser others wrote: Datasette (its rows linked by number).

``scrapy crawl deepweb -a start_url=... -a follow=1`` as a user runs it, on a SQLite table whose
rows the test wrote, so the records the application lists for each query are known.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.database_browser import (
    DATASETTE,
    ROW_PATH,
    Row,
    build_database,
    clusterings_in_shuffled_orders,
    datasette,
    generated_rows,
    matching_rows,
)

from websim_crawler.core.crawling import SearchTarget, find_records, next_page
from websim_crawler.core.html import parse_html
from websim_crawler.core.io import iter_jsonl

REPO = Path(__file__).resolve().parents[3]
# Topic words, common words (rows listed on many result pages of several queries), a word of
# one row only (a result page of one row, row 2: labelled "2", the next page's number) and a
# word of no row.
QUERIES = ("river", "melody", "garden", "the", "of", "and", "to", "zanzibar", "nothingmatches")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATASETTE.exists(), reason="datasette is not installed (test extra)"),
]


@dataclasses.dataclass
class Crawl:
    rows: dict[int, Row]
    listed: set[int]  # the rows the application lists for the queries
    pages: list[dict[str, Any]]
    feed: Path
    log: str
    returncode: int
    table_url: str


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawl]:
    folder = tmp_path_factory.mktemp("datasette")
    rows = generated_rows(60)
    rows[1] = dataclasses.replace(rows[1], body=rows[1].body + " Zanzibar spice ferry.")
    database = build_database(folder / "db.db", rows)
    listed = set().union(*(matching_rows(database, query) for query in QUERIES))
    feed, log = folder / "pages.jsonl", folder / "crawl.log"
    with datasette(database, folder / "datasette.log") as table_url:
        command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a"]
        command += [f"start_url={table_url}", "-a", "queries=" + ",".join(QUERIES)]
        command += ["-a", "follow=1", "-a", "max_pages=20", "-O", str(feed)]
        command += ["-s", f"LOG_FILE={log}", "-s", "LOG_LEVEL=INFO"]
        environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        finished = subprocess.run(command, cwd=REPO, env=environment, timeout=600, check=False)
        yield Crawl(
            {row.number: row for row in rows},
            listed,
            list(iter_jsonl(feed)),
            feed,
            log.read_text(encoding="utf-8"),
            finished.returncode,
            table_url,
        )


def row_number(url: str) -> int | None:
    found = re.search(re.escape(ROW_PATH) + r"(\d+)$", url)
    return int(found.group(1)) if found else None


def records(crawl: Crawl) -> list[dict[str, Any]]:
    return [page for page in crawl.pages if page["kind"] == "record"]


def test_the_crawl_reaches_the_rows_the_application_lists(crawl: Crawl) -> None:
    assert crawl.returncode == 0, crawl.log[-3000:]
    reached = {row_number(page["url"]) for page in records(crawl)}
    assert len(crawl.listed) >= 40
    assert len(reached & crawl.listed) / len(crawl.listed) >= 0.95
    assert "websim/diagnosis/records/from_region" in crawl.log


def test_no_chrome_page_is_stored_as_a_record(crawl: Crawl) -> None:
    chrome = [page["url"] for page in records(crawl) if row_number(page["url"]) is None]
    assert chrome == []  # no JSON, CSV, SQL, export, sort or facet page
    assert "'websim/diagnosis/warning': 0" in crawl.log


def test_a_row_labelled_with_the_next_page_number_is_no_result_page(crawl: Crawl) -> None:
    result_pages = [page["url"] for page in crawl.pages if page["kind"] == "results"]
    assert [url for url in result_pages if row_number(url) is not None] == []
    # The one-row result page of the live application: the row, labelled "2", and no next page.
    url = crawl.table_url + "&_search=zanzibar"
    with urllib.request.urlopen(url, timeout=30) as response:
        root = parse_html(response.read())
    found = find_records(
        root, url, search=SearchTarget.of_urls([url.split("?")[0]]), query="zanzibar"
    )
    assert [row_number(link) for link in found.links] == [2]
    assert next_page(root, url, 1, results_on_page=1, record_links=found.links) is None


def test_rows_shown_in_full_on_result_pages_keep_their_text(crawl: Crawl) -> None:
    """Rows listed in full on several result pages are not erased as site template."""
    kept = []
    for page in records(crawl):
        row = crawl.rows[row_number(page["url"]) or 0]
        opening = " ".join(row.body.split()[:8]).lower()
        kept.append(opening in (page.get("main_text") or "").lower())
    assert len(kept) >= 40 and all(kept)


def test_clusters_are_the_same_in_any_feed_order(crawl: Crawl, tmp_path: Path) -> None:
    clusterings = clusterings_in_shuffled_orders(crawl.feed, tmp_path)
    assert len(clusterings[0]) >= 2
    assert clusterings[0] == clusterings[1] == clusterings[2]
