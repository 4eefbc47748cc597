"""The options every command shares: ``-s WEBSIM_NAME=VALUE``, setting flags, progress bars.

A command's setting flags are the rows of ``COMMAND_FLAGS`` (``cli._flags``, each the alias of a
setting); :func:`command_config` builds the one validated ``WebsimConfig`` the
command starts from: a flag given on the command line beats ``-s``, which beats the default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from websim_crawler.cli._flags import COMMAND_FLAGS, CommandFlag
from websim_crawler.config import (
    WebsimConfig,
    check_setting_names,
    declared_setting_fields,
    setting_names,
)
from websim_crawler.core.io import check_output_path
from websim_crawler.errors import ConfigError

T = TypeVar("T")


def add_settings_option(parser: argparse.ArgumentParser, example: str) -> None:
    """Add a repeatable ``-s/--set NAME=VALUE`` option for ``WEBSIM_*`` settings."""
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"a WEBSIM_* setting, e.g. -s {example} (a flag for the same setting wins)",
    )


def add_setting_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """Add ``command``'s setting flags: default, type and choices come from the setting."""
    fields = declared_setting_fields()
    for flag in command_flags(command):
        declared, _hint = fields[flag.setting]
        choices = declared.metadata["choices"]
        parser.add_argument(
            *flag.flags,
            dest=flag.setting,
            default=None,
            choices=None if choices is None else tuple(map(str, choices)),
            metavar=None if choices is not None else flag.flags[-1].lstrip("-").upper(),
            help=f"{flag.help} ({flag.setting}, default: {declared.default})",
        )


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--progress/--no-progress`` (default: bars on a terminal only)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on stderr (default: only when stderr is a terminal)",
    )


def progress(iterable: Iterable[T], args: argparse.Namespace, **options: Any) -> Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar drawn as ``--progress`` says (tqdm is imported only then)."""
    disabled = progress_disabled(args)
    if disabled or (disabled is None and not sys.stderr.isatty()):
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, file=sys.stderr, **options)


def progress_disabled(args: argparse.Namespace) -> bool | None:
    """Return tqdm's ``disable`` for ``--progress`` (``None``: a terminal decides)."""
    shown = getattr(args, "progress", None)
    return None if shown is None else not shown


def command_flags(command: str) -> list[CommandFlag]:
    """Return the setting flags of one command."""
    return [flag for flag in COMMAND_FLAGS if command in flag.commands]


def command_settings(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """Return the settings of ``-s`` overlaid with the setting flags given."""
    settings: dict[str, Any] = settings_from_pairs(getattr(args, "set", []))
    for flag in command_flags(command):
        value = getattr(args, flag.setting, None)
        if value is not None:
            settings[flag.setting] = value
    return settings


def command_config(args: argparse.Namespace, command: str) -> WebsimConfig:
    """Build the validated config of a command; a bad flag value names the flag."""
    settings = command_settings(args, command)
    try:
        return WebsimConfig.from_settings(settings)
    except ConfigError as exc:
        message = str(exc)
        for flag in command_flags(command):
            if getattr(args, flag.setting, None) is not None and message.startswith(flag.setting):
                raise ConfigError(flag.flags[-1] + message[len(flag.setting) :]) from exc
        raise


def required_output(path: str | None, setting_name: str) -> str:
    """Return the output path a flag or ``-s`` gave, checked writable before the work starts."""
    if not path:
        raise ConfigError(f"give the output file: -o FILE (or -s {setting_name}=FILE)")
    check_output_path(path)
    return path


def report_problems(command: str, problems: list[str]) -> int:
    """Print one stderr line per problem; return exit code 1 when there were any, else 0."""
    for problem in problems:
        print(f"websim {command}: {problem}", file=sys.stderr)
    return 1 if problems else 0


def settings_from_pairs(pairs: list[str]) -> dict[str, str]:
    """Turn ``NAME=VALUE`` strings into a settings dict; raise on a malformed or unknown one."""
    settings: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.startswith("WEBSIM_"):
            raise ConfigError(f"-s takes WEBSIM_NAME=VALUE, got {pair!r}")
        settings[name] = value
    check_setting_names(settings)
    return settings


def known_settings() -> list[str]:
    """Return the name of every ``WEBSIM_*`` setting ``WebsimConfig`` reads."""
    return list(setting_names())
