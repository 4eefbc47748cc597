"""``websim match PAGES... --index INDEX``: which known pages does each page look like?

Prints one JSON object per page and line, ``{"url": ..., "question": ..., "matches": [...]}``,
its best references first (``--top``), each with its combined score, verdict and the stages that
decided it, for the question asked (``--question``; default looks-alike, as ``websim compare``).
Exit code 0 when some page has a similar reference, 1 when none does (like grep), 2 on errors
(a page that cannot be read or analysed is one).
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
from websim_crawler.core.io import atomic_write_text, check_output_path
from websim_crawler.errors import ConfigError, InputFormatError, PageError

if TYPE_CHECKING:  # the similarity stack (POT, scikit-learn, faiss) loads in run, once needed
    from websim_crawler.core.reference_index import ReferenceIndex


def register(subparsers: Any) -> None:
    """Add the ``match`` subcommand."""
    parser = subparsers.add_parser(
        "match",
        help="match pages against a reference index: their most similar known pages",
        description="Print each page's most similar references of an index as JSON Lines. "
        "Exit code 0 when some page has a similar reference, 1 when none, 2 on errors.",
    )
    add_page_sources(parser)
    parser.add_argument("-o", "--output", help="write the JSON Lines here (default: stdout)")
    add_setting_flags(parser, "match")
    add_settings_option(parser, "WEBSIM_MATCH_CANDIDATES=16")
    add_progress_option(parser)
    parser.set_defaults(func=run)


class _Matcher:
    """The stage ``take_pages`` feeds: each prepared page queried, its line kept."""

    def __init__(self, index: ReferenceIndex) -> None:
        self.index = index
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.similar = 0

    def add(self, record: Any) -> str | None:
        import orjson

        from websim_crawler.core.reference_index import has_similar, match_line, prepared_page

        try:
            page = prepared_page(record)
        except PageError as exc:
            self.errors.append(str(exc))
            return exc.reason
        line = match_line(self.index, page)
        self.similar += has_similar(line)
        self.lines.append(orjson.dumps(line).decode())
        return None

    def skip(self, reason: str) -> None:
        if not reason.startswith("unreadable_"):  # an unreadable page is in the problems
            self.errors.append(f"a page could not be analysed: {reason}")


def run(args: argparse.Namespace) -> int:
    """Match every page; exit 0 when one has a similar reference, 1 when none, 2 on errors."""
    config = command_config(args, "match")
    # Told before the heavy imports: a script calling websim match per page pays them each time.
    if not config.matching.index:
        raise ConfigError("give the index: --index INDEX (or -s WEBSIM_MATCH_INDEX=INDEX)")
    if not Path(config.matching.index).is_file():
        raise ConfigError(
            f"no index at {config.matching.index}: build it with websim index PAGES... -o INDEX"
        )
    if args.output:
        check_output_path(args.output)
    from websim_crawler.core.reference_index import (
        MAX_BRAND_SCORED,
        MAX_POSTINGS_READ,
        ReferenceIndex,
    )

    index = ReferenceIndex.load(config.matching.index, config.similarity, config.matching)
    matcher = _Matcher(index)
    problems, counted = take_pages(matcher, args, config, "match")
    problems += matcher.errors
    if not matcher.lines:  # no page could be matched: -o stays as it was
        raise InputFormatError(
            "no page could be matched" + (f": {'; '.join(problems)}" if problems else "")
        )
    print(f"websim match: {counted}", file=sys.stderr)
    text = "".join(line + "\n" for line in matcher.lines)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    if index.capped_link_queries:
        print(
            f"websim match: {index.capped_link_queries} page(s) had more link postings than "
            f"{MAX_POSTINGS_READ:,}: the links most references share were left out of their "
            "candidate search",
            file=sys.stderr,
        )
    if index.capped_brand_queries:
        print(
            f"websim match: {index.capped_brand_queries} page(s) shared brand words with more "
            f"than {MAX_BRAND_SCORED:,} references: the commonest were left out of their "
            "candidate search",
            file=sys.stderr,
        )
    for problem in problems:
        print(f"websim match: {problem}", file=sys.stderr)
    if problems:
        return 2
    return 0 if matcher.similar else 1
