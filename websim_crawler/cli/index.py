"""``websim index PAGES... -o INDEX``: build a reference index of known pages for ``websim match``.

Each page (saved files with a screenshot PNG beside them, folders, http(s) URLs, crawl feeds,
WARC/WACZ archives: read by the one reader, told by content; ``--render`` renders and
screenshots the files and URLs) is analysed in the worker pool with a page's budget,
and its features for the four stages are kept in the index with its stage sketches. ``--add``
adds the pages to an existing index. A page whose features cannot be built completely is left
out and counted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from websim_crawler.cli._page_records import add_page_sources, take_pages
from websim_crawler.cli._settings import (
    add_progress_option,
    add_setting_flags,
    add_settings_option,
    command_config,
)
from websim_crawler.core.io import check_output_path
from websim_crawler.errors import ConfigError, InputFormatError

if TYPE_CHECKING:  # the similarity stack (POT, scikit-learn, faiss) loads in run, not for --help
    from websim_crawler.core.reference_index import ReferenceIndex


def register(subparsers: Any) -> None:
    """Add the ``index`` subcommand."""
    parser = subparsers.add_parser(
        "index",
        help="build a reference index of known pages for websim match",
        description="Build (or with --add, extend) a reference index of pages for websim match.",
    )
    add_page_sources(parser)
    parser.add_argument("-o", "--output", required=True, metavar="INDEX", help="index file")
    parser.add_argument(
        "--add", action="store_true", help="add the pages to the existing index INDEX"
    )
    add_setting_flags(parser, "index")
    add_settings_option(parser, "WEBSIM_SIMILARITY_VISUAL_WIDTH=16")
    add_progress_option(parser)
    parser.set_defaults(func=run)


class _Taken:
    """The stage ``take_pages`` feeds: every prepared record into the index."""

    def __init__(self, index: ReferenceIndex) -> None:
        self.index = index

    def add(self, record: Any) -> str | None:
        return self.index.add_record(record)

    def skip(self, reason: str) -> None:
        self.index.skip(reason)


def run(args: argparse.Namespace) -> int:
    """Build or extend the index; exit 0, or 1 when some page was left out, 2 when none was
    added (the index file left as it was)."""
    config = command_config(args, "index")
    if args.add and not Path(args.output).is_file():
        raise ConfigError(f"--add: no index at {args.output}: build it first without --add")
    if not args.add:
        check_output_path(args.output)
    from websim_crawler.core.reference_index import ReferenceIndex  # after the checks: start-up

    if args.add:
        index = ReferenceIndex.load(args.output, config.similarity, config.matching)
    else:
        index = ReferenceIndex(config.similarity, config.matching)
    before, skipped_before = len(index), sum(index.skipped.values())
    problems, counted = take_pages(_Taken(index), args, config, "index")
    for problem in problems:
        print(f"websim index: {problem}", file=sys.stderr)
    added = len(index) - before
    if not added:  # the index on disk, if any, stays as it was
        raise InputFormatError("no page could be indexed: nothing written")
    print(f"websim index: {counted}", file=sys.stderr)
    index.save(args.output)
    skipped = sum(index.skipped.values()) - skipped_before
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(index.skipped.items()))
    print(
        f"websim index: {added} page(s) added, {skipped} skipped; {len(index)} references in "
        f"{args.output}" + (f" (skipped in all: {reasons})" if reasons else ""),
        file=sys.stderr,
    )
    return 1 if skipped or problems else 0
