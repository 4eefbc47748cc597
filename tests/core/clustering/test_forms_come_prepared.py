"""The clustering collector only appends: a page's keyword forms come prepared (in a worker, by
``core.stages``), so nothing is tokenised on Scrapy's reactor (issue 42 section 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import websim_crawler.core.clustering.job as job
import websim_crawler.core.text as text
from websim_crawler.core.clustering import (
    ClusteringParams,
    DocumentCollector,
    build_report,
    cluster_documents,
)
from websim_crawler.core.page import AnalysisParams, analyse_page
from websim_crawler.core.stages import StagePlan, prepare_record

# The report the collector gave for this feed when it tokenised each page's text itself.
BEFORE = json.loads(
    (Path(__file__).parent / "clusters_of_a_small_feed.json").read_text(encoding="utf-8")
)
TOPICS = {
    "sky": "Telescopes show galaxies and comets; amateur astronomers point telescopes at distant "
    "galaxies, nebulae and the planets on clear nights.",
    "kitchen": "Ovens bake loaves; bakers knead doughs, watch ovens and loaves rising, and sell "
    "breads baked before sunrise.",
    "garden": "Gardeners plant roses and tulips; watering gardens, pruning roses and planting "
    "bulbs keeps flowers blooming.",
}


def crawl_feed() -> list[dict[str, Any]]:
    """Return the lines of a small crawl feed: three topics, four pages each, analysed."""
    lines = []
    for topic, words in TOPICS.items():
        for number in range(4):
            body = (
                f"<html><head><title>{topic} {number}</title></head><body><article>"
                f"<h1>{topic.title()} page {number}</h1><p>{words}</p><p>Page {number} of the "
                f"{topic} pages, with more {topic} words: {words.split(';')[0]}.</p>"
                "</article></body></html>"
            )
            url = f"http://site.test/{topic}/{number}"
            analysis = analyse_page(body, url)
            lines.append(
                {
                    "url": url,
                    "kind": "record",
                    "title": analysis.title,
                    "keywords": dict(analysis.keywords),
                    "keyword_stems": dict(analysis.keyword_stems),
                    "main_text": analysis.main_text,
                    "language": analysis.language,
                }
            )
    return lines


def canonical(report: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """Return a report's clusters and documents with the cluster ids renumbered by the clusters'
    members. Ids are labels: with several fuzzy c-means starts reaching the same objective, which
    start wins (and so which label each cluster gets) can vary with BLAS's thread timing."""
    order = sorted(report["clusters"], key=lambda cluster: sorted(cluster["members"]))
    new_id = {cluster["id"]: number for number, cluster in enumerate(order)}
    clusters = [cluster | {"id": new_id[cluster["id"]]} for cluster in order]
    documents = []
    for document in report["documents"]:
        memberships = [0.0] * len(document["memberships"])
        for old, value in enumerate(document["memberships"]):
            memberships[new_id[old]] = value
        documents.append(
            document | {"cluster": new_id[document["cluster"]], "memberships": memberships}
        )
    return clusters, documents


def refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("the collector tokenised a page")


def test_the_collector_tokenises_nothing_and_clusters_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = StagePlan(AnalysisParams(), clustering_kind="record")
    prepared = [prepare_record(line, plan) for line in crawl_feed()]  # in a worker, in a crawl
    assert all("keyword_forms" in record and "main_text" not in record for record in prepared)
    for module, name in ((job, "keyword_forms"), (text, "keyword_forms"), (text, "keyword_tokens")):
        monkeypatch.setattr(module, name, refuse)
    collector = DocumentCollector("record")
    assert [collector.add(record) for record in prepared] == [None] * 12
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=3, min_df=1))
    report = json.loads(json.dumps(build_report(result)))
    assert canonical(report) == canonical(BEFORE)
    shown = {k["stem"]: k["term"] for c in report["clusters"] for k in c["top_keywords"]}
    assert shown["telescop"] == "telescopes" and shown["galaxi"] == "galaxies"


def test_a_record_with_text_to_tokenise_goes_to_a_worker() -> None:
    from websim_crawler.core.stages import needs_worker

    plan = StagePlan(AnalysisParams(), clustering_kind="record")
    line = crawl_feed()[0]
    assert needs_worker(line, plan)
    assert not needs_worker({k: v for k, v in line.items() if k != "main_text"}, plan)
    assert not needs_worker(line | {"kind": "results"}, plan)  # not clustered: nothing to do
