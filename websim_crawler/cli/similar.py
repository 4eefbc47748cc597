"""``websim similar pages.jsonl -o pairs.json``: the groups of similar pages of a crawl, offline.

The same stage as the ``SimilarityPipeline`` at the end of a crawl: MinHash/LSH candidate
blocking for large collections, then the four-stage comparison of each candidate pair, judged by
the question asked (``--question``; by default ``same-template``, whose groups tell result lists
from records), its similar pairs grouped.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from websim_crawler.cli._inputs import InputReader, nothing_left
from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
    progress,
    report_problems,
    required_output,
)
from websim_crawler.cli._stages import take_records
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.similarity.questions import COLLECTION_QUESTION, ask
from websim_crawler.core.stages import StagePlan

if TYPE_CHECKING:
    from websim_crawler.core.similarity.collection import PageCollector

# The similarity stack (POT, scikit-learn, SciPy) is imported by ``run``: ``websim similar
# --help`` and a bad argument answer without it.


def register(subparsers: Any) -> None:
    """Add the ``similar`` subcommand."""
    parser = subparsers.add_parser(
        "similar",
        help="find the similar page pairs of a crawl feed (MinHash/LSH blocking, four stages)",
        description="Read a crawl's pages (feeds, WARC/WACZ, HTML) and write their similar "
        "page pairs as JSON. The stages compare pages' HTML: a record without it (websim "
        "extract output) is skipped and counted as no_html.",
    )
    parser.add_argument(
        "input",
        nargs="+",
        help="inputs, told by their content: crawl feeds or websim extract output (JSON Lines, "
        ".gz too), WARC/WACZ archives, HTML files, folders or glob patterns of them, URLs; "
        "a URL in several counts once",
    )
    add_setting_flags(parser, "similar")
    add_settings_option(parser, "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD=0.4")
    add_progress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the feed, find the similar pairs, write them; return the exit code."""
    from websim_crawler.core.similarity.collection import PageCollector
    from websim_crawler.core.similarity.pairs import find_similar_pairs

    config = command_config(args, "similar")
    output = required_output(config.similarity.output, "WEBSIM_SIMILARITY_OUTPUT")
    # The weights file is read by WebsimConfig.from_settings; auto asks same-template.
    params = ask(config.similarity, COLLECTION_QUESTION)
    feeds = InputReader(args.input, config, config.items.html_field)
    collector = PageCollector(params, config.analysis, html_field=config.items.html_field)
    plan = StagePlan(config.analysis, html_field=config.items.html_field, similarity=params)
    records = _with_html(feeds, collector, config.items.html_field)
    take_records(collector, progress(records, args, desc="pages", unit="page"), config, plan)
    feeds.check_read()
    for reason, count in feeds.skipped.items():  # pages and archive records left out
        collector.skipped[reason] = collector.skipped.get(reason, 0) + count
    pages = collector.finish()
    if not pages:
        raise nothing_left(
            "compare",
            args.input,
            collector.skipped,
            "the stages compare pages' HTML: give the crawl feed or the WARC, not websim "
            "extract output",
        )
    feeds.print_summary("similar")  # after the work found pages: an error is one line
    problems = sum(1 for page in pages if page.problems)
    result = find_similar_pairs(
        pages, params, lambda pairs: progress(pairs, args, desc="pairs", unit="pair")
    )
    report = result.to_dict()
    report["skipped_lines"] = feeds.report.skipped
    report["skipped_pages"] = dict(sorted(collector.skipped.items()))
    report["pages_with_problems"] = problems
    atomic_write_json(output, report)
    sizes = ", ".join(str(len(group)) for group in result.groups[:10])
    more = ", ..." if len(result.groups) > 10 else ""
    capped = f", {result.capped_pairs} over the cap" if result.capped_pairs else ""
    print(
        f"{result.question} (decided by {', '.join(result.decided_by) or 'no stage'}): "
        f"{len(result.groups)} groups of pages ({sizes}{more}), "
        f"{result.ungrouped} pages in none; {len(result.pairs)} similar pairs among "
        f"{result.pages} pages ({result.candidate_pairs} of {result.all_pairs} pairs compared, "
        f"{result.blocking}{capped}; {len(result.identical_groups)} groups of identical pages, "
        f"{result.capped_buckets} capped buckets; {_skipped_line(collector.skipped)}) "
        f"-> {output}"
    )
    lines = feeds.problems()
    if collector.skipped.get("no_html"):
        lines.append(
            f"{collector.skipped['no_html']} record(s) without HTML skipped: the stages compare "
            "pages' HTML (give the crawl feed or the WARC, not websim extract output)"
        )
    over_budget = sum(
        count for reason, count in collector.skipped.items() if reason.startswith("analysis_")
    )
    if over_budget:
        lines.append(f"{over_budget} page(s) could not be analysed")
    return report_problems("similar", lines)


def _with_html(
    records: Iterable[dict[str, Any]], collector: PageCollector, html_field: str
) -> Iterator[dict[str, Any]]:
    """Yield the records that carry HTML; count the others as ``no_html`` (never a partial
    score: every stage but keywords reads the page's HTML)."""
    for record in records:
        html = record.get(html_field)
        if html is None or html == "" or html == b"":
            collector.skip("no_html")
            continue
        yield record


def _skipped_line(skipped: dict[str, int]) -> str:
    if not skipped:
        return "0 skipped"
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
    return f"{sum(skipped.values())} skipped: {reasons}"
