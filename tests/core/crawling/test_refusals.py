"""Pages refused for their own bounds are told apart from pages deferred under the crawl's
pressure, in one end-of-crawl line."""

from __future__ import annotations

from websim_crawler.core.crawling.refusals import URLS_SHOWN, RefusedUrls, refusal_summary


def test_refused_pages_are_named_by_reason_and_pressure_apart() -> None:
    refused = RefusedUrls()
    for n in range(5):
        refused.note("too_large", f"http://127.0.0.1/big{n}")
    refused.note("render_memory", "http://127.0.0.1/greedy")
    refused.note("http_404", "http://127.0.0.1/gone")  # not an own bound: not kept
    stats = {
        "websim/pages/dropped/too_large": 5,
        "websim/pages/failed/render_memory": 1,
        "websim/pages/failed/http_404": 3,
        "websim/render/deferred": 2,
        "websim/render/retried": 2,
    }
    line = refusal_summary(stats, refused)
    assert line is not None
    assert "6 refused for their own bounds" in line
    assert "1 render_memory (http://127.0.0.1/greedy)" in line
    shown = [f"http://127.0.0.1/big{n}" for n in range(URLS_SHOWN)]
    assert f"5 too_large ({', '.join(shown)}, ...)" in line
    assert "404" not in line and "gone" not in line
    assert line.endswith("under the crawl's shared pressure: 2 deferred, 2 retried")


def test_a_crawl_without_refusals_or_pressure_has_no_line() -> None:
    stats = {"websim/pages/failed/http_404": 1, "websim/pages/dropped/empty": 2}
    assert refusal_summary(stats, RefusedUrls()) is None


def test_deferred_pages_alone_are_no_refusal() -> None:
    line = refusal_summary({"websim/render/deferred": 1}, RefusedUrls())
    assert line == "pages under the crawl's shared pressure: 1 deferred"


def test_analyses_retried_alone_are_pressure_not_refusals() -> None:
    stats = {"websim/analysis/deferred": 5, "websim/analysis/retried_alone": 2}
    assert refusal_summary(stats, RefusedUrls()) == (
        "pages under the crawl's shared pressure: 5 analyses tried again past the wall-time "
        "backstop, 2 analyses retried alone"
    )
