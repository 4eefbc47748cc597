"""The one config door: typed, resolved settings, built once per crawler and shared."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.config import WebsimConfig, setting_names, websim_config
from websim_crawler.core.similarity.params import STAGES
from websim_crawler.errors import ConfigError
from websim_crawler.extensions import StatsFile
from websim_crawler.middlewares.retry_after import RetryAfterMiddleware
from websim_crawler.pipelines.analysis import PageAnalysisPipeline
from websim_crawler.pipelines.similarity import SimilarityPipeline


def test_stage_weights_are_parsed_once_into_numbers() -> None:
    config = WebsimConfig.from_settings({"WEBSIM_SIMILARITY_STAGE_WEIGHTS": " 1, 0.5,2,0 "})
    assert config.similarity.stage_weights == (1.0, 0.5, 2.0, 0.0)
    listed = WebsimConfig.from_settings({"WEBSIM_SIMILARITY_STAGE_WEIGHTS": [0, 1, 0, 0]})
    assert listed.similarity.stage_weights == (0.0, 1.0, 0.0, 0.0)
    assert WebsimConfig().similarity.stage_weights == (0.0, 0.0, 1.0, 0.0)  # fitted on big9
    assert "WEBSIM_SIMILARITY_STAGE_WEIGHTS" in listed.changed_settings()


@pytest.mark.parametrize("value", ["1,1,1", "1,x,1,1", "0,0,0,0", "1,-1,1,1", "nan,1,1,1", 7])
def test_bad_stage_weights_name_the_setting(value: object) -> None:
    with pytest.raises(ConfigError, match="WEBSIM_SIMILARITY_STAGE_WEIGHTS"):
        WebsimConfig.from_settings({"WEBSIM_SIMILARITY_STAGE_WEIGHTS": value})


def test_from_settings_loads_the_weights_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.json"
    payload = {"stages": list(STAGES), "coefficients": [1.0, 0.0, 3.0, 0.0], "intercept": -1.0}
    path.write_text(json.dumps(payload), encoding="utf-8")
    config = WebsimConfig.from_settings({"WEBSIM_SIMILARITY_WEIGHTS_FILE": str(path)})
    assert config.similarity.stage_weights == pytest.approx((0.25, 0.0, 0.75, 0.0))
    assert config.similarity.combined_threshold == pytest.approx(0.25)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="WEBSIM_SIMILARITY_WEIGHTS_FILE"):
        WebsimConfig.from_settings({"WEBSIM_SIMILARITY_WEIGHTS_FILE": str(path)})


def test_components_of_one_crawler_share_one_config(tmp_path: Path) -> None:
    crawler = get_crawler(
        settings_dict={
            "WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "pairs.json"),
            "WEBSIM_STATS_OUTPUT": str(tmp_path / "stats.json"),
            "WEBSIM_RETRY_AFTER_MAX": "5",
            "ADDONS": {"websim_crawler.addon.WebsimAddon": 0},  # as the project's settings
        }
    )
    config = websim_config(crawler)
    assert websim_config(crawler) is config
    assert build_from_crawler(PageAnalysisPipeline, crawler).config is config
    assert build_from_crawler(SimilarityPipeline, crawler).config is config
    assert build_from_crawler(StatsFile, crawler).path == str(tmp_path / "stats.json")
    assert build_from_crawler(RetryAfterMiddleware, crawler).longest_wait == 5.0
    assert config.reliability.stats_output == str(tmp_path / "stats.json")
    other = get_crawler(settings_dict={"WEBSIM_RETRY_AFTER_MAX": "7"})
    assert websim_config(other) is not config
    assert websim_config(other).reliability.retry_after_max == 7.0


def test_a_setting_changed_after_the_first_read_is_seen() -> None:
    crawler = SimpleNamespace(settings=Settings())  # unfrozen, as before the add-ons ran
    first = websim_config(crawler)
    crawler.settings.set("WEBSIM_TOP_KEYWORDS", 9, priority="addon")
    second = websim_config(crawler)
    assert second is not first and second.analysis.top_keywords == 9
    assert websim_config(crawler) is second


def test_every_setting_name_is_declared_once() -> None:
    names = setting_names()
    assert len(names) == len(set(names)) > 100
    assert {"WEBSIM_STATS_OUTPUT", "WEBSIM_RETRY_AFTER_MAX", "WEBSIM_CHROMIUM_PATH"} <= set(names)


def test_an_output_set_whose_stage_is_not_running_is_refused_at_start(tmp_path: Path) -> None:
    output = {"WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "pairs.json")}
    with pytest.raises(ConfigError, match="WEBSIM_SIMILARITY_OUTPUT set but SimilarityPipeline"):
        build_from_crawler(PageAnalysisPipeline, get_crawler(settings_dict=output))
    with_addon = {**output, "ADDONS": {"websim_crawler.addon.WebsimAddon": 0}}
    listed = {
        **output,
        "ITEM_PIPELINES": {"websim_crawler.pipelines.similarity.SimilarityPipeline": 810},
    }
    for settings in (with_addon, listed, {}):  # the add-on, the component by hand, no output
        assert build_from_crawler(PageAnalysisPipeline, get_crawler(settings_dict=settings))
