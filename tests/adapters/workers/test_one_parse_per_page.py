"""One parse per analysed page, by the one parser, under one set of limits (issue 29)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
import pytest

import websim_crawler.core.html.parsing as parsing
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.similarity import page_features
from websim_crawler.core.similarity.documents import as_parsed_document, clear_parsed_text_cache
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.portable import features_to_dict
from websim_crawler.core.stages import StagePlan
from websim_crawler.errors import PageError
from websim_crawler.workers.tasks import PageTask, analyse_task

SITE = Path(__file__).resolve().parents[2] / "support" / "site"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Count every HTML parse: the one parser's entry and every lxml parsing function."""
    counts: Counter[str] = Counter()

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(parsing, "_parse_page", counted("one parser", parsing._parse_page))
    for module, name in (
        (lxml.etree, "fromstring"),
        (lxml.etree, "HTML"),
        (lxml.etree, "HTMLPullParser"),
        (lxml.html, "fromstring"),
        (lxml.html, "document_fromstring"),
    ):
        monkeypatch.setattr(module, name, counted(f"lxml {name}", getattr(module, name)))
    clear_parsed_text_cache()
    yield counts
    clear_parsed_text_cache()


def pages() -> list[Path]:
    found = sorted(SITE.glob("*.html"))[:4]
    assert found, "tests/support/site holds the fixture pages"
    return found


@pytest.mark.parametrize("chunk_detail", ["none", "full"])
def test_a_worker_parses_each_page_once_for_the_analysis_and_every_stage(
    parses: Counter[str], chunk_detail: str
) -> None:
    analysis = AnalysisParams()
    plan = StagePlan(
        analysis,
        clustering_kind="all",
        similarity=SimilarityParams(),
        neardup=NeardupParams() if chunk_detail == "full" else None,  # reads the chunks
    )
    for number, path in enumerate(pages(), start=1):
        html = path.read_text(encoding="utf-8")
        task = PageTask(html, f"http://site.test/{path.name}", fields={"kind": "record"})
        outcome = analyse_task(task, analysis, chunk_detail, plan)
        assert outcome.record is not None and outcome.stage_record is not None
        assert outcome.stage_record["similarity_features"]["document"] is not None
        assert parses["one parser"] == number  # the analysis' parse, nothing else
    assert parses["lxml fromstring"] == len(pages())  # each through the one parser


def test_the_layout_from_the_kept_tree_is_the_layout_from_a_parse(parses: Counter[str]) -> None:
    """Deriving the features from the analysed tree changes nothing but the parse count."""
    for path in pages():
        html = path.read_text(encoding="utf-8")
        url = f"http://site.test/{path.name}"
        from_tree = features_to_dict(page_features(html, url=url))  # analysis kept its tree
        parsed = features_to_dict(
            page_features(
                html,
                url=url,
                keywords=from_tree["keywords"],
                links=[link for link in from_tree["absolute_links"] or ()],
            )
        )
        assert from_tree["document"] == parsed["document"]
    assert parses["one parser"] == 2 * len(pages())  # once each, in each of the two ways


def test_features_of_a_page_without_keywords_parse_it_once(parses: Counter[str]) -> None:
    keyworded = 0
    for number, path in enumerate(pages(), start=1):
        features = page_features(path.read_bytes(), url=f"http://site.test/{path.name}")
        assert features.document is not None
        keyworded += bool(features.keywords)
        assert parses["one parser"] == number
    assert keyworded


def test_a_page_over_the_element_limit_gets_one_answer_everywhere(parses: Counter[str]) -> None:
    """Before: the analysis refused the page and the layout compared it anyway (huge_tree)."""
    page = "<html><body>" + "<div><span>x</span></div>" * 300 + "</body></html>"
    limited = AnalysisParams(max_elements=500)
    features = page_features(page, url="http://site.test/wide", analysis_params=limited)
    assert features.document is None
    assert [problem.split(":")[0] for problem in features.problems] == ["html", "analysis"]
    assert all("WEBSIM_MAX_ELEMENTS" in problem for problem in features.problems)
    with pytest.raises(PageError) as refused:
        as_parsed_document(page, limited.parse_limits)
    assert refused.value.reason == "too_many_elements"
    with pytest.raises(PageError) as too_large:
        as_parsed_document(page, AnalysisParams(max_page_bytes=100).parse_limits)
    assert too_large.value.reason == "too_large"
    assert as_parsed_document(page).vertices  # within the default limits
