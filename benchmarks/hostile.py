"""Adversarial generators at doubling sizes: CPU time and peak memory at the largest size.

Each measurement runs in a forked child process, so its peak resident memory (``ru_maxrss``) is
its own; time is the child's CPU time. Growth is the ratio of the largest size's time to the
smallest's (sizes x1 .. x8: linear ~8, quadratic ~64). Pages go through ``analyse_page`` (the
whole analysis, the parsing repairs included), feed lines through the feed reader's
``decode_record``, identical pages through ``find_similar_pairs`` (comparisons counted), wide
pages through the layout comparison (``compare_pages``), a wildcard robots.txt through the crawl's
robots.txt parser and one URL check, a blank PNG of n pixels squared through ``load_image``.

Usage::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/hostile.py
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:1] = [str(REPO)]  # this file is named like nothing it imports

from tests.support.hostile_generators import (  # noqa: E402
    FEED_GENERATORS,
    PAGE_GENERATORS,
    blank_png,
    identical_pages,
)
from websim_crawler.core.io.feed_reader import RecordOverBound, decode_record  # noqa: E402
from websim_crawler.core.page import analyse_page  # noqa: E402
from websim_crawler.core.similarity import (  # noqa: E402
    SimilarityParams,
    compare_pages,
    find_similar_pairs,
    page_features,
)
from websim_crawler.core.similarity.visual import load_image  # noqa: E402
from websim_crawler.errors import InputFormatError, PageError  # noqa: E402
from websim_crawler.middlewares.robots_parser import CappedRobotParser  # noqa: E402

PAGE_SIZES = {
    "deep_nesting": 3000,
    "deep_nesting_unclosed_tags": 5000,
    "wide_nesting": 1000,
    "stray_closing_tags": 5000,
    "punctuation_run": 10_000,
    "giant_attribute": 50_000,
    "edge_marks_label": 10_000,
}
FEED_SIZES = {
    "nested_feed_line": 200_000,
    "huge_number_feed_line": 100_000,
    "many_values_feed_line": 250_000,
}


def _analyse(name: str, size: int) -> str:
    try:
        analyse_page(PAGE_GENERATORS[name](size), "http://s.test/page")
    except PageError as error:
        return f"dropped: {error.reason}"
    return "kept"


def _decode(name: str, size: int) -> str:
    try:
        decode_record(FEED_GENERATORS[name](size))
    except RecordOverBound as error:
        return f"skipped: {error.reason}"
    return "kept"


def _similar(_name: str, size: int) -> str:
    features = page_features(identical_pages(1)[0], url="http://s.test/0")
    pages = [dataclasses.replace(features, url=f"http://s.test/{n}") for n in range(size)]
    result = find_similar_pairs(pages, SimilarityParams())
    return f"{result.candidate_pairs} comparisons, {len(result.identical_groups)} group"


def _layout(_name: str, size: int) -> str:
    first = page_features(PAGE_GENERATORS["wide_nesting"](size), url="http://s.test/a")
    changed = PAGE_GENERATORS["wide_nesting"](size).replace("One", "Two", size // 2)
    second = page_features(changed + "<p>x</p>", url="http://s.test/b")
    return f"score {compare_pages(first, second, mode='full').combined_score:.2f}"


def _robots(_name: str, size: int) -> str:
    rules = b"".join(b"Disallow: /*a*b*c*d*e*%d*z\n" % n for n in range(size))
    parser = CappedRobotParser.from_crawler(None, b"User-agent: *\n" + rules)  # type: ignore[arg-type]
    return f"{len(rules):,} bytes, /abcdef allowed: {parser.allowed('http://x/abcdef', 'websim')}"


def _screenshot(_name: str, size: int) -> str:
    try:
        load_image(blank_png(size, size))
    except InputFormatError:
        return "refused"
    return "decoded"


def _child(work: Callable[[str, int], str], name: str, size: int, queue: Any) -> None:
    start = time.process_time()
    outcome = work(name, size)
    seconds = time.process_time() - start
    queue.put((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, outcome))


def measure(work: Callable[[str, int], str], name: str, size: int) -> tuple[float, float, str]:
    """Run one case in a forked child; return (CPU seconds, peak MB, outcome)."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_child, args=(work, name, size, queue))
    process.start()
    result: tuple[float, float, str] = queue.get()
    process.join()
    return result


def main() -> None:
    cases: list[tuple[str, Callable[[str, int], str], int]] = [
        *((name, _analyse, size) for name, size in PAGE_SIZES.items()),
        *((name, _decode, size) for name, size in FEED_SIZES.items()),
        ("identical_pages", _similar, 250),
        ("layout_comparison_wide", _layout, 1000),
        ("robots_txt_wildcard_rules", _robots, 65_000),
        ("screenshot_pixels_squared", _screenshot, 3500),
    ]
    print("| generator | largest size | outcome | CPU s at largest | peak MB | growth x8 size |")
    print("|---|---|---|---|---|---|")
    for name, work, base in cases:
        smallest = measure(work, name, base)
        largest = measure(work, name, base * 8)
        growth = largest[0] / max(smallest[0], 1e-4)
        print(
            f"| {name} | {base * 8:,} | {largest[2]} | {largest[0]:.3f} | {largest[1]:.0f} | "
            f"{growth:.1f} |"
        )


if __name__ == "__main__":
    main()
