"""The end-of-crawl stages (clustering, similarity, near-duplicates) on their one contract.

Records prepared in the analysis workers (the crawl's process parses no HTML), the features
sent back as data compare as the parsed ones, a stage whose output cannot be written fails the
crawl (exit 1), and a crawl killed with SIGKILL and resumed from JOBDIR gives every stage every
record of the whole crawl.
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import lxml.etree
import pytest
import pytest_twisted
from PIL import Image
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from support.crawl_runs import QUERIES, run_crawl, serve_slow_demo, stage_pipelines

from websim_crawler.core.io import iter_jsonl
from websim_crawler.core.reference_index import ReferenceIndex
from websim_crawler.core.similarity.comparison import (
    compare_pages,
    features_from_item,
    page_features,
)
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.portable import features_from_dict, features_to_dict
from websim_crawler.items import PageItem
from websim_crawler.pipelines._collection import stage_records_of
from websim_crawler.pipelines.matching import MatchPipeline

REPO = Path(__file__).resolve().parents[3]
SENTENCE = "The expedition reached the northern ridge of the volcano after {} long days of walking."


def article(number: int, topic: str) -> str:
    text = " ".join(SENTENCE.format(n) for n in range(number % 3, number % 3 + 6))
    return (
        f"<html><head><title>{topic} {number}</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<div class='story'><h1>{topic} report {number}</h1><p>{topic} {text}</p>"
        f"<p>More on {topic}: page {number} of the collection.</p></div>"
        f"<a href='/{topic}/{number + 1}'>next</a></body></html>"
    )


def png(colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_features_sent_as_data_compare_as_the_parsed_ones() -> None:
    params = SimilarityParams()
    items = [
        {"url": f"http://a.test/{n}", "html": article(n, "volcano"), "screenshot": png((n, 9, 9))}
        for n in range(3)
    ] + [{"url": "file-without-url", "html": article(7, "bread")}]
    parsed = [features_from_item(item, params) for item in items]
    sent = [features_from_dict(json.loads(json.dumps(features_to_dict(f)))) for f in parsed]
    for first in range(len(items)):
        for second in range(first + 1, len(items)):
            expected = compare_pages(parsed[first], parsed[second], "full", params)
            assert compare_pages(sent[first], sent[second], "full", params) == expected


@pytest_twisted.inlineCallbacks
def test_the_crawl_process_parses_no_html(tmp_path: Path, monkeypatch: Any) -> Any:
    """Every page is parsed by a worker, for the stages and the match against a reference
    index: parsing in the crawl's process raises here."""
    references = ReferenceIndex()
    for n in range(2):
        references.add(page_features(article(n, "volcano"), url=f"http://known.test/{n}"))
    references.save(tmp_path / "refs.idx")
    settings = {
        "WEBSIM_MATCH_INDEX": str(tmp_path / "refs.idx"),
        "WEBSIM_CLUSTERS_OUTPUT": str(tmp_path / "clusters.json"),
        "WEBSIM_CLUSTERS_MIN_DF": 1,
        "WEBSIM_CLUSTERS_N": 2,
        "WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "pairs.json"),
        "WEBSIM_NEARDUP_OUTPUT": str(tmp_path / "neardup.json"),
        "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS": 40,
        "WEBSIM_ANALYSIS_WORKERS": 1,
    }
    crawler, analysis, stages = stage_pipelines(settings)
    matching = MatchPipeline.from_crawler(crawler)

    def no_parsing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("HTML parsed in the crawl's process")

    monkeypatch.setattr(lxml.etree, "fromstring", no_parsing)
    yield deferred_from_coro(analysis.open_spider())
    items = [
        {"url": f"http://s.test/{topic}/{n}", "kind": "record", "html": article(n, topic)}
        for topic in ("volcano", "bread")
        for n in range(3)
    ]
    for item in items:
        analysed = yield deferred_from_coro(analysis.process_item(item))
        for stage in [matching, *stages]:
            yield deferred_from_coro(stage.process_item(analysed))
    # An item that did not come through the analysis is prepared in the pool too.
    late = {"url": "http://s.test/late", "kind": "record", "html": article(9, "volcano")}
    for stage in [matching, *stages]:
        yield deferred_from_coro(stage.process_item(late))
    yield deferred_from_coro(analysis.close_spider())
    for stage in stages:
        yield deferred_from_coro(stage.close_spider())
    stats = crawler.stats.get_stats()
    assert not [key for key in stats if key.endswith("/failed")]
    assert stats["websim/match/pages"] == 7 and stats["websim/match/similar"] >= 1
    assert items[0]["reference_matches"][0]["url"] == "http://known.test/0"
    clusters = json.loads((tmp_path / "clusters.json").read_text(encoding="utf-8"))
    assert clusters["input"]["pages"] == 7 and clusters["input"]["clustered"] >= 1
    assert not [reason for reason in clusters["input"]["skipped"] if "analysis" in reason]
    assert json.loads((tmp_path / "pairs.json").read_text(encoding="utf-8"))["pages"] == 7
    neardup = json.loads((tmp_path / "neardup.json").read_text(encoding="utf-8"))
    assert neardup["stats"]["pages"]["indexed"] == 7 and neardup["pairs"]


# --- whole crawls in subprocesses ---------------------------------------------------------------


def scrapy_crawl(arguments: list[str], **popen: Any) -> subprocess.Popen[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY")}
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", *arguments],
        cwd=REPO,
        env=environment,
        text=True,
        **popen,
    )


