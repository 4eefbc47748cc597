"""``websim neardup``: near-duplicate page pairs of a crawl feed, classified, as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from typing import Any

from tqdm import tqdm

from websim_crawler._imports import require
from websim_crawler.core.io import ReadReport, atomic_write_json, iter_feeds
from websim_crawler.core.neardup import NearDuplicateFinder, NeardupParams, NeardupReport
from websim_crawler.core.neardup.params import METHODS


def register(subparsers: Any) -> None:
    """Add the ``neardup`` subcommand."""
    defaults = NeardupParams()
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
    parser.add_argument("-o", "--output", required=True, help="report JSON file to write")
    parser.add_argument(
        "--method",
        choices=(*METHODS, "dask"),
        default=defaults.method,
        help="exact sentence index, MinHash/LSH candidates, or the Dask bag index "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--min-sentence-chars",
        "-L",
        type=int,
        default=defaults.min_sentence_chars,
        help="L: shortest sentence compared, in characters (default: %(default)s)",
    )
    parser.add_argument(
        "--max-frequency",
        "-F",
        type=int,
        default=defaults.max_sentence_frequency,
        help="F: sentences on more pages are ignored as boilerplate (default: %(default)s)",
    )
    parser.add_argument(
        "--min-shared",
        type=int,
        default=defaults.min_shared_sentences,
        help="fewest shared sentences of a reported pair (default: %(default)s)",
    )
    parser.add_argument(
        "--lsh-threshold",
        type=float,
        default=defaults.lsh_threshold,
        help="minhash: Jaccard similarity the LSH is tuned to (default: %(default)s)",
    )
    parser.add_argument("--spill-dir", help="folder for temporary index files (default: TMPDIR)")
    parser.add_argument(
        "--dask-scheduler",
        help="dask: address of a running scheduler (default: start a local cluster)",
    )
    parser.add_argument(
        "--dask-workers", type=int, default=2, help="dask: local cluster workers (default: 2)"
    )
    parser.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the pairs, write the report; return the exit code."""
    params = dataclasses.replace(
        NeardupParams(),
        method="exact" if args.method == "dask" else args.method,
        min_sentence_chars=args.min_sentence_chars,
        max_sentence_frequency=args.max_frequency,
        min_shared_sentences=args.min_shared,
        lsh_threshold=args.lsh_threshold,
        spill_dir=args.spill_dir,
    )
    if args.method == "dask":
        report = _run_dask(args, params)
    else:
        read_report = ReadReport()
        with NearDuplicateFinder(params) as finder:
            items = iter_feeds(args.input, read_report)
            for item in tqdm(items, desc="pages", unit=" pages", disable=args.no_progress):
                finder.add_item(item)
            if not args.no_progress:
                print("finding pairs ...", file=sys.stderr)
            report = finder.finish()
        report.stats["input_lines_skipped"] = dict(read_report.skipped)
    atomic_write_json(args.output, report.to_dict())
    classes = report.stats["classes"]
    print(
        f"{report.stats['pages']['indexed']} pages, {len(report.pairs)} pairs "
        f"({', '.join(f'{name} {count}' for name, count in classes.items())}) -> {args.output}"
    )
    return 0


def _run_dask(args: argparse.Namespace, params: NeardupParams) -> NeardupReport:
    distributed = require("distributed")
    from websim_crawler.core.neardup.dask_index import dask_near_duplicates

    if args.dask_scheduler:
        with distributed.Client(args.dask_scheduler):
            return dask_near_duplicates(args.input, params)
    with (
        distributed.LocalCluster(
            n_workers=args.dask_workers,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=logging.WARNING,
        ) as cluster,
        distributed.Client(cluster),
    ):
        return dask_near_duplicates(args.input, params)
