"""``websim extract``: analyse pages (files, folders or URLs) and write JSON Lines."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from typing import Any

from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    report_problems,
)
from websim_crawler.cli._sources import page_locations, read_page
from websim_crawler.core.io import atomic_writer, check_output_path
from websim_crawler.core.page import analyse_page, new_template_memory
from websim_crawler.errors import PageError


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
    memory = new_template_memory(config.analysis)
    failures: Counter[str] = Counter()
    read = 0
    pages = found.locations
    with (
        atomic_writer(args.output) if args.output else contextlib.nullcontext(sys.stdout)
    ) as output:
        for location in progress(pages, args, unit="page") if len(pages) > 1 else pages:
            record: dict[str, Any]
            try:
                page = read_page(location, config)
                read += 1
                analysis = analyse_page(
                    page.body,
                    page.url,
                    params=config.analysis,
                    content_type=page.content_type,
                    site_memory=memory,
                )
            except PageError as exc:
                failures[exc.reason] += 1
                record = {"url": location, "error": exc.reason, "message": str(exc)}
                print(f"websim extract: {exc}", file=sys.stderr)
            else:
                record = analysis.to_dict(config.items.chunk_detail)
            output.write(json.dumps(record, ensure_ascii=False) + "\n")
    if read == 0:
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
    return report_problems("extract", problems)