OUTPUTS = {
    "WEBSIM_CLUSTERS_OUTPUT": "the clusters report could not be written",
    "WEBSIM_SIMILARITY_OUTPUT": "the similar pairs could not be written",
    "WEBSIM_NEARDUP_OUTPUT": "the near-duplicate report could not be written",
}


@pytest.mark.slow
@pytest.mark.parametrize("setting", sorted(OUTPUTS))
def test_a_stage_output_that_cannot_be_written_is_exit_1(
    setting: str, site_url: str, tmp_path: Path
) -> None:
    output = tmp_path / "out" / "report.json"
    # A folder where the output goes, made after the start-up check: the write at the end fails.
    blocker = {"tests.support.stage_output_blocker.OutputBlocker": 100}
    pipelines = {"websim_crawler.pipelines.PageAnalysisPipeline": 300} | blocker
    arguments = ["site", "-a", f"start_url={site_url}/index.html", "-a", "max_pages=3"]
    arguments += ["-O", str(tmp_path / "pages.jsonl"), "-s", f"{setting}={output}"]
    arguments += ["-s", f"ITEM_PIPELINES={json.dumps(pipelines)}", "-s", "RETRY_TIMES=0"]
    process = scrapy_crawl(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1, stderr[-3000:]
    assert f"scrapy crawl site: {OUTPUTS[setting]}" in stderr.splitlines()
    assert "Traceback" not in stderr
    assert output.is_dir()  # the blocker's folder, left as it was


@pytest.mark.slow
def test_sigkill_then_resume_every_stage_covers_the_whole_crawl(tmp_path: Path) -> None:
    def crawl(folder: Path, kill_at: int | None = None) -> int:
        folder.mkdir(exist_ok=True)
        arguments = ["deepweb", "-a", f"start_url={site}", "-a", f"queries={QUERIES}"]
        arguments += ["-a", "follow=1", "-o", str(folder / "pages.jsonl")]
        for setting in (
            f"JOBDIR={folder / 'job'}",
            f"WEBSIM_CLUSTERS_OUTPUT={folder / 'clusters.json'}",
            "WEBSIM_CLUSTERS_KIND=all",
            f"WEBSIM_SIMILARITY_OUTPUT={folder / 'pairs.json'}",
            f"WEBSIM_NEARDUP_OUTPUT={folder / 'neardup.json'}",
            "CONCURRENT_REQUESTS=4",
            "AUTOTHROTTLE_ENABLED=0",
            "LOG_LEVEL=INFO",
            f"LOG_FILE={folder / 'crawl.log'}",
        ):
            arguments += ["-s", setting]
        feed = folder / "pages.jsonl"

        def written_enough() -> bool:
            return (
                kill_at is not None and feed.exists() and feed.read_bytes().count(b"\n") >= kill_at
            )

        command = [sys.executable, "-m", "scrapy", "crawl", *arguments]
        return run_crawl(command, written_enough if kill_at else None, signal.SIGKILL)

    server, site = serve_slow_demo(0.05)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    try:
        assert crawl(whole) == 0
        expected = {record["url"] for record in iter_jsonl(whole / "pages.jsonl")}
        for kill_at in (len(expected) // 3, 2 * len(expected) // 3):
            assert crawl(killed, kill_at) == -signal.SIGKILL
        assert crawl(killed) == 0
    finally:
        server.shutdown()
        server.server_close()
    crawled = {record["url"] for record in iter_jsonl(killed / "pages.jsonl")}
    assert crawled == expected
    reports = {
        folder.name: {
            name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("clusters", "pairs", "neardup")
        }
        for folder in (whole, killed)
    }
    for name, report in reports.items():  # every record of the crawl is in every output
        clusters = report["clusters"]
        duplicates = clusters["input"]["skipped"].get("duplicate_url", 0)
        assert clusters["input"]["pages"] - duplicates >= len(expected), name
        assert {document["url"] for document in clusters["documents"]} <= expected, name
        assert report["pairs"]["pages"] == len(expected), name  # each URL once
        pages = report["neardup"]["stats"]["pages"]
        assert pages["seen"] - pages["dropped"].get("duplicate_url", 0) >= len(expected), name
    # Indexed pages are distinct URLs, whether crawled once or again after a kill.
    indexed = [report["neardup"]["stats"]["pages"]["indexed"] for report in reports.values()]
    assert indexed[0] == indexed[1] > 0
    log = (killed / "crawl.log").read_text(encoding="utf-8")
    assert "resumed with" in log
    assert "websim/similarity/records/missing" not in log or "were lost" in log


@pytest_twisted.inlineCallbacks
def test_a_record_is_found_again_only_for_its_own_item() -> Any:
    # Items whose records were never released (no item_scraped signal here) and are then let
    # go: a later item that happens to be allocated at the same address gets its own record.
    registry = stage_records_of(get_crawler(settings_dict={"WEBSIM_ANALYSIS_WORKERS": 0}))
    registry.enable("neardup")
    for number in range(200):
        registry.put(PageItem(url=f"http://a.test/{number}"), {"url": f"http://a.test/{number}"})
    for number in range(200):
        fresh = PageItem(url=f"http://b.test/{number}")
        record = yield deferred_from_coro(registry.prepared(fresh))
        assert record["url"] == f"http://b.test/{number}"
