"""``websim cluster``: fuzzy c-means clusters of the pages of a crawl feed, as JSON and HTML."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from websim_crawler._imports import local_dask_cluster
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
from websim_crawler.cli._stages import take_records
from websim_crawler.core.clustering import ClusteringParams
from websim_crawler.core.io import check_output_path
from websim_crawler.core.stages import StagePlan

if TYPE_CHECKING:
    from websim_crawler.core.clustering import CandidateScore

# The clustering (SciPy) is imported by ``run``: ``websim cluster --help`` and a bad argument
# answer without it.


def register(subparsers: Any) -> None:
    """Add the ``cluster`` subcommand."""
    parser = subparsers.add_parser(
        "cluster",
        help="cluster the pages of a crawl feed by their keywords (fuzzy c-means)",
        description=(
            "Read a crawl's JSON Lines, build tf-idf vectors from each page's keywords "
            "(analysing the HTML of pages that have none, with the analysis settings given), "
            "cluster them with fuzzy c-means and write the clusters as JSON (and optionally an "
            "HTML report)."
        ),
    )
    parser.add_argument(
        "input",
        nargs="+",
        help="inputs, told by their content: crawl feeds or websim extract output (JSON Lines, "
        ".gz too), WARC/WACZ archives, HTML files, folders or glob patterns of them, URLs; "
        "a URL in several counts once",
    )
    add_setting_flags(parser, "cluster")
    add_settings_option(parser, "WEBSIM_CLUSTERS_MIN_DF=1")
    add_progress_option(parser)
    parser.set_defaults(func=run)


@contextlib.contextmanager
def _dask_cluster(params: ClusteringParams) -> Iterator[ClusteringParams]:
    """Start a local Dask cluster for ``--engine dask`` without ``--scheduler``, for this run."""
    if params.engine != "dask" or params.scheduler:
        yield params
        return
    workers = max(1, min(4, os.cpu_count() or 1))
    with local_dask_cluster(n_workers=workers, threads_per_worker=1) as cluster:
        yield dataclasses.replace(params, scheduler=cluster.scheduler_address)


def run(args: argparse.Namespace) -> int:
    """Read the feeds, cluster, write the reports; return the exit code (the reports are left
    as they were when no page could be clustered)."""
    from websim_crawler.core.clustering import (
        DocumentCollector,
        cluster_documents,
        render_html,
        write_report,
    )

    config = command_config(args, "cluster")
    params = config.clustering
    output = required_output(params.output, "WEBSIM_CLUSTERS_OUTPUT")
    if params.html_output:
        check_output_path(params.html_output)
    feeds = InputReader(args.input, config, config.items.html_field)
    collector = DocumentCollector(params.kind)
    plan = StagePlan(
        config.analysis, html_field=config.items.html_field, clustering_kind=params.kind
    )
    take_records(collector, progress(feeds, args, desc="reading", unit="page"), config, plan)
    feeds.check_read()
    for reason, count in feeds.report.skipped.items():
        key = reason if reason == "duplicate_url" else f"line_{reason}"  # a URL in two feeds
        collector.report.skipped[key] = collector.report.skipped.get(key, 0) + count
    for reason, count in feeds.skipped.items():  # pages and archive records left out
        collector.report.skipped[reason] = collector.report.skipped.get(reason, 0) + count
    if not len(collector.pages):
        kinds = "; --kind all clusters pages of every kind"
        raise nothing_left(
            "cluster",
            args.input,
            collector.report.skipped,
            "give pages with HTML or keywords (a crawl feed, websim extract output, archives)"
            + (kinds if collector.report.skipped.get("other_kind") else ""),
        )
    feeds.print_summary("cluster")  # after the work found pages: an error is one line

    hide = progress_disabled(args)
    with tqdm(desc="clustering", unit="k", disable=hide) as bar, _dask_cluster(params) as params:

        def advance(score: CandidateScore) -> None:
            bar.set_postfix(k=score.n_clusters, xie_beni=f"{score.xie_beni:.3g}")
            bar.update()

        result = cluster_documents(collector.pages, params, collector.report, advance)

    title = f"websim clusters: {', '.join(args.input)}"
    html = render_html(result, title=title) if params.html_output else ""
    write_report(output, result, params.html_output, html)
    skipped = sum(collector.report.skipped.values())
    print(
        f"{len(result.urls)} page(s) in {result.n_clusters} cluster(s) "
        f"({skipped} skipped) -> {output}"
        + (f", {params.html_output}" if params.html_output else "")
    )
    skips = collector.report.skipped
    failed = sum(count for reason, count in skips.items() if reason.startswith("analysis_"))
    problems = feeds.problems()
    if failed:
        problems.append(f"{failed} page(s) could not be analysed")
    return report_problems("cluster", problems)
