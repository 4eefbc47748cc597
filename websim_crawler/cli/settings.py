"""``websim settings``: list every setting (name, default, bounds, section, help)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from websim_crawler.config.reference import matching, setting_docs, settings_markdown, settings_text


def register(subparsers: Any) -> None:
    """Add the ``settings`` subcommand."""
    parser = subparsers.add_parser(
        "settings",
        help="list every WEBSIM_* setting: name, default, bounds, section, help",
        description=(
            "List the WEBSIM_* settings from the declarations the code reads and validates "
            "(docs/settings.md is generated from the same). PATTERN picks some: a glob "
            "(WEBSIM_RENDER_*), a part of the name (timeout) or a section name (similarity); "
            "case does not matter."
        ),
    )
    parser.add_argument("pattern", nargs="?", metavar="PATTERN", help="which settings to list")
    parser.add_argument(
        "--markdown", action="store_true", help="print Markdown tables (docs/settings.md)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the matching settings; exit 1 when none matches."""
    docs = matching(setting_docs(), args.pattern)
    if not docs:
        print(f"websim settings: no setting matches {args.pattern!r}", file=sys.stderr)
        return 1
    sys.stdout.write(settings_markdown(docs) if args.markdown else settings_text(docs))
    return 0
