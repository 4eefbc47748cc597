"""``websim similar pages.jsonl -o pairs.json``: the similar pairs of a crawl, found offline.

The same stage as the ``SimilarityPipeline`` at the end of a crawl: MinHash/LSH candidate
blocking for large collections, then the four-stage comparison of each candidate pair.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

from websim_crawler.cli._settings import add_settings_option, settings_from_pairs
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import ReadReport, atomic_write_json, iter_feeds
from websim_crawler.core.similarity.compare import MODES, features_from_item
from websim_crawler.core.similarity.pairs import find_similar_pairs


def register(subparsers: Any) -> None:
    """Add the ``similar`` subcommand."""
    parser = subparsers.add_parser(
        "similar",
        help="find the similar page pairs of a crawl feed (MinHash/LSH blocking, four stages)",
        description="Read a crawl's JSON Lines and write its similar page pairs as JSON.",
    )
    parser.add_argument(
        "input",
        nargs="+",
        help="crawl feeds: JSON Lines (.jsonl or .jsonl.gz); a URL in several counts once",
    )
    parser.add_argument("-o", "--output", required=True, help="pairs JSON file to write")
    parser.add_argument(
        "--mode",
        choices=MODES,
        help="compare pairs as a cascade, in full, or by the combined score alone",
    )
    parser.add_argument(
        "--weights",
        metavar="FILE",
        help="JSON stage weights fitted with StageCombiner (sets WEBSIM_SIMILARITY_WEIGHTS_FILE)",
    )
    parser.add_argument(
        "--blocking-min-pages",
        type=int,
        help="MinHash/LSH blocking above this many pages (default: setting)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    add_settings_option(parser, "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD=0.4")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the similar pairs, write them; return the exit code."""
    settings = settings_from_pairs(args.set)
    if args.weights:
        settings["WEBSIM_SIMILARITY_WEIGHTS_FILE"] = args.weights
    config = WebsimConfig.from_settings(settings)
    changes: dict[str, Any] = {}
    if args.mode:
        changes["pairs_mode"] = args.mode
    if args.blocking_min_pages is not None:
        changes["blocking_min_pages"] = args.blocking_min_pages
    params = dataclasses.replace(config.similarity, **changes)
    read_report = ReadReport()
    records: Iterable[dict[str, Any]] = iter_feeds(args.input, read_report)
    if not args.no_progress:
        records = tqdm(records, desc="pages", unit="page", file=sys.stderr)
    pages = [features_from_item(record, params) for record in records]
    problems = sum(1 for page in pages if page.problems)

    def progress(pairs: Iterable[tuple[int, int]]) -> Iterable[tuple[int, int]]:
        if args.no_progress:
            return pairs
        return tqdm(pairs, desc="pairs", unit="pair", file=sys.stderr)

    result = find_similar_pairs(pages, params, progress)
    output = result.to_dict()
    output["skipped_lines"] = read_report.skipped
    output["pages_with_problems"] = problems
    atomic_write_json(args.output, output)
    print(
        f"{len(result.pairs)} similar pairs among {result.pages} pages "
        f"({result.candidate_pairs} of {result.all_pairs} pairs compared, {result.blocking}) "
        f"-> {args.output}"
    )
    return 0
