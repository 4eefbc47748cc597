"""What a person reads is true and readable: log lines, failure lines, keywords, the report.

No false "interrupted" notice after a clean write, a 404 named by its status, no Dask chatter by
default, keywords as words (stems kept as the vectors' features), distinct cluster colours and
page titles in the cluster report.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from websim_crawler._imports import available
from websim_crawler.core.clustering import ClusteringParams, DocumentCollector, cluster_documents
from websim_crawler.core.clustering.report import _colour, render_html
from websim_crawler.core.io import atomic_write_pair
from websim_crawler.core.io.pair_journal import journal_of, roll_forward
from websim_crawler.core.stages import ClusterRecord
from websim_crawler.demo.site import DemoSite

REPO = Path(__file__).resolve().parents[2]


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def test_a_clean_pair_write_logs_no_interrupted_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = tmp_path / "clusters.json", tmp_path / "clusters.html"
    with caplog.at_level(logging.INFO, logger="websim_crawler"):
        atomic_write_pair((first, "{}"), (second, "<p>"))
        atomic_write_pair((first, "{}"), (second, "<p>"))
    assert first.read_text() == "{}" and second.read_text() == "<p>"
    assert "interrupted" not in caplog.text


def test_the_roll_forward_of_a_killed_pair_write_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = tmp_path / "clusters.json", tmp_path / "clusters.html"
    new_first, new_second = tmp_path / ".first.tmp", tmp_path / ".second.tmp"
    new_first.write_text("new json")
    new_second.write_text("new html")
    journal = journal_of(first)  # what a writer killed between its two renames leaves
    journal.write_text(
        json.dumps({"renames": [[str(new_first), str(first)], [str(new_second), str(second)]]})
    )
    with caplog.at_level(logging.INFO, logger="websim_crawler"):
        roll_forward(journal)
    assert first.read_text() == "new json" and second.read_text() == "new html"
    assert caplog.text.count("finished 2 rename(s) of an interrupted pair write") == 1


@pytest.mark.slow
def test_a_404_failure_line_names_its_status(tmp_path: Path) -> None:
    with DemoSite() as site:
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a"]
        command += [f"start_url={site.url}no-such-page", "-O", str(tmp_path / "p.jsonl")]
        finished = run(command, REPO)
    assert finished.returncode == 1
    [line] = [line for line in finished.stderr.splitlines() if "could not fetch" in line]
    assert line.endswith(f"site: could not fetch {site.url}no-such-page: HTTP 404 Not Found")
    assert "Ignoring non-200 response" not in finished.stderr


PAGES = {
    "libraries.html": (
        "Public libraries",
        "Our libraries lend books and components. The library holds components for "
        "builders; libraries also lend tools. Components wear out.",
    ),
    "library-cards.html": (
        "Library cards",
        "A library card lets readers borrow books. Libraries issue cards to readers; "
        "cards are free for children at every library.",
    ),
    "volcanoes.html": (
        "Volcanic eruptions",
        "Volcanoes erupt when magma rises. Eruptions send ash over villages; the magma "
        "chamber empties and volcanoes collapse into calderas.",
    ),
    "magma.html": (
        "Magma chambers",
        "Magma collects in chambers under volcanoes. Rising magma swells the ground "
        "before eruptions; volcanoes are watched by scientists.",
    ),
}


def write_pages(folder: Path) -> list[Path]:
    paths = []
    for name, (title, text) in PAGES.items():
        path = folder / name
        path.write_text(
            f"<html><head><title>{title}</title></head><body><div><h1>{title}</h1>"
            f"<p>{text}</p></div></body></html>"
        )
        paths.append(path)
    return paths


def test_websim_extract_shows_words_and_keeps_the_stems_apart(tmp_path: Path) -> None:
    [page] = write_pages(tmp_path)[:1]
    finished = run([sys.executable, "-m", "websim_crawler", "extract", str(page)], tmp_path)
    assert finished.returncode == 0, finished.stderr
    record = json.loads(finished.stdout)
    assert record["keywords"]["libraries"] == 3 and record["keywords"]["components"] == 3
    assert "librari" not in record["keywords"] and "compon" not in record["keywords"]
    assert record["keyword_stems"]["librari"] == 3 and record["keyword_stems"]["compon"] == 3


@pytest.mark.slow
@pytest.mark.skipif(not available("distributed"), reason="needs the [distributed] extra")
def test_websim_cluster_on_dask_prints_no_dask_chatter(tmp_path: Path) -> None:
    pages = write_pages(tmp_path)
    extracted = run(
        [sys.executable, "-m", "websim_crawler", "extract", *map(str, pages), "-o", "pages.jsonl"],
        tmp_path,
    )
    assert extracted.returncode == 0, extracted.stderr
    command = [sys.executable, "-m", "websim_crawler", "cluster", "pages.jsonl"]
    command += ["-o", "clusters.json", "--html", "clusters.html", "--engine", "dask"]
    command += ["--n-clusters", "2", "--kind", "all", "--no-progress"]
    finished = run(command, tmp_path)
    assert finished.returncode == 0, finished.stderr
    # Before: 30-81 INFO lines of distributed's scheduler, nanny and workers.
    assert "distributed" not in finished.stderr
    assert not [line for line in finished.stderr.splitlines() if line.startswith("INFO")]
    report = json.loads((tmp_path / "clusters.json").read_text())
    assert {document["title"] for document in report["documents"]} == {
        title for title, _text in PAGES.values()
    }
    terms = {
        keyword["term"] for cluster in report["clusters"] for keyword in cluster["top_keywords"]
    }
    assert ("librari" not in terms and "volcano" in terms) or "volcanoes" in terms


def test_cluster_colours_stay_distinct_past_ten_clusters() -> None:
    colours = [_colour(cluster) for cluster in range(ClusteringParams().max_clusters)]
    assert len(set(colours)) == len(colours)
    assert _colour(10) != _colour(0)


def test_the_html_report_names_members_by_their_titles() -> None:
    collector = DocumentCollector("all")
    pages = [
        ("http://a/1", {"apple": 3, "pie": 2, "bake": 1}, "Apple pie  recipes\n"),
        ("http://a/2", {"apple": 2, "pie": 1, "bake": 2}, None),
        ("http://a/3", {"apple": 2, "pie": 2, "bake": 2}, "Apple pie"),
        ("http://a/4", {"engine": 3, "oil": 2, "car": 1}, "Engine oil"),
        ("http://a/5", {"engine": 2, "oil": 1, "car": 2}, "Oil change"),
        ("http://a/6", {"engine": 2, "oil": 2, "car": 2}, "Car engines"),
    ]
    for url, keywords, title in pages:
        record = {"url": url, "kind": "page", "keyword_stems": keywords, "title": title}
        assert collector.add(record) is None
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=2))
    page = render_html(result)
    assert '<a href="http://a/1">Apple pie recipes</a> <small>http://a/1</small>' in page
    assert '<a href="http://a/2">http://a/2</a> <small>' in page  # no title: the URL
    assert '<a href="http://a/6">Car engines</a> <small>http://a/6</small>' in page
    # a stage's JOBDIR journal keeps the titles: they are in the record its add reads
    assert "title" in ClusterRecord.__annotations__
