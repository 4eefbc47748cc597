"""The match stage in a crawl: each page gets its best references, counted in the stats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.addon import WebsimAddon
from websim_crawler.core.reference_index import ReferenceIndex
from websim_crawler.core.similarity.comparison import page_features
from websim_crawler.items import PageItem
from websim_crawler.pipelines.matching import MATCHES_FIELD, MatchPipeline

SITE = Path(__file__).resolve().parents[2] / "support" / "site"
PAGES = ("about.html", "help.html", "index.html", "post.html")


def built_index(path: Path) -> None:
    index = ReferenceIndex()
    for name in PAGES:
        index.add(page_features((SITE / name).read_bytes(), url=f"http://protected.example/{name}"))
    index.save(path)


def test_without_an_index_the_stage_is_not_configured() -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(MatchPipeline, get_crawler(settings_dict={}))


def test_the_addon_enables_the_stage_with_an_index(tmp_path: Path) -> None:
    settings: dict[str, Any] = {"WEBSIM_MATCH_INDEX": str(tmp_path / "refs.idx")}
    crawler = get_crawler(settings_dict={**settings, "ADDONS": {WebsimAddon: 0}})
    assert "websim_crawler.pipelines.matching.MatchPipeline" in crawler.settings["ITEM_PIPELINES"]


@pytest_twisted.inlineCallbacks
def test_each_page_gets_its_best_references(tmp_path: Path) -> Any:
    built_index(tmp_path / "refs.idx")
    crawler = get_crawler(
        settings_dict={"WEBSIM_MATCH_INDEX": str(tmp_path / "refs.idx"), "WEBSIM_MATCH_TOP": 2}
    )
    crawler.stats.open_spider()
    pipeline = build_from_crawler(MatchPipeline, crawler)
    item = PageItem(url="http://copy.example/help", html=(SITE / "help.html").read_text())
    matched = yield deferred_from_coro(pipeline.process_item(item))
    references = matched[MATCHES_FIELD]
    assert len(references) == 2
    assert references[0]["url"] == "http://protected.example/help.html"
    assert references[0]["verdict"] == "similar"
    plain = {"url": "http://copy.example/none", "html": None}
    yield deferred_from_coro(pipeline.process_item(plain))
    assert MATCHES_FIELD not in plain
    stats = crawler.stats.get_stats()
    assert stats["websim/match/references"] == len(PAGES)
    assert stats["websim/match/pages"] == 1
    assert stats["websim/match/similar"] == 1
    assert stats["websim/match/skipped/no_html"] == 1


def test_an_unreadable_index_stops_the_crawl_at_start(tmp_path: Path) -> None:
    (tmp_path / "refs.idx").write_bytes(b"nonsense")
    crawler = get_crawler(settings_dict={"WEBSIM_MATCH_INDEX": str(tmp_path / "refs.idx")})
    with pytest.raises(Exception, match="not a websim index"):
        build_from_crawler(MatchPipeline, crawler)
