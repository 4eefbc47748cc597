"""The ``websim`` command line: one module per subcommand in this package.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets
``func=run`` where ``run(args) -> int``. Modules are found by name, so adding a subcommand
never touches this file.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from websim_crawler import __version__
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand of this package."""
    parser = argparse.ArgumentParser(
        prog="websim",
        description="Extract, cluster and compare query-result web pages.",
    )
    parser.add_argument("--version", action="version", version=f"websim {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``websim`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (2) or --help/--version (0), already printed
        return exc.code if isinstance(exc.code, int) else 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except WebsimError as exc:
        print(f"websim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"websim {args.command}: interrupted", file=sys.stderr)
        return 130
