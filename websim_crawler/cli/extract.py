"""``websim extract``: analyse pages (files, folders or URLs) and write JSON Lines."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TextIO

from websim_crawler.cli._inputs import InputReader, PageInput
from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    report_problems,
)
from websim_crawler.core.io import atomic_writer, check_output_path
from websim_crawler.errors import InputFormatError, NothingUsableError
from websim_crawler.workers.pool import AnalysisPool
from websim_crawler.workers.tasks import PageOutcome


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``extract`` subcommand."""
    parser = subparsers.add_parser(
        "extract",
        help="analyse pages and write their main text, keywords and chunks as JSON Lines",
        description="Analyse HTML files (.gz too), crawl feeds, WARC/WACZ archives, folders of "
        "them or http(s) URLs; one JSON object per page per line (url, title, language, "
        "main_text, keywords, chunks; from an archive also warc_file, warc_offset, "
        "warc_record_id, warc_date).",
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="PATH_OR_URL",
        help="told by their content: HTML files (.gz too), crawl feeds (their records' HTML), "
        "WARC/WACZ archives (their HTML responses), folders or glob patterns of them, URLs",
    )
    parser.add_argument("-o", "--output", help="JSON Lines file to write (default: stdout)")
    add_setting_flags(parser, "extract")
    add_settings_option(parser, "WEBSIM_HYPERLINK_THRESHOLD=0.4")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Analyse every page; 0 when all were analysed, 1 when some failed, 2 when none was read
    (then ``-o`` is left as it was)."""
    config = command_config(args, "extract")
    if args.output:
        check_output_path(args.output)
    inputs = InputReader(args.sources, config, config.items.html_field)
    sources = inputs.inputs
    single_pages = len(sources.of_kind("html", "url"))
    streamed = len(sources.sources) > single_pages  # feeds and archives: pages not counted ahead
    # No idle workers for a few pages; one page too gets a worker, for the crawl's per-page
    # time and memory budget (WEBSIM_ANALYSIS_WORKERS=0 analyses in this process, unbounded).
    workers = (
        config.pool.worker_count() if streamed else min(config.pool.worker_count(), single_pages)
    )
    pool = AnalysisPool(
        config.analysis,
        replace(config.pool, workers=workers),
        fork_from_caller=True,  # this command starts no thread before its pool
    )
    failures: Counter[str] = Counter()
    pending: deque[PageInput] = deque()  # the pages in the pool, in their order
    analysed = 0
    with (
        atomic_writer(args.output) if args.output else contextlib.nullcontext(sys.stdout) as output,
        contextlib.closing(pool),
    ):
        outcomes = pool.map(_queued(inputs.pages(), pending))
        total = None if streamed else single_pages
        shown = (
            progress(outcomes, args, unit="page", total=total)
            if streamed or single_pages > 1
            else outcomes
        )
        # Pages that could not be read are held until one could: when none could, the run is
        # one error line and writes nothing (stdout too), rather than a line per page.
        held: list[tuple[str, str]] = []  # (output line, message)
        for outcome in shown:
            page = pending.popleft()
            record: Mapping[str, object] | None = outcome.record
            if record is None:
                reason = outcome.dropped or outcome.failed or "unknown"
                failures[reason] += 1
                url = page.fields.get("url", page.location)
                record = {"url": url, "error": reason, "message": outcome.message}
            else:
                analysed += 1
            line = json.dumps({**record, **page.fields}, ensure_ascii=False) + "\n"
            held.append((line, outcome.message if outcome.record is None else ""))
            if inputs.records_read:
                _release(held, output)
        if inputs.records_read:
            _release(held, output)
        else:  # raised inside the writer: the old output stays as it was
            unread = [message for _line, message in held if message]
            told = "; ".join(filter(None, [inputs.summary(), *inputs.problems(), *unread]))
            error = NothingUsableError if inputs.archives_read_in_vain else InputFormatError
            raise error(
                f"no page could be read of {_described(inputs)}" + (f" ({told})" if told else "")
            )
    problems = inputs.problems()
    inputs.print_summary("extract")
    if failures:
        summary = ", ".join(f"{count} {reason}" for reason, count in sorted(failures.items()))
        problems.append(
            f"{sum(failures.values())} of {analysed + sum(failures.values())} pages failed "
            f"({summary})"
        )
    if sources.not_regular:
        problems.append(f"{sources.not_regular} FIFO, socket or device file(s) in folders not read")
    if sources.not_inputs:
        problems.append(
            f"{sources.not_inputs} file(s) in folders are no page, feed or archive: not read"
        )
    return report_problems("extract", problems)


def _release(held: list[tuple[str, str]], output: TextIO) -> None:
    """Write the held lines and tell the held messages (pages that failed), in order."""
    for line, message in held:
        if message:
            print(f"websim extract: {message}", file=sys.stderr)
        output.write(line)
    held.clear()


def _queued(
    pages: Iterator[PageInput], pending: deque[PageInput]
) -> Iterator[tuple[bytes | str, str | None, str | None] | PageOutcome]:
    """Yield each page's work for the pool, keeping the page in ``pending`` until its outcome."""
    for page in pages:
        pending.append(page)
        yield page.work


def _described(inputs: InputReader) -> str:
    sources = inputs.inputs.sources
    return ", ".join(location for location, _kind in sources[:5]) + (", ..." if sources[5:] else "")
