"""``websim extract``: analyse pages (files, folders or URLs) and write JSON Lines."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    report_problems,
)
from websim_crawler.cli._sources import page_locations, read_page
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_writer, check_output_path
from websim_crawler.errors import PageError
from websim_crawler.workers.pool import AnalysisPool, PageOutcome


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``extract`` subcommand."""
    parser = subparsers.add_parser(
        "extract",
        help="analyse pages and write their main text, keywords and chunks as JSON Lines",
        description="Analyse HTML files (.gz too), folders of them or http(s) URLs; one JSON "
        "object per page per line (url, title, language, main_text, keywords, chunks).",
    )
    parser.add_argument("sources", nargs="+", metavar="PATH_OR_URL")
    parser.add_argument("-o", "--output", help="JSON Lines file to write (default: stdout)")
    add_setting_flags(parser, "extract")
    add_settings_option(parser, "WEBSIM_HYPERLINK_THRESHOLD=0.4")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Analyse every page; 0 when all were analysed, 1 when some failed, 2 when none was read."""
    config = command_config(args, "extract")
    if args.output:
        check_output_path(args.output)
    found = page_locations(args.sources, config.inputs)
    pages = found.locations
    # No idle workers for a few pages; one page too gets a worker, for the crawl's per-page
    # time and memory budget (WEBSIM_ANALYSIS_WORKERS=0 analyses in this process, unbounded).
    workers = min(config.pool.worker_count(), len(pages))
    pool = AnalysisPool(
        config.analysis,
        replace(config.pool, workers=workers),
        fork_from_caller=True,  # this command starts no thread before its pool
    )
    failures: Counter[str] = Counter()
    read: list[str] = []
    with (
        atomic_writer(args.output) if args.output else contextlib.nullcontext(sys.stdout) as output,
        contextlib.closing(pool),
    ):
        outcomes = pool.map(_read_pages(pages, config, read))
        shown = progress(outcomes, args, unit="page", total=len(pages)) if pages[1:] else outcomes
        for location, outcome in zip(pages, shown, strict=True):
            record = outcome.record
            if record is None:
                reason = outcome.dropped or outcome.failed or "unknown"
                failures[reason] += 1
                record = {"url": location, "error": reason, "message": outcome.message}
                print(f"websim extract: {outcome.message}", file=sys.stderr)
            output.write(json.dumps(record, ensure_ascii=False) + "\n")
    if not read:
        print(f"websim extract: no page could be read of {len(pages)}", file=sys.stderr)
        return 2
    problems = []
    if failures:
        summary = ", ".join(f"{count} {reason}" for reason, count in sorted(failures.items()))
        problems.append(f"{sum(failures.values())} of {len(pages)} pages failed ({summary})")
    if found.left_out:
        problems.append(
            f"{found.left_out} page file(s) left out over WEBSIM_MAX_INPUT_FILES="
            f"{config.inputs.max_files}"
        )
    if found.not_regular:
        problems.append(f"{found.not_regular} FIFO, socket or device file(s) in folders not read")
    return report_problems("extract", problems)


def _read_pages(
    pages: list[str], config: WebsimConfig, read: list[str]
) -> Iterator[tuple[bytes, str | None, str | None] | PageOutcome]:
    """Read each page (``read`` collects those read); one that cannot be is an outcome."""
    for location in pages:
        try:
            page = read_page(location, config)
        except PageError as exc:
            yield PageOutcome(dropped=exc.reason, message=str(exc))
        else:
            read.append(location)
            yield page.body, page.url, page.content_type
