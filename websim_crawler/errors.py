"""The package's exception family: every error websim raises on purpose is a ``WebsimError``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class WebsimError(Exception):
    """Base class of every error raised by websim-crawler on purpose; ``exit_code`` is what
    ``websim`` exits with when it stops on one (2: a usage or input error)."""

    exit_code = 2


class ConfigError(WebsimError, ValueError):
    """A setting or parameter has a bad value; the message names it."""


class PageError(WebsimError):
    """A page cannot be analysed; ``reason`` is a short stats slug (``empty``, ``binary``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class InputFormatError(WebsimError):
    """An input file (JSON Lines, PNG, saved crawl) is malformed; the message says where."""


class NothingUsableError(InputFormatError):
    """Inputs were read (a web archive's records) but none held a page the command can use;
    the message counts what was skipped and why. Exit code 1, as for inputs that failed."""

    exit_code = 1


class OutputPathError(WebsimError):
    """An output file cannot be written there (a folder, a read-only place); says the fix."""


class MissingExtraError(WebsimError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class BrowserMissingError(WebsimError):
    """Rendering was asked for but the browser cannot be started; the message names the fix."""


def nearest_hint(name: str, known: Iterable[str]) -> str:
    """Return `` (did you mean NEAREST?)`` for a mistyped ``name``, or ``""`` when none is near."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
