"""``websim compare A B``: the four-stage similarity of two pages (URLs or saved files).

Without ``--render`` the HTML is read from the files or fetched with a plain GET; screenshots can
be given as PNG files (``--screenshot-a``/``--screenshot-b``). With ``--render`` the browser module
loads both pages in Chromium (``WEBSIM_CHROMIUM_PATH``, through Playwright), confined, settled and
bounded as in a ``render=1`` crawl, records their layout boxes and takes clipped screenshots.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import dataclasses
import html
import json
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from websim_crawler.browser.session import PageToRender, render_documents
from websim_crawler.cli._settings import add_setting_flags, add_settings_option, command_config
from websim_crawler.cli._sources import count_line, is_url, location_url, read_page
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_write_text, check_output_path
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.core.similarity.questions import COMPARE_QUESTION, QUESTIONS, ask
from websim_crawler.core.similarity.template_classes import TEMPLATE_CLASSES
from websim_crawler.core.urls import is_http_url
from websim_crawler.errors import ConfigError, InputFormatError, PageError
from websim_crawler.workers.pool import AnalysisPool

if TYPE_CHECKING:
    from websim_crawler.core.similarity.comparison import ComparisonReport

# The similarity stack (POT, scikit-learn, SciPy) is imported by the functions that compare:
# ``websim compare --help`` and a bad argument answer without it.


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="compare two pages: layout, text, links and visual (EMD) similarity",
        description="Compare two pages (http(s) URLs or saved HTML files) in four stages. "
        "Exit code 0 when the pages are similar, 1 when they are not (like cmp).",
    )
    parser.add_argument("page_a", metavar="A", help="first page: URL or HTML file")
    parser.add_argument("page_b", metavar="B", help="second page: URL or HTML file")
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        metavar="SOURCE",
        help="A and B are the URLs of two pages in this WARC/WACZ archive, crawl feed or folder "
        "(repeatable): the pages are taken from it, nothing is fetched",
    )
    parser.add_argument("--format", choices=("json", "html"), default="json")
    parser.add_argument("-o", "--output", help="write the report here (default: stdout)")
    parser.add_argument("--render", action="store_true", help="render and screenshot both pages")
    parser.add_argument("--screenshot-a", help="PNG screenshot of A")
    parser.add_argument("--screenshot-b", help="PNG screenshot of B")
    parser.add_argument(
        "--url-a",
        metavar="URL",
        help="http(s) URL of A when A is a saved file: its relative links resolve on it "
        "(default: the URL the page states, canonical link, og:url or base)",
    )
    parser.add_argument("--url-b", metavar="URL", help="http(s) URL of B, as --url-a")
    add_setting_flags(parser, "compare")
    add_settings_option(parser, "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD=0.4")
    parser.set_defaults(func=run)


def read_input(location: str, config: WebsimConfig) -> bytes:
    """Return the bytes of a saved page (``.gz`` too), a PNG or a URL, bounded like a crawl."""
    try:
        return read_page(location, config).body
    except PageError as exc:
        raise InputFormatError(str(exc)) from exc


_NOT_A_PAGE = {
    None: "binary data or plain text",
    "feed": "a crawl feed (JSON Lines)",
    "warc": "a WARC archive",
    "wacz": "a WACZ archive",
}


def read_html(location: str, config: WebsimConfig) -> bytes:
    """Return the bytes of a page to compare; anything but HTML is an ``InputFormatError`` (a
    binary file compared as a page would read as "dissimilar", exit 1: bad input is exit 2)."""
    from websim_crawler.cli._inputs import content_kind

    body = read_input(location, config)
    if not body.strip():
        raise InputFormatError(f"{location} is empty, not an HTML page")
    kind = content_kind(body[:4096])
    if kind != "html":
        fix = "; give --from SOURCE and the URLs of two of its pages" if kind else ""
        raise InputFormatError(f"{location} is {_NOT_A_PAGE[kind]}, not an HTML page{fix}")
    return body


def archived_pages(sources: list[str], urls: list[str], config: WebsimConfig) -> list[str | bytes]:
    """Return the HTML of the pages with these URLs in the sources (read until both are found)."""
    from websim_crawler.cli._inputs import InputReader

    reader = InputReader(sources, config, config.items.html_field)
    found: dict[str, str | bytes] = {}
    for record in reader:
        url, html = record.get("url"), record.get(config.items.html_field)
        if url in urls and url not in found and isinstance(html, (str, bytes)) and html:
            found[str(url)] = html
            if len(found) == len(set(urls)):
                break
    missing = [url for url in urls if url not in found]
    if missing:
        raise InputFormatError(
            f"no page with HTML for {' and '.join(missing)} in {', '.join(sources)}"
        )
    return [found[url] for url in urls]


def page_url(location: str, given: str | None, flag: str) -> str:
    """Return the URL a page is compared under: the one given (http(s) only), else its own."""
    if given is None:
        return location_url(location)
    if not is_http_url(given):
        raise ConfigError(f"{flag} must be an http(s) URL, got {given!r}")
    return given


def render_pages(
    locations: list[str], config: WebsimConfig
) -> tuple[list[tuple[str, bytes]], Counter[str]]:
    """Render each URL or saved file with the browser module; return HTML and PNG per page.

    The same guard, settle wait, layout boxes and bounded screenshot as a ``render=1`` crawl; a
    saved file is served on a synthetic http origin, never from a ``file:`` URL.
    """
    documents = [
        PageToRender(location)
        if is_url(location)
        else PageToRender(location, read_input(location, config))
        for location in locations
    ]
    limit = config.analysis.max_page_bytes
    rendered, counters = asyncio.run(
        render_documents(documents, config.render, max_response_bytes=limit)
    )
    return [(page.html, page.screenshot or b"") for page in rendered], counters


def render_report_html(
    report: ComparisonReport, screenshots: tuple[bytes | None, ...], params: SimilarityParams
) -> str:
    """Return a self-contained HTML report: both screenshots side by side, stage scores below.

    It names the question asked and the stages that decided it; thresholds and weights are
    printed as set (``%g``), never rounded into another value.
    """
    from websim_crawler.core.similarity.comparison import pair_classes_threshold

    cells = []
    for label, url, png in zip(("A", "B"), (report.url_1, report.url_2), screenshots, strict=True):
        image = (
            f'<img alt="screenshot of {label}" src="data:image/png;base64,'
            f'{base64.b64encode(png).decode("ascii")}">'
            if png
            else "<p>(no screenshot)</p>"
        )
        cells.append(f"<td><h2>{label}: {html.escape(url or '')}</h2>{image}</td>")
    weights = dict(zip(STAGES, params.stage_weights, strict=True))
    rows = "".join(
        f"<tr class='{r.verdict}'><td>{r.stage}</td>"
        f"<td>{'' if r.score is None else f'{r.score:.4f}'}</td><td>{r.threshold:g}</td>"
        f"<td>{weights[r.stage]:g}</td><td>{r.verdict}"
        f"{'' if r.stage in report.decided_by else ' (did not decide)'}</td>"
        f"<td>{r.support}</td><td>{html.escape(r.detail)}</td></tr>"
        for r in report.stages
    )
    threshold = params.combined_threshold
    if report.decided_by == (TEMPLATE_CLASSES,):  # judged by the class names both pages use
        threshold = pair_classes_threshold(params) or threshold
    combined = (
        "n/a"
        if report.combined_score is None
        else f"{report.combined_score:.4f} (threshold {threshold:g})"
    )
    question = QUESTIONS.get(report.question)
    asked = f"{report.question}: {question.answers}" if question else f"{report.question} weights"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>websim compare</title><style>"
        "body{font-family:sans-serif}table.shots td{vertical-align:top;width:50%}"
        "table.shots img{max-width:100%;border:1px solid #999}"
        "table.stages td,table.stages th{padding:4px 10px;border-bottom:1px solid #ddd}"
        ".dissimilar{background:#fdd}.similar{background:#dfd}.skipped,.not_run{color:#888}"
        "</style></head><body>"
        f"<h1>Verdict: {report.verdict}</h1>"
        f"<p class='question'>Question: {html.escape(asked)}</p>"
        f"<p class='reason'>{html.escape(report.reason)}</p>"
        f"<p class='decided'>Decided by: {', '.join(report.decided_by) or 'no stage'} "
        f"({report.mode}; stopped at {report.stopped_at or 'none'}; combined score {combined})"
        "</p>"
        f"<table class='shots'><tr>{''.join(cells)}</tr></table>"
        "<table class='stages'><tr><th>stage</th><th>score</th><th>threshold</th><th>weight</th>"
        f"<th>verdict</th><th>support</th><th>detail</th></tr>{rows}</table></body></html>\n"
    )


def compare_in_worker(
    pages: list[str | bytes],
    urls: list[str],
    screenshots: list[bytes | None],
    params: SimilarityParams,
    analysis_params: AnalysisParams,
) -> tuple[ComparisonReport, list[list[str]]]:
    """Build both pages' features and compare them; return the report and each page's problems."""
    from websim_crawler.core.similarity.comparison import compare_pages, page_features

    features = [
        page_features(page, url=url, screenshot=png, params=params, analysis_params=analysis_params)
        for page, url, png in zip(pages, urls, screenshots, strict=True)
    ]
    report = compare_pages(features[0], features[1], params.pairs_mode, params)
    return report, [feature.problems for feature in features]


def run(args: argparse.Namespace) -> int:
    """Compare the two pages and write the report; exit 0 when similar, 1 when not."""
    config = command_config(args, "compare")
    if args.output:
        check_output_path(args.output)
    # The weights file is read by WebsimConfig.from_settings; auto asks the seed's question.
    params = ask(config.similarity, COMPARE_QUESTION)
    locations = [args.page_a, args.page_b]
    urls = [
        page_url(location, given, flag)
        for location, given, flag in zip(
            locations, (args.url_a, args.url_b), ("--url-a", "--url-b"), strict=True
        )
    ]
    if args.render:
        rendered, counters = render_pages(locations, config)
        for key, value in sorted(counters.items()):
            print(f"websim compare: {key}: {value}", file=sys.stderr)
        pages: list[str | bytes] = [page for page, _png in rendered]
        screenshots: list[bytes | None] = [png for _page, png in rendered]
    elif args.sources:
        pages = archived_pages(args.sources, locations, config)
        screenshots = [None, None]
        urls = [args.url_a or locations[0], args.url_b or locations[1]]
    else:
        pages = [read_html(location, config) for location in locations]
        screenshots = [None, None]
    for slot, option in enumerate((args.screenshot_a, args.screenshot_b)):
        if option:
            screenshots[slot] = read_input(option, config)
    # Parsing, analysis and the stages run in one worker with a page's budget (time, memory).
    one_worker = dataclasses.replace(config.pool, workers=min(config.pool.worker_count(), 1))
    # After rendering, the browser's threads ran in this process: workers come from a server.
    one_worker = dataclasses.replace(one_worker, chunk_detail="none")
    pool = AnalysisPool(config.analysis, one_worker, fork_from_caller=not args.render)
    with contextlib.closing(pool):
        try:
            report, problems = pool.call(
                compare_in_worker, pages, urls, screenshots, params, config.analysis
            )
        except PageError as exc:
            raise InputFormatError(f"the pages cannot be compared: {exc}") from exc
    print(f"websim compare: {count_line(len(pages), {})}", file=sys.stderr)
    for location, page_problems in zip(locations, problems, strict=True):
        for problem in page_problems:
            print(f"websim compare: {location}: {problem}", file=sys.stderr)
    print(f"websim compare: {report.reason}", file=sys.stderr)
    if args.format == "html":
        text = render_report_html(report, (screenshots[0], screenshots[1]), params)
    else:
        text = json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0 if report.verdict == "similar" else 1
