"""Named similarity questions: settings and flags, reports, groups of pages, the pair cap."""

from __future__ import annotations

import json
import re
import urllib.request
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from conftest import analysed
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.config import WebsimConfig
from websim_crawler.core.similarity import page_features
from websim_crawler.core.similarity.comparison import compare_pages
from websim_crawler.core.similarity.pairs import capped, find_similar_pairs, page_groups
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.questions import QUESTIONS, ask
from websim_crawler.demo.site import DemoSite
from websim_crawler.errors import ConfigError
from websim_crawler.pipelines.similarity import SimilarityPipeline

LIST_PAGE = (
    "<html><head><title>Apple pie</title></head><body><div id='nav'><a href='/a'>a</a>"
    "<a href='/b'>b</a></div><ul class='r'><li>Apple pie with cinnamon apples</li>"
    "<li>Baked apple pie recipes</li><li>Apple crumble and apple pie</li></ul></body></html>"
)


def test_auto_asks_the_entry_points_question_and_custom_keeps_the_weights() -> None:
    params = SimilarityParams()
    compare = ask(params, "looks-alike")
    assert compare.question == "looks-alike"
    assert compare.stage_weights == QUESTIONS["looks-alike"].stage_weights
    assert compare.combined_threshold == QUESTIONS["looks-alike"].threshold
    assert ask(params, "same-template").question == "same-template"
    chosen = ask(SimilarityParams(question="same-content"), "looks-alike")
    assert chosen.stage_weights == QUESTIONS["same-content"].stage_weights
    custom = ask(SimilarityParams(question="custom", stage_weights=(1, 2, 3, 4)), "same-site")
    assert (custom.question, custom.stage_weights) == ("custom", (1, 2, 3, 4))
    with pytest.raises(ConfigError, match="default question"):
        ask(params, "custom")


def test_question_setting_is_validated_and_has_a_flag() -> None:
    config = WebsimConfig.from_settings({"WEBSIM_SIMILARITY_QUESTION": "same-site"})
    assert config.similarity.question == "same-site"
    with pytest.raises(ConfigError, match="WEBSIM_SIMILARITY_QUESTION"):
        WebsimConfig.from_settings({"WEBSIM_SIMILARITY_QUESTION": "alike"})


def test_every_question_names_stages_that_weigh() -> None:
    for question in QUESTIONS.values():
        assert question.stages and 0.0 <= question.threshold <= 1.0
        assert len(question.stage_weights) == 4


def test_report_names_the_question_and_the_deciding_stages() -> None:
    first = page_features(LIST_PAGE, url="http://a.test/1")
    second = page_features(LIST_PAGE.replace("crumble", "tart"), url="http://b.test/1")
    params = ask(SimilarityParams(question="same-content"), "looks-alike")
    report = compare_pages(first, second, params=params)
    assert report.question == "same-content"
    assert report.decided_by == QUESTIONS["same-content"].stages
    full = compare_pages(first, second, "full", SimilarityParams(layout_threshold=1.0))
    assert full.question == "custom"
    assert {r.stage for r in full.stages if r.verdict == "similar"} >= {"layout"}


