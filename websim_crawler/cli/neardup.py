"""``websim neardup``: near-duplicate page pairs of a crawl feed, classified, as JSON."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from websim_crawler._imports import require
from websim_crawler.cli._analysis import OVER_BUDGET, analysed_records
from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    progress_disabled,
    report_problems,
    required_output,
)
from websim_crawler.cli._sources import FeedReader
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.neardup import NearDuplicateFinder, NeardupParams, NeardupReport


def register(subparsers: Any) -> None:
    """Add the ``neardup`` subcommand."""
    parser = subparsers.add_parser(
        "neardup",
        help="find and classify near-duplicate pages by shared sentences",
        description=(
            "Read a crawl's JSON Lines, take each page's content region, index its long "
            "low-frequency sentences over the collection and report the page pairs sharing "
            "them: class (identical, inclusion, partial) and relation (mirror, in-site, "
            "linked, citing/cited, copies)."
        ),
    )
    parser.add_argument(
        "input",
        nargs="+",
        help="crawl feeds: JSON Lines (.jsonl or .jsonl.gz); a URL in several counts once",
    )
    add_setting_flags(parser, "neardup")
    parser.add_argument(
        "--dask-scheduler",
        help="--method dask: address of a running scheduler (default: start a local cluster)",
    )
    parser.add_argument(
        "--dask-workers", type=int, default=2, help="dask: local cluster workers (default: 2)"
    )
    add_settings_option(parser, "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS=80")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the pairs, write the report; return the exit code."""
    config = command_config(args, "neardup")
    params = config.neardup
    output = required_output(params.output, "WEBSIM_NEARDUP_OUTPUT")
    feeds = FeedReader(args.input, config.inputs, config.items.html_field)
    over_budget = 0  # pages whose analysis ran past WEBSIM_ANALYSIS_TIMEOUT or the memory cap
    if args.WEBSIM_NEARDUP_METHOD == "dask":
        report = _run_dask(args, feeds.paths, params)
    else:
        with NearDuplicateFinder(
            params, html_field=config.items.html_field, analysis_params=config.analysis
        ) as finder:
            reading = progress(feeds, args, desc="pages", unit=" pages")
            # Items without chunks are analysed in budgeted workers (all their chunks, none
            # marked main: the content region the finder takes from an item's HTML).
            for item, outcome in analysed_records(
                reading, config, lambda r: not r.get("chunks"), finder.analysis_params, "full"
            ):
                if outcome is None:
                    finder.add_item(item)
                elif outcome.record is None:
                    reason = outcome.failed or outcome.dropped or "unknown"
                    finder.count_dropped(reason)
                    over_budget += reason in OVER_BUDGET or outcome.failed is not None
                else:
                    chunks = [{**chunk, "is_main": False} for chunk in outcome.record["chunks"]]
                    links = item.get("links")
                    links = links if isinstance(links, list) else list(outcome.record["links"])
                    finder.add_item({**item, "chunks": chunks, "links": links})
            feeds.check_read()
            if not progress_disabled(args) and sys.stderr.isatty():
                print("finding pairs ...", file=sys.stderr)
            report = finder.finish()
        report.stats["input_lines_skipped"] = dict(feeds.report.skipped)
    atomic_write_json(output, report.to_dict())
    classes = report.stats["classes"]
    print(
        f"{report.stats['pages']['indexed']} pages, {len(report.pairs)} pairs "
        f"({', '.join(f'{name} {count}' for name, count in classes.items())}) -> {output}"
    )
    lines = feeds.problems()
    if over_budget:
        lines.append(f"{over_budget} page(s) could not be analysed")
    return report_problems("neardup", lines)


def _run_dask(args: argparse.Namespace, paths: list[str], params: NeardupParams) -> NeardupReport:
    distributed = require("distributed")
    from websim_crawler.core.neardup.dask_index import dask_near_duplicates

    if args.dask_scheduler:
        with distributed.Client(args.dask_scheduler):
            return dask_near_duplicates(paths, params)
    with (
        distributed.LocalCluster(
            n_workers=args.dask_workers,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=logging.WARNING,
        ) as cluster,
        distributed.Client(cluster),
    ):
        return dask_near_duplicates(paths, params)
