"""The ``-s WEBSIM_NAME=VALUE`` option shared by the commands, like ``scrapy crawl -s``."""

from __future__ import annotations

import argparse
import difflib

from websim_crawler.config import setting_names
from websim_crawler.errors import WebsimError


def add_settings_option(parser: argparse.ArgumentParser, example: str) -> None:
    """Add a repeatable ``-s/--set NAME=VALUE`` option for ``WEBSIM_*`` settings."""
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"a WEBSIM_* setting, e.g. -s {example}",
    )


def settings_from_pairs(pairs: list[str]) -> dict[str, str]:
    """Turn ``NAME=VALUE`` strings into a settings dict; raise on a malformed or unknown one."""
    known = known_settings()
    settings: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.startswith("WEBSIM_"):
            raise WebsimError(f"settings are WEBSIM_NAME=VALUE, got {pair!r}")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise WebsimError(f"unknown setting {name}{hint}")
        settings[name] = value
    return settings


def known_settings() -> list[str]:
    """Return the name of every ``WEBSIM_*`` setting ``WebsimConfig`` reads."""
    return list(setting_names())
