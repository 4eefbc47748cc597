"""``websim similar pages.jsonl -o pairs.json``: the similar pairs of a crawl, found offline.

The same stage as the ``SimilarityPipeline`` at the end of a crawl: MinHash/LSH candidate
blocking for large collections, then the four-stage comparison of each candidate pair.
"""

from __future__ import annotations

import argparse
from typing import Any

from websim_crawler.cli._analysis import OVER_BUDGET, analysed_records, drop_reason
from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    report_problems,
    required_output,
)
from websim_crawler.cli._sources import FeedReader
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.similarity.collection import PageCollector
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
    add_setting_flags(parser, "similar")
    add_settings_option(parser, "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD=0.4")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the similar pairs, write them; return the exit code."""
    config = command_config(args, "similar")
    output = required_output(config.similarity.output, "WEBSIM_SIMILARITY_OUTPUT")
    params = config.similarity  # the weights file is read by WebsimConfig.from_settings
    feeds = FeedReader(args.input, config.inputs, config.items.html_field)
    collector = PageCollector(params, config.analysis, html_field=config.items.html_field)
    reading = progress(feeds, args, desc="pages", unit="page")
    # Records without keywords are analysed in budgeted workers; the collector then only parses
    # their layout (bounded by WEBSIM_MAX_ELEMENTS). A page over the budget is skipped, counted;
    # one the analysis refused within it (no main text) is kept for its layout, as before.
    for record, outcome in analysed_records(reading, config, lambda r: not r.get("keywords")):
        if outcome is not None and outcome.record is not None:
            analysed = {"keywords": outcome.record["keywords"]}
            if record.get("links") is None:
                analysed["links"] = list(outcome.record["links"])
            collector.add({**record, **analysed})
        elif outcome is not None and (outcome.failed or outcome.dropped in OVER_BUDGET):
            reason = drop_reason(outcome)
            collector.skipped[reason] = collector.skipped.get(reason, 0) + 1
        else:
            collector.add(record)
    feeds.check_read()
    pages = collector.pages
    problems = sum(1 for page in pages if page.problems)
    result = find_similar_pairs(
        pages, params, lambda pairs: progress(pairs, args, desc="pairs", unit="pair")
    )
    report = result.to_dict()
    report["skipped_lines"] = feeds.report.skipped
    report["skipped_pages"] = dict(sorted(collector.skipped.items()))
    report["pages_with_problems"] = problems
    atomic_write_json(output, report)
    print(
        f"{len(result.pairs)} similar pairs among {result.pages} pages "
        f"({result.candidate_pairs} of {result.all_pairs} pairs compared, {result.blocking}; "
        f"{len(result.identical_groups)} groups of identical pages, {result.capped_buckets} "
        f"capped buckets; {sum(collector.skipped.values())} skipped) -> {output}"
    )
    lines = feeds.problems()
    over_budget = sum(
        count for reason, count in collector.skipped.items() if reason.startswith("analysis_")
    )
    if over_budget:
        lines.append(f"{over_budget} page(s) could not be analysed")
    return report_problems("similar", lines)
