"""Adversarial generators at doubling sizes: cost grows about linearly, and every input ends as
a result, a counted drop (``PageError``) or a counted skipped feed line.

Time is CPU time of this process, compared between sizes measured in one run (never absolute
seconds); the bound is generous (a linear cost grows 8x over three doublings, a quadratic one
64x), so it holds with every core busy. The candidate pairs of identical pages are counted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.hostile_generators import FEED_GENERATORS, PAGE_GENERATORS, identical_pages

from websim_crawler.core.html.parsing import flatten_deep_nesting
from websim_crawler.core.io.feed_reader import RecordOverBound, decode_record
from websim_crawler.core.neardup.detect import find_near_duplicates
from websim_crawler.core.neardup.sentences import split_sentences
from websim_crawler.core.page import analyse_page
from websim_crawler.core.similarity import SimilarityParams, find_similar_pairs, page_features
from websim_crawler.core.urls import page_key
from websim_crawler.errors import PageError

DOUBLINGS = 3  # sizes n, 2n, 4n, 8n
MAX_GROWTH = 24.0  # over 8x the size: linear ~8, n log n ~9-10, quadratic ~64


def _cpu_seconds(work: Callable[[], Any]) -> float:
    """The least CPU time of three runs (the noise of a busy machine only adds time)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)


def _growth(work: Callable[[int], Any], base: int) -> float:
    smallest = _cpu_seconds(lambda: work(base))
    largest = _cpu_seconds(lambda: work(base * 2**DOUBLINGS))
    return largest / smallest


def _analysed_or_dropped(html: str) -> str:
    try:
        analysis = analyse_page(html, "http://s.test/page")
    except PageError as error:
        assert error.reason  # a counted drop
        return error.reason
    assert analysis.to_dict() is not None
    return "kept"


PAGE_BASE_SIZES = {
    "deep_nesting": 1500,
    "deep_nesting_unclosed_tags": 2500,
    "wide_nesting": 500,
    "stray_closing_tags": 2500,
    "punctuation_run": 5000,
    "giant_attribute": 20_000,
    "edge_marks_label": 5000,
}


@pytest.mark.parametrize("name", sorted(PAGE_GENERATORS))
def test_page_analysis_grows_linearly_on_adversarial_pages(name: str) -> None:
    generate = PAGE_GENERATORS[name]
    base = PAGE_BASE_SIZES[name]
    pages = {size: generate(size) for size in (base, base * 2**DOUBLINGS)}
    for page in pages.values():
        assert _analysed_or_dropped(page) in {"kept", "no_main_text", "empty", "too_many_elements"}
    growth = _growth(lambda size: _analysed_or_dropped(pages[size]), base)
    assert growth < MAX_GROWTH, f"{name}: 8x the size cost {growth:.1f}x the time"


def test_flattening_and_sentence_splitting_grow_linearly() -> None:
    """The two algorithms issue 25 timed at 16-331 s, alone (no parse around them)."""
    unclosed = PAGE_GENERATORS["deep_nesting_unclosed_tags"]
    growth = _growth(lambda n: flatten_deep_nesting(unclosed(n), 1000), 4000)
    assert growth < MAX_GROWTH, f"flatten_deep_nesting: {growth:.1f}x"
    growth = _growth(lambda n: split_sentences("Lava" + "." * n + "x flows."), 20_000)
    assert growth < MAX_GROWTH, f"split_sentences: {growth:.1f}x"
    assert split_sentences("Lava" + "." * 40_000 + "x flows. Then") == [
        "Lava" + "." * 40_000 + "x flows.",
        "Then",
    ]


FEED_BASE_SIZES = {
    "nested_feed_line": 50_000,
    "huge_number_feed_line": 50_000,
    "many_values_feed_line": 100_000,
}


@pytest.mark.parametrize("name", sorted(FEED_GENERATORS))
def test_feed_lines_are_decoded_or_skipped_in_linear_time(name: str) -> None:
    generate = FEED_GENERATORS[name]
    base = FEED_BASE_SIZES[name]
    lines = {size: generate(size) for size in (base, base * 2**DOUBLINGS)}

    def decode(size: int) -> str:
        try:
            decode_record(lines[size])
        except RecordOverBound as error:
            return error.reason
        return "kept"

    expected = {
        "nested_feed_line": "too_deep",
        "huge_number_feed_line": "huge_number",
        "many_values_feed_line": "kept",
    }[name]
    assert {decode(size) for size in lines} == {expected}
    growth = _growth(decode, base)
    assert growth < MAX_GROWTH, f"{name}: 8x the size cost {growth:.1f}x the time"


def test_too_many_values_is_a_counted_skip() -> None:
    with pytest.raises(RecordOverBound) as raised:
        decode_record(FEED_GENERATORS["many_values_feed_line"](2_100_000))
    assert raised.value.reason == "too_many_values"


def test_identical_pages_cost_a_constant_number_of_comparisons() -> None:
    """1,000 identical pages gave 499,500 comparisons; now one group, whatever their number."""
    features = page_features(identical_pages(1)[0], url="http://s.test/0")
    for count in (250, 500, 1000):
        pages = [dataclasses.replace(features, url=f"http://s.test/{n}") for n in range(count)]
        result = find_similar_pairs(pages, SimilarityParams(blocking_min_pages=200))
        assert result.candidate_pairs == 0
        assert len(result.identical_groups) == 1 and len(result.identical_groups[0]) == count


def test_identical_pages_form_one_near_duplicate_group_in_linear_work() -> None:
    """Identical pages on many sites: sentences too frequent to pair, yet reported as groups."""
    article = "".join(
        f"<p>This is sentence number {n} of the article about lava flows and the village.</p>"
        for n in range(12)
    )
    html = f"<html><body><article>{article}</article>"
    other = html.replace("lava", "magma")
    for count in (150, 300):
        items = [
            {"url": f"http://s{n % 7}.test/{n}", "html": other if n % 3 == 0 else html}
            for n in range(count)
        ]
        report = find_near_duplicates(items)
        groups = report.to_dict()["identical_groups"]
        assert [len(group) for group in groups] == [count // 3, count - count // 3]
        assert groups[0][:2] == ["http://s0.test/0", "http://s3.test/3"]
        assert groups[1][:2] == ["http://s1.test/1", "http://s2.test/2"]
        assert report.stats["identical_groups"] == 2
        assert report.stats["pair_entries"] <= count  # no pair checks grow with count squared


def test_keying_an_archived_link_with_a_line_break_grows_linearly() -> None:
    """A Wayback link whose host-like run is followed by a line break (a feed's links field)."""
    growth = _growth(
        lambda n: page_key("http://web.archive.org/web/2020/" + "a." * n + "\nx"), 2000
    )
    assert growth < MAX_GROWTH, f"page_key: {growth:.1f}x"
    assert page_key("http://web.archive.org/web/2020/http://a.org/x") == "a.org/x"
