"""``websim neardup``: near-duplicate page pairs of a crawl feed, classified, as JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from websim_crawler._imports import local_dask_cluster, require
from websim_crawler.cli._inputs import InputReader, nothing_left
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
from websim_crawler.cli._sources import count_line
from websim_crawler.cli._stages import take_records
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.stages import StagePlan
from websim_crawler.errors import ConfigError

if TYPE_CHECKING:
    from websim_crawler.core.neardup import NeardupParams, NeardupReport

# The sentence index (SciPy) is imported by ``run``: ``websim neardup --help`` and a bad
# argument answer without it.


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
        help="inputs, told by their content: crawl feeds or websim extract output (JSON Lines, "
        ".gz too), WARC/WACZ archives, HTML files, folders or glob patterns of them, URLs; "
        "a URL in several counts once",
    )
    add_setting_flags(parser, "neardup")
    add_settings_option(parser, "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS=80")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the pairs, write the report; return the exit code."""
    from websim_crawler.core.neardup import NearDuplicateFinder

    config = command_config(args, "neardup")
    params = config.neardup
    output = required_output(params.output, "WEBSIM_NEARDUP_OUTPUT")
    feeds = InputReader(args.input, config, config.items.html_field)
    over_budget = 0  # pages whose preparation ran past the per-page budget
    if params.engine == "dask":
        if feeds.inputs.of_kind("html", "url"):
            raise ConfigError("--engine dask reads crawl feeds and WARC/WACZ archives only")
        archives = feeds.inputs.of_kind("warc", "wacz")
        report = _run_dask(feeds.paths, params, archives, config)
        pages = report.stats["pages"]
        counted = count_line(pages["indexed"], pages["dropped"])
    else:
        with NearDuplicateFinder(
            params, html_field=config.items.html_field, analysis_params=config.analysis
        ) as finder:
            plan = StagePlan(config.analysis, html_field=config.items.html_field, neardup=params)
            reading = progress(feeds, args, desc="pages", unit=" pages")
            over_budget = take_records(finder, reading, config, plan)
            feeds.check_read()
            counted = feeds.summary()
            if not progress_disabled(args) and sys.stderr.isatty():
                print("finding pairs ...", file=sys.stderr)
            report = finder.finish()
        report.stats["input_lines_skipped"] = dict(feeds.report.skipped)
        report.stats["input_records_skipped"] = dict(sorted(feeds.skipped.items()))
    if not report.stats["pages"]["indexed"]:
        raise nothing_left(
            "index",
            args.input,
            _left_out(report),
            "give pages with HTML or main text (a crawl feed, websim extract output, archives)",
        )
    print(f"websim neardup: {counted}", file=sys.stderr)  # after the work: an error is one line
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


def _left_out(report: NeardupReport) -> dict[str, int]:
    """Return the pages left out by reason: dropped by the finder or before it, by the reader."""
    left = dict(report.stats["pages"].get("dropped", {}))
    for reason, count in report.stats.get("input_records_skipped", {}).items():
        left[reason] = left.get(reason, 0) + count
    return left


def _run_dask(
    paths: list[str], params: NeardupParams, archives: list[str], config: WebsimConfig
) -> NeardupReport:
    distributed = require("distributed")
    from websim_crawler.core.neardup.dask_index import dask_near_duplicates

    def run() -> NeardupReport:
        return dask_near_duplicates(
            paths,
            params,
            archives=archives,
            max_page_bytes=config.analysis.max_page_bytes,
            archive_engine=config.inputs.warc_reader,
        )

    if params.scheduler:
        with distributed.Client(params.scheduler):
            return run()
    with (
        local_dask_cluster(n_workers=params.dask_workers, threads_per_worker=1) as cluster,
        distributed.Client(cluster),
    ):
        return run()