def test_compare_html_report_shows_thresholds_as_set(tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(LIST_PAGE, encoding="utf-8")
    second.write_text(LIST_PAGE, encoding="utf-8")
    out = tmp_path / "report.html"
    code = main(
        ["compare", str(first), str(second), "--format", "html", "-o", str(out),
         "--question", "same-site", "-s", "WEBSIM_SIMILARITY_LINKS_THRESHOLD=0.005"]
    )  # fmt: skip
    text = out.read_text(encoding="utf-8")
    assert code in (0, 1)
    assert "<td>links</td>" in text and "<td>0.005</td>" in text and "<td>0.01</td>" not in text
    assert "Question: same-site" in text and "Decided by:" in text


def test_page_groups_keep_pairs_that_share_their_similar_pages() -> None:
    assert page_groups(7, [(0, 2), (4, 5), (2, 6), (1, 1)]) == [[0, 2, 6], [4, 5]]
    assert page_groups(3, []) == []
    # Two cliques bridged by one pair stay two groups.
    clique = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    bridged = clique + [(a + 4, b + 4) for a, b in clique] + [(3, 4)]
    assert page_groups(8, bridged) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # A hub like every page joins the side it shares most with, not both.
    big = [(a, b) for a in range(1, 6) for b in range(a + 1, 6)]
    hub = big + [(6, 7)] + [(0, n) for n in range(1, 8)]
    assert page_groups(8, hub) == [[0, 1, 2, 3, 4, 5], [6, 7]]


def test_capped_keeps_at_most_the_limit_spread_over_the_candidates() -> None:
    candidates = [(i, j) for i in range(10) for j in range(i + 1, 10)]
    kept = capped(candidates, 9)
    assert len(kept) == 9 and len(set(kept)) == 9 and set(kept) <= set(candidates)
    assert kept[0] == candidates[0] and kept[-1][0] >= 6  # spread, not the first nine
    assert capped(candidates, 100) == candidates


def test_the_cap_is_counted() -> None:
    pages = [page_features(LIST_PAGE, url=f"http://s.test/{n}") for n in range(6)]
    result = find_similar_pairs(pages, SimilarityParams(max_pairs=4))
    assert (result.candidate_pairs, result.capped_pairs, result.all_pairs) == (4, 11, 15)
    assert result.to_dict()["capped_pairs"] == 11


def crawl_demo(site_url: str, limit: int) -> list[dict[str, str]]:
    """Fetch the demo site breadth-first from its home page (a one-site crawl, loopback only)."""
    records: list[dict[str, str]] = []
    queue, seen = deque([site_url]), {site_url}
    while queue and len(records) < limit:
        url = queue.popleft()
        with urllib.request.urlopen(url, timeout=10) as response:
            html = response.read().decode("utf-8")
        records.append({"url": url, "html": html})
        for link in re.findall(r'href="([^"#]+)"', html):
            target = urljoin(url, link)
            if target.startswith(site_url) and target not in seen:
                seen.add(target)
                queue.append(target)
    return records


def test_similar_groups_the_demo_sites_result_pages_apart_from_its_records(
    tmp_path: Path,
) -> None:
    with DemoSite() as site:
        records = crawl_demo(site.url, 60)
    kinds = {record["url"]: urlsplit(record["url"]).path.split("/")[1] for record in records}
    assert {"search", "record"} <= set(kinds.values())
    feed = tmp_path / "pages.jsonl"
    feed.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    out = tmp_path / "groups.json"
    assert main(["similar", str(feed), "-o", str(out), "--no-progress"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["question"] == "same-template"
    assert report["decided_by"] == ["template_classes"]
    groups = [set(group["pages"]) for group in report["groups"]]
    assert report["ungrouped"] + sum(map(len, groups)) == len(records)
    ungrouped = set(report["ungrouped_pages"])  # which pages, not only how many
    assert len(ungrouped) == report["ungrouped"] and not ungrouped & set().union(*groups)
    assert ungrouped | set().union(*groups) == {record["url"] for record in records}
    for kind in ("search", "record"):
        holding = [g for g in groups if any(kinds[url] == kind for url in g)]
        assert holding, f"no group of {kind} pages"
    for group in groups:  # no group mixes result lists and records
        assert not {"search", "record"} <= {kinds[url] for url in group}
    for kind in ("search", "record"):  # each kind mostly in one group
        total = sum(1 for value in kinds.values() if value == kind)
        most = max(sum(1 for url in group if kinds[url] == kind) for group in groups)
        assert most >= 0.8 * total, kind


def test_pipeline_compares_lsh_candidates_only_and_counts_the_cap(tmp_path: Path) -> object:
    output = tmp_path / "groups.json"
    crawler = get_crawler(
        settings_dict={
            "WEBSIM_SIMILARITY_OUTPUT": str(output),
            "WEBSIM_SIMILARITY_MAX_PAIRS": 2,
            "WEBSIM_ANALYSIS_WORKERS": 0,  # the items come without analysis: prepared here
        }
    )
    crawler.stats.open_spider()
    pipeline = build_from_crawler(SimilarityPipeline, crawler)
    table = "<html><body><table><tr><td>Engine oil</td></tr></table></body></html>"
    for number in range(6):
        html = LIST_PAGE if number < 4 else table
        # a link of its own: no two pages are identical (identical pages are compared once)
        html = html.replace("</body>", f"<a href='/n{number}'>n</a></body>")
        item = {"url": f"http://s.test/{number}", "html": html}
        assert analysed(pipeline, item) is item

    def check(_result: object) -> None:
        report = json.loads(output.read_text(encoding="utf-8"))
        assert report["question"] == "same-template" and report["blocking"] == "minhash-lsh"
        # LSH pairs the four list pages among themselves and the two tables: 6 + 1 candidates.
        assert report["candidate_pairs"] == 2 and report["capped_pairs"] == 5
        assert crawler.stats.get_value("websim/similarity/capped_pairs") == 5
        assert crawler.stats.get_value("websim/similarity/candidate_pairs") == 2

    return deferred_from_coro(pipeline.close_spider()).addCallback(check)
