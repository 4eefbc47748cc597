"""Lean logs: one line per item (never its HTML), and no "Disabled" warnings for stages that
were not asked for."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from websim_crawler import settings as project_settings
from websim_crawler.addon import WebsimAddon
from websim_crawler.components import OPTIONAL_COMPONENTS
from websim_crawler.items import PageItem
from websim_crawler.logformatter import ItemSummaryLogFormatter, item_summary

HTML = "<html><body>" + "<p>secret markup</p>" * 100 + "</body></html>"


def formatted(result: dict) -> str:
    return result["msg"] % result["args"]


def test_scraped_and_dropped_items_are_one_short_line() -> None:
    crawler = get_crawler(Spider)
    spider = Spider("test")
    spider.crawler = crawler
    formatter = ItemSummaryLogFormatter.from_crawler(crawler)
    item = PageItem(
        url="http://v.test/a",
        kind="record",
        html=HTML,
        main_text="x" * 2817,
        keywords={f"k{n}": 1 for n in range(143)},
        chunks=[{"text": "secret markup"}],
    )
    response = HtmlResponse("http://v.test/a", body=HTML.encode(), encoding="utf-8")
    scraped = formatted(formatter.scraped(item, response, spider))
    assert (
        scraped
        == "Scraped from <200 http://v.test/a>: kind=record main_text=2817 chars keywords=143"
    )
    dropped_result = formatter.dropped(item, ValueError("too_many_elements: big"), response, spider)
    dropped = formatted(dropped_result)
    assert dropped == (
        "Dropped: too_many_elements: big [http://v.test/a kind=record main_text=2817 chars "
        "keywords=143]"
    )
    assert dropped_result["level"] == logging.WARNING
    error = formatted(formatter.item_error(item, ValueError("bug"), response, spider))
    assert "secret" not in error and "http://v.test/a" in error
    assert item_summary({"url": "http://v.test/b"}) == "http://v.test/b"
    assert item_summary(42) == "int object"


def settings_with(**values: str) -> Settings:
    settings = Settings()
    settings.setmodule(project_settings, priority="project")
    for name, value in values.items():
        settings.set(name, value, priority="cmdline")
    return settings


def test_each_optional_component_is_enabled_only_with_its_output() -> None:
    bare = settings_with()
    WebsimAddon().update_settings(bare)
    assert dict(bare["ITEM_PIPELINES"]) == {"websim_crawler.pipelines.PageAnalysisPipeline": 300}
    assert "websim_crawler.extensions.StatsFile" not in bare["EXTENSIONS"]

    configured = settings_with(
        WEBSIM_CLUSTERS_OUTPUT="clusters.json", WEBSIM_STATS_OUTPUT="stats.json"
    )
    WebsimAddon().update_settings(configured)
    pipelines = dict(configured["ITEM_PIPELINES"])
    assert pipelines["websim_crawler.pipelines.clustering.ClusteringPipeline"] == 800
    assert "websim_crawler.pipelines.similarity.SimilarityPipeline" not in pipelines
    assert "websim_crawler.pipelines.neardup.NearDuplicatePipeline" not in pipelines
    assert configured["EXTENSIONS"]["websim_crawler.extensions.StatsFile"] == 1000
    assert set(OPTIONAL_COMPONENTS) == {
        "WEBSIM_CLUSTERS_OUTPUT",
        "WEBSIM_SIMILARITY_OUTPUT",
        "WEBSIM_NEARDUP_OUTPUT",
        "WEBSIM_STATS_OUTPUT",
        "WEBSIM_MATCH_INDEX",
        "WEBSIM_WARC_OUTPUT",
    }


def test_a_stage_listed_by_the_project_keeps_its_order() -> None:
    settings = settings_with(WEBSIM_NEARDUP_OUTPUT="neardup.json")
    settings["ITEM_PIPELINES"]["websim_crawler.pipelines.neardup.NearDuplicatePipeline"] = 900
    WebsimAddon().update_settings(settings)
    assert (
        settings["ITEM_PIPELINES"]["websim_crawler.pipelines.neardup.NearDuplicatePipeline"] == 900
    )
