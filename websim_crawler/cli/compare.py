"""``websim compare A B``: the four-stage similarity of two pages (URLs or saved files).

Without ``--render`` the HTML is read from the files or fetched with a plain GET; screenshots can
be given as PNG files (``--screenshot-a``/``--screenshot-b``). With ``--render`` Chromium (the
``WEBSIM_CHROMIUM_PATH``, through Playwright) loads both pages and takes full-page screenshots.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import os
import sys
from typing import Any

from websim_crawler._imports import require
from websim_crawler.cli._settings import add_setting_flags, add_settings_option, command_config
from websim_crawler.cli._sources import location_url, read_page
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_write_text, check_output_path
from websim_crawler.core.similarity.compare import (
    ComparisonReport,
    compare_pages,
    page_features,
)
from websim_crawler.errors import BrowserMissingError, InputFormatError, PageError

_BROWSER_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio")


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
    parser.add_argument("--format", choices=("json", "html"), default="json")
    parser.add_argument("-o", "--output", help="write the report here (default: stdout)")
    parser.add_argument("--render", action="store_true", help="render and screenshot both pages")
    parser.add_argument("--screenshot-a", help="PNG screenshot of A")
    parser.add_argument("--screenshot-b", help="PNG screenshot of B")
    add_setting_flags(parser, "compare")
    add_settings_option(parser, "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD=0.4")
    parser.set_defaults(func=run)


def read_input(location: str, config: WebsimConfig) -> bytes:
    """Return the bytes of a saved page (``.gz`` too), a PNG or a URL, bounded like a crawl."""
    try:
        return read_page(location, config).body
    except PageError as exc:
        raise InputFormatError(str(exc)) from exc


def render_pages(
    locations: list[str], chromium_path: str, *, block_remote: bool = False, timeout: float = 30
) -> list[tuple[str, bytes]]:
    """Load each URL or file in Chromium; return its rendered HTML and full-page PNG.

    ``block_remote`` aborts every request that is not a local file or loopback address (saved
    pages that refer to sites which cannot be reached here).
    """
    if not (os.path.isfile(chromium_path) and os.access(chromium_path, os.X_OK)):
        raise BrowserMissingError(
            f"--render needs Chromium, but {chromium_path!r} is not there: install it "
            "(Debian: apt-get install chromium) or pass -s WEBSIM_CHROMIUM_PATH=/path/to/chromium"
        )
    sync_api = require("playwright.sync_api")
    results: list[tuple[str, bytes]] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=list(_BROWSER_ARGS)
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            if block_remote:
                page.route("**/*", _local_only)
            for location in locations:
                url = location_url(location)
                try:
                    page.goto(url, wait_until="load", timeout=timeout * 1000)
                except sync_api.Error as exc:
                    raise InputFormatError(f"cannot render {location}: {exc}") from exc
                results.append((page.content(), page.screenshot(full_page=True, type="png")))
        finally:
            browser.close()
    return results


def _local_only(route: Any) -> None:
    url = route.request.url
    if url.startswith(("file:", "data:", "http://127.0.0.1", "http://localhost")):
        route.continue_()
    else:
        route.abort()


def render_report_html(report: ComparisonReport, screenshots: tuple[bytes | None, ...]) -> str:
    """Return a self-contained HTML report: both screenshots side by side, stage scores below."""
    cells = []
    for label, url, png in zip(("A", "B"), (report.url_1, report.url_2), screenshots, strict=True):
        image = (
            f'<img alt="screenshot of {label}" src="data:image/png;base64,'
            f'{base64.b64encode(png).decode("ascii")}">'
            if png
            else "<p>(no screenshot)</p>"
        )
        cells.append(f"<td><h2>{label}: {html.escape(url or '')}</h2>{image}</td>")
    rows = "".join(
        f"<tr class='{r.verdict}'><td>{r.stage}</td>"
        f"<td>{'' if r.score is None else f'{r.score:.4f}'}</td><td>{r.threshold:.2f}</td>"
        f"<td>{r.verdict}</td><td>{r.support}</td><td>{html.escape(r.detail)}</td></tr>"
        for r in report.stages
    )
    combined = "n/a" if report.combined_score is None else f"{report.combined_score:.4f}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>websim compare</title><style>"
        "body{font-family:sans-serif}table.shots td{vertical-align:top;width:50%}"
        "table.shots img{max-width:100%;border:1px solid #999}"
        "table.stages td,table.stages th{padding:4px 10px;border-bottom:1px solid #ddd}"
        ".dissimilar{background:#fdd}.similar{background:#dfd}.skipped,.not_run{color:#888}"
        "</style></head><body>"
        f"<h1>Verdict: {report.verdict} ({report.mode}; stopped at "
        f"{report.stopped_at or 'none'}; combined score {combined})</h1>"
        f"<table class='shots'><tr>{''.join(cells)}</tr></table>"
        "<table class='stages'><tr><th>stage</th><th>score</th><th>threshold</th>"
        f"<th>verdict</th><th>support</th><th>detail</th></tr>{rows}</table></body></html>\n"
    )


def run(args: argparse.Namespace) -> int:
    """Compare the two pages and write the report; exit 0 when similar, 1 when not."""
    config = command_config(args, "compare")
    if args.output:
        check_output_path(args.output)
    params = config.similarity  # the weights file is read by WebsimConfig.from_settings
    locations = [args.page_a, args.page_b]
    if args.render:
        rendered = render_pages(locations, config.render.chromium_path)
        pages: list[str | bytes] = [page for page, _png in rendered]
        screenshots: list[bytes | None] = [png for _page, png in rendered]
    else:
        pages = [read_input(location, config) for location in locations]
        screenshots = [None, None]
    for slot, option in enumerate((args.screenshot_a, args.screenshot_b)):
        if option:
            screenshots[slot] = read_input(option, config)
    features = [
        page_features(
            page,
            url=location_url(location),
            screenshot=png,
            params=params,
            analysis_params=config.analysis,
        )
        for page, location, png in zip(pages, locations, screenshots, strict=True)
    ]
    for location, feature in zip(locations, features, strict=True):
        for problem in feature.problems:
            print(f"websim compare: {location}: {problem}", file=sys.stderr)
    report = compare_pages(features[0], features[1], params.pairs_mode, params)
    if args.format == "html":
        text = render_report_html(report, (screenshots[0], screenshots[1]))
    else:
        text = json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0 if report.verdict == "similar" else 1
