"""The ``websim`` command line: one module per subcommand in this package.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets
``func=run`` where ``run(args) -> int``. Modules are found by name, so adding a subcommand
never touches this file. Only the chosen subcommand's module is imported (the others may pull
in numpy, scipy or Scrapy); ``websim --help`` lists them by the first line of their docstrings.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import logging
import os
import pkgutil
import sys
from collections.abc import Sequence

from websim_crawler import __version__
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

# numpy's OpenBLAS starts a thread per core when it is imported, which spins for a while (its
# cost is in benchmarks/RESULTS.md, "Start-up, idle workers"). Only fuzzy
# c-means multiplies matrices big enough to gain from more than one; the other commands start
# numpy with one BLAS thread, unless the environment chose.
_BLAS_THREADED_COMMANDS = frozenset({"cluster"})


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser; only the subcommand ``argv`` names is imported and complete.

    Without ``argv`` every subcommand is imported (the full parser, for documentation and tests).
    """
    parser = argparse.ArgumentParser(
        prog="websim",
        description="Extract, cluster and compare query-result web pages.",
    )
    parser.add_argument("--version", action="version", version=f"websim {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    chosen = _chosen_command(argv)
    subcommands = _subcommands()
    # The others' summaries show only in the top-level help: no command, or a wrong one.
    summarised = chosen not in {name for name, _path in subcommands}
    for name, path in subcommands:
        if argv is None or name == chosen:
            importlib.import_module(f"{__name__}.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=_summary(path) if summarised else None)
    return parser


def _subcommands() -> list[tuple[str, str]]:
    """Return (name, source path) of each subcommand module, without importing any."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            found.append((info.name, os.path.join(__path__[0], f"{info.name}.py")))
    return sorted(found)


def _chosen_command(argv: Sequence[str] | None) -> str | None:
    """Return the subcommand ``argv`` names: its first argument that is not an option."""
    return next((arg for arg in argv or () if not arg.startswith("-")), None)


def _summary(path: str) -> str:
    """Return what a subcommand does: its module docstring's first line, after the colon."""
    with open(path, encoding="utf-8") as source:
        first_line = (ast.get_docstring(ast.parse(source.read())) or "").split("\n", 1)[0]
    return first_line.split(": ", 1)[-1].rstrip(".").replace("``", "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``websim`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # Only before numpy's first import: after it, the setting would reach only child processes
    # (a caller that imported numpy, a test run, keeps its environment).
    if "numpy" not in sys.modules and _chosen_command(argv) not in _BLAS_THREADED_COMMANDS:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = build_parser(argv)
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
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"websim {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (websim extract ... | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet exit flush
        return 141  # 128 + SIGPIPE, as a shell reports a killed writer
