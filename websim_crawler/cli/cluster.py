"""``websim cluster``: fuzzy c-means clusters of the pages of a crawl feed, as JSON and HTML."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from tqdm import tqdm

from websim_crawler._imports import require
from websim_crawler.core.clustering import (
    CandidateScore,
    ClusteringParams,
    DocumentCollector,
    build_report,
    cluster_documents,
    render_html,
)
from websim_crawler.core.clustering.params import AUTO, ENGINES, KINDS, METRICS, VALIDITY_INDICES
from websim_crawler.core.io import ReadReport, atomic_write_report, iter_jsonl
from websim_crawler.core.page import AnalysisParams, analyse_page, new_template_memory
from websim_crawler.errors import ConfigError, PageError


def register(subparsers: Any) -> None:
    """Add the ``cluster`` subcommand."""
    defaults = ClusteringParams()
    parser = subparsers.add_parser(
        "cluster",
        help="cluster the pages of a crawl feed by their keywords (fuzzy c-means)",
        description=(
            "Read a crawl's JSON Lines, build tf-idf vectors from each page's keywords "
            "(analysing the HTML of pages that have none), cluster them with fuzzy c-means and "
            "write the clusters as JSON (and optionally an HTML report)."
        ),
    )
    parser.add_argument(
        "input",
        nargs="+",
        help="crawl feed(s): JSON Lines (.jsonl or .jsonl.gz); several feeds (one per "
        "distributed worker) are clustered as one collection, each URL once",
    )
    parser.add_argument("-o", "--output", required=True, help="clusters JSON file to write")
    parser.add_argument("--html", help="also write a self-contained HTML report here")
    parser.add_argument(
        "--n-clusters",
        default=str(defaults.n_clusters),
        help="number of clusters, or 'auto' (chosen by a validity index; default: %(default)s)",
    )
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default=defaults.kind,
        help="pages to cluster: record (record and site pages), results, all (default: record)",
    )
    parser.add_argument(
        "--max-clusters",
        type=int,
        default=defaults.max_clusters,
        help="auto tries 2..min(this, sqrt(pages)) clusters (default: %(default)s)",
    )
    parser.add_argument(
        "--index",
        choices=VALIDITY_INDICES,
        default=defaults.validity_index,
        help="validity index auto chooses by (default: %(default)s)",
    )
    parser.add_argument(
        "--fuzziness",
        "-m",
        type=float,
        default=defaults.fuzziness,
        help="fuzzy c-means exponent m > 1 (default: %(default)s)",
    )
    parser.add_argument("--metric", choices=METRICS, default=defaults.metric)
    parser.add_argument(
        "--svd-components",
        type=int,
        default=defaults.svd_components,
        help="LSA dimensions before clustering, 0 for none (default: %(default)s)",
    )
    parser.add_argument("--n-init", type=int, default=defaults.n_init, help="runs per fit")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="random seed")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=defaults.engine,
        help="memory: fuzzy c-means in this process; dask: its iterations over row chunks on a "
        "Dask cluster, same clusters (default: %(default)s)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: a running scheduler (tcp://host:8786); default: a local "
        "cluster started for this run",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="do not show progress bars on stderr"
    )
    parser.set_defaults(func=run)


def _params(args: argparse.Namespace) -> ClusteringParams:
    n_clusters: int | str = args.n_clusters.strip().lower()
    if n_clusters != AUTO:
        try:
            n_clusters = int(str(n_clusters))
        except ValueError:
            raise ConfigError(
                f"--n-clusters must be a positive integer or 'auto', got {args.n_clusters!r}"
            ) from None
    return dataclasses.replace(
        ClusteringParams(),
        kind=args.kind,
        n_clusters=n_clusters,
        max_clusters=args.max_clusters,
        validity_index=args.index,
        fuzziness=args.fuzziness,
        metric=args.metric,
        svd_components=args.svd_components,
        n_init=args.n_init,
        seed=args.seed,
        engine=args.engine,
        scheduler=args.scheduler,
    )


@contextlib.contextmanager
def _dask_cluster(params: ClusteringParams) -> Iterator[ClusteringParams]:
    """Start a local Dask cluster for ``--engine dask`` without ``--scheduler``, for this run."""
    if params.engine != "dask" or params.scheduler:
        yield params
        return
    distributed = require("distributed")
    workers = max(1, min(4, os.cpu_count() or 1))
    with distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        yield dataclasses.replace(params, scheduler=cluster.scheduler_address)


def run(args: argparse.Namespace) -> int:
    """Read the feed, cluster, write the reports; return the exit code."""
    params = _params(args)
    read_report = ReadReport()
    collector = DocumentCollector(params.kind)
    analysis_params = AnalysisParams()
    site_memory = new_template_memory(analysis_params)
    hide = True if args.no_progress else None  # None: shown on a terminal only
    records = (record for path in args.input for record in iter_jsonl(path, read_report))
    pages = tqdm(records, desc="reading", unit="page", disable=hide)
    for record in pages:
        url, kind, keywords = record.get("url"), record.get("kind"), record.get("keywords")
        main_text, language = record.get("main_text"), record.get("language")
        html = record.get("html")
        if not keywords and isinstance(html, (str, bytes)) and html and collector.selects(kind):
            try:
                analysis = analyse_page(
                    html,
                    url if isinstance(url, str) else None,
                    params=analysis_params,
                    site_memory=site_memory,
                )
                keywords, main_text, language = (
                    analysis.keywords,
                    analysis.main_text,
                    analysis.language,
                )
            except PageError as exc:
                collector.reject(f"analysis_{exc.reason}")
                continue
        collector.add(url, kind, keywords, main_text, language)
    for reason, count in read_report.skipped.items():
        collector.report.skipped[f"line_{reason}"] = count

    with tqdm(desc="clustering", unit="k", disable=hide) as bar, _dask_cluster(params) as params:

        def advance(score: CandidateScore) -> None:
            bar.set_postfix(k=score.n_clusters, xie_beni=f"{score.xie_beni:.3g}")
            bar.update()

        result = cluster_documents(collector.documents, params, collector.report, advance)

    title = f"websim clusters: {', '.join(args.input)}"
    html = render_html(result, title=title) if args.html else ""
    atomic_write_report(args.output, build_report(result), args.html, html)
    skipped = sum(collector.report.skipped.values())
    print(
        f"{len(result.documents)} page(s) in {result.n_clusters} cluster(s) "
        f"({skipped} skipped) -> {args.output}" + (f", {args.html}" if args.html else "")
    )
    return 0
