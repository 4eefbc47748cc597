"""The near-duplicate pipeline: items indexed as they pass, the report written at close."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from conftest import analysed
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.items import PageItem
from websim_crawler.pipelines.analysis import PageAnalysisPipeline
from websim_crawler.pipelines.neardup import NearDuplicatePipeline

SENTENCES = [
    f"Paragraph {i} of the shared story tells how the ferry number {i} sailed." for i in range(12)
]


def page(sentences: list[str]) -> str:
    menu = "".join(f"<li><a href='/m{i}'>Menu {i}</a></li>" for i in range(6))
    body = "".join(f"<p>{sentence}</p>" for sentence in sentences)
    return f"<html><body><div><ul>{menu}</ul></div><div>{body}</div></body></html>"


def test_pipeline_is_disabled_without_an_output_setting() -> None:
    with pytest.raises(NotConfigured, match="WEBSIM_NEARDUP_OUTPUT"):
        build_from_crawler(NearDuplicatePipeline, get_crawler(settings_dict={}))


@pytest_twisted.inlineCallbacks
def test_pipeline_after_the_analysis_writes_the_report(tmp_path: Path) -> Any:
    output = tmp_path / "out" / "neardup.json"
    crawler = get_crawler(
        settings_dict={
            "WEBSIM_NEARDUP_OUTPUT": str(output),
            "WEBSIM_NEARDUP_MIN_SHARED_SENTENCES": "3",
            "WEBSIM_ANALYSIS_WORKERS": 0,
            "ADDONS": {"websim_crawler.addon.WebsimAddon": 0},  # as the project's settings
        }
    )
    analysis = build_from_crawler(PageAnalysisPipeline, crawler)
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    records = [
        ("http://news.test/a", SENTENCES[0:5]),
        ("http://mirror.test/a", SENTENCES[0:5]),
        ("http://news.test/all", SENTENCES[0:8]),
        ("http://news.test/two", SENTENCES[6:8] + SENTENCES[9:12]),  # 2 shared: below 3
    ]
    for url, sentences in records:
        item = analysed(analysis, PageItem(url=url, html=page(sentences)))
        assert item["chunks"]
        assert analysed(pipeline, item) is item
    analysed(pipeline, PageItem(url="http://news.test/empty"))
    yield deferred_from_coro(pipeline.close_spider())

    report = json.loads(output.read_text(encoding="utf-8"))
    kinds = sorted((pair["class"], pair["relation"]) for pair in report["pairs"])
    assert kinds == [
        ("identical", "mirror"),
        ("inclusion", "cross-site copy"),
        ("inclusion", "in-site inclusion"),
    ]
    assert report["stats"]["params"]["min_shared_sentences"] == 3
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("websim/neardup/pages/indexed") == 4
    assert stats.get_value("websim/neardup/pages/skipped/no_html") == 1
    assert stats.get_value("websim/neardup/pairs") == 3
    assert stats.get_value("websim/neardup/class/identical") == 1
    assert list(output.parent.iterdir()) == [output]  # atomic write left no temporary file


@pytest_twisted.inlineCallbacks
def test_pipeline_with_no_pages_writes_an_empty_report(tmp_path: Path) -> Any:
    output = tmp_path / "neardup.json"
    crawler = get_crawler(
        settings_dict={"WEBSIM_NEARDUP_OUTPUT": str(output), "WEBSIM_NEARDUP_METHOD": "minhash"}
    )
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    yield deferred_from_coro(pipeline.close_spider())
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["pairs"] == [] and report["stats"]["method"] == "minhash"
    assert report["stats"]["pages"]["indexed"] == 0
