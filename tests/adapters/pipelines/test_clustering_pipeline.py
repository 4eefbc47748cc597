"""The clustering pipeline (keywords buffered, clustered in a thread at close) and the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted
from conftest import analysed
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.core.text import keyword_tokens
from websim_crawler.items import PageItem
from websim_crawler.pipelines.clustering import ClusteringPipeline

TOPICS = {
    "astronomy": "planet galaxy telescope orbit comet nebula star asteroid eclipse cosmos",
    "cooking": "recipe flour oven butter sugar dough bake sauce garlic pepper",
    "football": "goal striker referee stadium league match penalty keeper midfield coach",
}


def topic_keywords(topic: str, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    words = TOPICS[topic].split()
    return dict(Counter(rng.choice(words, 12).tolist()))


def crawl_records() -> list[dict[str, Any]]:
    records = []
    for topic in TOPICS:
        for number in range(6):
            url = f"http://site.test/{topic}/{number}"
            records.append(
                {"url": url, "kind": "record", "keyword_stems": topic_keywords(topic, number)}
            )
    records.append({"url": "http://site.test/search?q=x", "kind": "results", "keyword_stems": {}})
    records.append(dict(records[0]))  # the same page twice
    return records


def test_pipeline_is_disabled_without_an_output_setting() -> None:
    with pytest.raises(NotConfigured, match="WEBSIM_CLUSTERS_OUTPUT"):
        build_from_crawler(ClusteringPipeline, get_crawler(settings_dict={}))


@pytest_twisted.inlineCallbacks
def test_pipeline_writes_clusters_and_html_at_close(tmp_path: Path) -> Any:
    output, report_page = tmp_path / "out" / "clusters.json", tmp_path / "report.html"
    crawler = get_crawler(
        settings_dict={
            "WEBSIM_CLUSTERS_OUTPUT": str(output),
            "WEBSIM_CLUSTERS_HTML": str(report_page),
            "WEBSIM_CLUSTERS_N": "3",
        }
    )
    pipeline = build_from_crawler(ClusteringPipeline, crawler)
    for record in crawl_records():
        item = PageItem(**record)
        assert analysed(pipeline, item) is item
    yield deferred_from_coro(pipeline.close_spider())

    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["params"]["n_clusters"] == 3
    assert report["input"]["skipped"] == {"duplicate_url": 1, "other_kind": 1}
    for cluster in report["clusters"]:
        assert cluster["size"] == 6
        topics = {url.split("/")[3] for url in cluster["members"]}
        assert len(topics) == 1
        assert cluster["top_keywords"][0]["stem"] in TOPICS[topics.pop()].split()
    assert "<svg" in report_page.read_text(encoding="utf-8")
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("websim/cluster/pages/kept") == 18
    assert stats.get_value("websim/cluster/pages/skipped") == 2
    assert stats.get_value("websim/cluster/documents") == 18
    assert stats.get_value("websim/cluster/n_clusters") == 3
    assert stats.get_value("websim/cluster/skipped/duplicate_url") == 1
    assert stats.get_value("websim/cluster/n_iter") >= 1


@pytest_twisted.inlineCallbacks
def test_pipeline_with_no_pages_writes_an_empty_report(tmp_path: Path) -> Any:
    output = tmp_path / "clusters.json"
    crawler = get_crawler(settings_dict={"WEBSIM_CLUSTERS_OUTPUT": str(output)})
    pipeline = build_from_crawler(ClusteringPipeline, crawler)
    yield deferred_from_coro(pipeline.close_spider())
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["clusters"] == [] and report["documents"] == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("websim/cluster/n_clusters") == 0


def write_feed(path: Path, records: list[dict[str, Any]], extra_lines: str = "") -> None:
    lines = [json.dumps(record) for record in records]
    path.write_text("\n".join(lines) + "\n" + extra_lines, encoding="utf-8")


def article_html(topic: str, seed: int) -> str:
    words = " ".join(np.random.default_rng(seed).choice(TOPICS[topic].split(), 60).tolist())
    return (
        f"<html><head><title>{topic} news</title></head><body>"
        '<div id="nav"><a href="/">home</a> <a href="/about">about</a></div>'
        f"<div id='main'><h1>{topic}</h1><p>{words}</p><p>{words}</p></div></body></html>"
    )


def test_cli_clusters_a_feed_and_analyses_pages_without_keywords(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = crawl_records()
    records.append(
        {
            "url": "http://site.test/cooking/html",
            "kind": "record",
            "html": article_html("cooking", 99),
        }
    )
    feed, output, page = tmp_path / "pages.jsonl", tmp_path / "c.json", tmp_path / "c.html"
    write_feed(feed, records, extra_lines='{"truncated": \n')
    code = main(
        [
            "cluster",
            str(feed),
            "-o",
            str(output),
            "--html",
            str(page),
            "--n-clusters",
            "auto",
            "--no-progress",
        ]
    )
    assert code == 1  # the truncated line is a failed input; the rest is clustered
    captured = capsys.readouterr()
    assert "1 feed line(s) skipped: invalid json" in captured.err
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["params"]["n_clusters"] == 3  # auto finds the three topics
    assert report["params"]["n_clusters_requested"] == "auto"
    upper = len(report["documents"]) // 5  # auto tries 2..N/5
    assert [c["n_clusters"] for c in report["validity"]["candidates"]] == list(range(2, upper + 1))
    assert report["input"]["skipped"] == {
        "duplicate_url": 1,
        "line_invalid_json": 1,
        "other_kind": 1,
    }
    cluster_of = {document["url"]: document["cluster"] for document in report["documents"]}
    assert cluster_of["http://site.test/cooking/html"] == cluster_of["http://site.test/cooking/0"]
    assert cluster_of["http://site.test/cooking/0"] != cluster_of["http://site.test/football/0"]
    assert "19 page(s) in 3 cluster(s)" in captured.out
    assert "Cluster 0" in page.read_text(encoding="utf-8")


def test_cli_kind_results_and_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    feed, output = tmp_path / "pages.jsonl", tmp_path / "c.json"
    write_feed(feed, crawl_records())
    # No result page to cluster: an input error, not an empty report that reads as "no clusters"
    assert (
        main(["cluster", str(feed), "-o", str(output), "--kind", "results", "--no-progress"]) == 2
    )
    err = capsys.readouterr().err
    assert "left out: 1 duplicate_url, 1 no_keywords, 18 other_kind" in err
    assert "--kind all clusters pages of every kind" in err and not output.exists()

    assert main(["cluster", str(feed), "-o", str(output), "--n-clusters", "lots"]) == 2
    assert "--n-clusters must be a positive integer or 'auto'" in capsys.readouterr().err
    assert main(["cluster", str(tmp_path / "missing.jsonl"), "-o", str(output)]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest_twisted.inlineCallbacks
def test_pipeline_reports_keywords_in_their_surface_form(tmp_path: Path) -> Any:
    output = tmp_path / "clusters.json"
    crawler = get_crawler(
        settings_dict={"WEBSIM_CLUSTERS_OUTPUT": str(output), "WEBSIM_CLUSTERS_N": "2"}
    )
    pipeline = build_from_crawler(ClusteringPipeline, crawler)
    texts = {
        "sky": "Telescopes show galaxies; telescopes show comets and galaxies.",
        "kitchen": "Ovens bake loaves; bakers watch ovens and loaves rising.",
    }
    for topic, text in texts.items():
        for number in range(4):
            item = {
                "url": f"http://site.test/{topic}/{number}",
                "kind": "record",
                "keyword_stems": dict(Counter(keyword_tokens(text, "en"))),
                "main_text": text,
                "language": "en",
            }
            # its text is tokenised for the forms in the worker pool, not on the reactor
            yield deferred_from_coro(pipeline.process_item(item))
    yield deferred_from_coro(pipeline.close_spider())
    report = json.loads(output.read_text(encoding="utf-8"))
    shown = {k["stem"]: k["term"] for c in report["clusters"] for k in c["top_keywords"]}
    assert shown["telescop"] == "telescopes" and shown["galaxi"] == "galaxies"
    assert shown["oven"] == "ovens" and shown["loav"] == "loaves"
