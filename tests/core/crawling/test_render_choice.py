"""render=auto: which groups of pages need a browser (pure decisions)."""

from __future__ import annotations

import pytest
from lxml import html

from websim_crawler.core.crawling.render_choice import (
    PageYield,
    RenderChoices,
    page_yield,
    rendering_adds,
)
from websim_crawler.core.crawling.shapes import url_shape

RESULTS = RenderChoices.group_of("results", "http://127.0.0.1:8000/search?q=bread&page=2")
RECORDS = RenderChoices.group_of("record", "http://127.0.0.1:8000/record/17")
EMPTY = PageYield(records=0, text_chars=300, links=12)
FULL = PageYield(records=10, text_chars=2400, links=40)
ARTICLE = PageYield(records=0, text_chars=5000, links=30)


def test_groups_are_kinds_and_url_shapes() -> None:
    assert RenderChoices.group_of("record", "http://127.0.0.1:8000/record/3") == RECORDS
    assert RenderChoices.group_of("page", "http://127.0.0.1:8000/record/3") != RECORDS
    assert ("results", url_shape("http://127.0.0.1:8000/search?page=1&q=cycling")) == RESULTS


def test_rendering_adds_records_text_or_links_beyond_noise() -> None:
    assert rendering_adds(EMPTY, FULL)
    assert not rendering_adds(FULL, FULL)
    assert not rendering_adds(ARTICLE, PageYield(0, 5100, 31))  # a clock, a banner: noise
    assert rendering_adds(ARTICLE, PageYield(0, 9000, 30))  # the body drawn by a script
    assert rendering_adds(PageYield(0, 100, 2), PageYield(0, 100, 30))  # links drawn by a script


def test_a_sample_that_rendering_adds_to_decides_render() -> None:
    choices = RenderChoices(samples=2)
    assert [choices.plan(RESULTS), choices.plan(RESULTS)] == ["sample", "sample"]
    assert choices.plan(RESULTS) == "wait"  # both samples in flight: the rest wait
    assert choices.sampled(RESULTS, EMPTY, FULL)
    assert choices.plan(RESULTS) == "render"
    assert choices.decisions()["render"] == 1


def test_samples_that_rendering_does_not_add_to_decide_plain() -> None:
    choices = RenderChoices(samples=2)
    assert choices.plan(RECORDS) == "sample"
    assert not choices.sampled(RECORDS, ARTICLE, ARTICLE)
    assert choices.plan(RECORDS) == "sample"  # one answered, one more to take
    assert not choices.sampled(RECORDS, ARTICLE, ARTICLE)
    assert choices.plan(RECORDS) == "plain"


def test_a_failed_sample_is_given_back() -> None:
    choices = RenderChoices(samples=1)
    assert choices.plan(RECORDS) == "sample"
    assert choices.plan(RECORDS) == "wait"
    choices.unanswered(RECORDS)
    assert choices.plan(RECORDS) == "sample"


def test_a_plain_group_that_starts_failing_is_rechecked_and_switched() -> None:
    choices = RenderChoices(samples=1, recheck_every=3)
    choices.plan(RESULTS)
    choices.sampled(RESULTS, FULL, FULL)
    assert choices.plan(RESULTS) == "plain"
    assert not choices.needs_recheck(RESULTS, PageYield(8, 2000, 38))
    assert choices.needs_recheck(RESULTS, EMPTY)  # no records where the samples had ten
    assert choices.sampled(RESULTS, EMPTY, FULL)  # the recheck shows rendering adds
    assert choices.plan(RESULTS) == "render"
    # pages whose yield is not measured are rechecked every ``recheck_every``-th page
    choices.plan(RECORDS)
    choices.sampled(RECORDS, ARTICLE, ARTICLE)
    assert [choices.needs_recheck(RECORDS) for _ in range(6)] == [False, False, True] * 2
    assert choices.needs_recheck(RECORDS, PageYield(0, 400, 30))  # a tenth of the text


def test_endless_url_shapes_are_rendered_past_the_group_cap() -> None:
    choices = RenderChoices(samples=1, max_groups=3)
    plans = [choices.plan(("page", f"/section{index}/*")) for index in range(5)]
    assert plans == ["sample"] * 3 + ["render"] * 2
    assert len(choices.groups) == 3


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="samples"):
        RenderChoices(samples=0)
    with pytest.raises(ValueError, match="recheck_every"):
        RenderChoices(recheck_every=0)


def test_page_yield_counts_visible_text_and_links() -> None:
    root = html.fromstring(
        "<html><head><title>T</title><script>var hidden = 'x'.repeat(99);</script></head>"
        "<body><p>Seen <b>text</b> here</p><style>p {color: red}</style>tail"
        "<a href='/a'>one</a><a href='http://127.0.0.1:9/b'>two</a><template>no</template>"
        "</body></html>"
    )
    measured = page_yield(root, "http://127.0.0.1:8000/", records=4)
    assert measured.records == 4
    assert measured.links == 2
    # T + Seen + text + here + tail + one + two, script/style/template left out
    assert measured.text_chars == len("TSeentextheretailonetwo")


def test_a_start_page_with_its_form_in_the_html_needs_no_rendered_copy() -> None:
    choices = RenderChoices(samples=1)
    start = RenderChoices.group_of("start", "http://127.0.0.1:8000/")
    assert choices.plan(start) == "sample"
    assert not choices.answered_plain(RESULTS, FULL)  # only start pages answer so
    assert not choices.answered_plain(start, PageYield(0, 200, 3))  # no form: render to see
    assert choices.answered_plain(start, PageYield(1, 200, 3))
    assert choices.plan(start) == "plain"
