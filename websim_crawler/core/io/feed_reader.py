"""Reading crawl feeds (JSON Lines, ``.gz`` too): bad and cut lines counted, each URL once."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np

from websim_crawler.core.io.feed_writer import incomplete_marker
from websim_crawler.errors import InputFormatError

logger = logging.getLogger(__name__)

_LOGGED_BAD_LINES = 3  # bad lines logged one by one per file; the rest are only counted
# Bounds on one record, checked before or while it is decoded so that neither the time nor the
# memory of a line grows past a multiple of its length: a crawl record nests 5 levels deep, holds
# thousands of values (keywords, links, chunks) and counts with numbers of a few digits
# (Python's own bound, 4,300 digits, raises a ValueError the reader did not expect).
MAX_RECORD_DEPTH = 100
MAX_RECORD_VALUES = 2_000_000  # separators (',' and ':'), strings' own included: an upper bound
MAX_INTEGER_DIGITS = 20  # a 64-bit count has 20 digits at most; 10**400 is not a count
# A JSON string, written as the unrolled loop of Friedl's "Mastering Regular Expressions" (no
# alternation under the star: one step per character, no backtracking).
_JSON_STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_DEPTH_SLICE = 1 << 20


_BOUND_MESSAGES = {
    "too_deep": f"nested deeper than {MAX_RECORD_DEPTH}",
    "too_many_values": f"over {MAX_RECORD_VALUES:,} values",
    "huge_number": f"an integer of over {MAX_INTEGER_DIGITS} digits",
}


class _BadNumber(ValueError):
    """A JSON integer of a record has too many digits."""


class RecordOverBound(ValueError):
    """A record is deeper, larger or holds bigger numbers than a feed's bounds allow."""

    def __init__(self, reason: str) -> None:
        super().__init__(_BOUND_MESSAGES[reason])
        self.reason = reason


def _bounded_integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _BadNumber(f"an integer of {len(digits):,} digits")
    return int(digits)


def nesting_depth(line: bytes) -> int:
    """Return the deepest nesting of arrays and objects in a JSON text, outside its strings, in
    time linear in its length (numpy cumulative sums over slices of its brackets)."""
    brackets = _JSON_STRING_RE.sub(b'""', line).translate(None, _NOT_BRACKETS)
    steps = brackets.translate(_BRACKET_STEPS)
    depth = deepest = 0
    for start in range(0, len(steps), _DEPTH_SLICE):
        running = np.cumsum(np.frombuffer(steps[start : start + _DEPTH_SLICE], dtype=np.int8))
        deepest = max(deepest, depth + int(running.max()))
        depth += int(running[-1])
    return deepest


def decode_record(line: bytes) -> Any:
    """Decode one JSON Lines record within the bounds above.

    Raise ``RecordOverBound`` with the skip reason (``too_deep``, ``too_many_values``,
    ``huge_number``) or ``json.JSONDecodeError`` for text that is not JSON.
    """
    # Fewer brackets than the bound cannot nest deeper than it: most lines are not scanned.
    if (
        line.count(b"[") + line.count(b"{") > MAX_RECORD_DEPTH
        and nesting_depth(line) > MAX_RECORD_DEPTH
    ):
        raise RecordOverBound("too_deep")
    if line.count(b",") + line.count(b":") > MAX_RECORD_VALUES:
        raise RecordOverBound("too_many_values")
    try:
        return json.loads(
            line.decode("utf-8", errors="replace"),
            parse_int=_bounded_integer,
        )
    except _BadNumber as exc:
        raise RecordOverBound("huge_number") from exc
    except RecursionError as exc:  # deeper than the interpreter's limit, below ours
        raise RecordOverBound("too_deep") from exc


class FeedLine(TypedDict, total=False):
    """One line of a crawl feed: the page item's fields as the crawl wrote them (the HTML under
    ``WEBSIM_HTML_FIELD``; a spider's own fields kept as they are). Read from JSON, so its
    values are what the line holds: each reader checks the types of those it uses."""

    url: object
    kind: object
    title: object
    links: object
    screenshot: object
    language: object
    main_text: object
    keywords: object  # {word: count}
    keyword_stems: object  # {stem: count}: older feeds held these in ``keywords``
    chunks: object


@dataclass
class ReadReport:
    """What a JSON Lines read met: records read and lines skipped, by reason."""

    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    incomplete_feeds: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        """Count one skipped line."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def iter_jsonl(
    path: str | os.PathLike[str],
    report: ReadReport | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[FeedLine]:
    """Yield the JSON objects of a JSON Lines file (``.gz`` too), counting bad lines in ``report``.

    A line that is not a JSON object or is longer than ``max_line_bytes`` is skipped and counted
    (the first few are logged with their number); a last line cut short by a kill (no newline,
    not valid JSON) is counted as ``cut_last_line`` and logged at INFO only; a missing or
    unreadable file raises ``InputFormatError``. A line of a feed written before
    ``keyword_stems`` existed, whose ``keywords`` hold the stems, is read with them as its
    ``keyword_stems`` too (said once per file, at INFO).
    """
    report = report if report is not None else ReadReport()
    file_path = Path(path)
    if incomplete_marker(file_path).exists():
        logger.warning(
            "%s: the crawl writing this feed did not close cleanly (killed?) or is still running",
            file_path,
        )
        report.incomplete_feeds.append(str(file_path))
    opener = gzip.open if file_path.suffix == ".gz" else open
    try:
        handle = opener(file_path, "rb")
    except OSError as exc:
        raise InputFormatError(f"cannot read {file_path}: {exc.strerror or exc}") from exc
    bad_lines = 0
    older_feed = False

    def skip(number: int, reason: str, message: str) -> None:
        nonlocal bad_lines
        bad_lines += 1
        if bad_lines <= _LOGGED_BAD_LINES:
            logger.warning("%s:%d: %s, line skipped", file_path, number, message)
        report.skip(reason)

    with handle:
        try:
            for number, line in enumerate(_bounded_lines(handle, max_line_bytes), start=1):
                if line is None:
                    skip(number, "too_large", f"longer than {max_line_bytes:,} bytes")
                    continue
                if not line.strip():
                    continue
                try:
                    record = decode_record(line)
                except json.JSONDecodeError:
                    if not line.endswith(b"\n"):  # the last line, cut by a kill mid-write
                        logger.info("%s:%d: last line cut short, skipped", file_path, number)
                        report.skip("cut_last_line")
                        continue
                    skip(number, "invalid_json", "not valid JSON")
                    continue
                except RecordOverBound as exc:
                    skip(number, exc.reason, str(exc))
                    continue
                if not isinstance(record, dict):
                    skip(number, "not_an_object", "not a JSON object")
                    continue
                report.records += 1
                if record.get("keyword_stems") is None and record.get("keywords") is not None:
                    if not older_feed:
                        older_feed = True
                        logger.info("%s: an older feed, its keywords read as stems", file_path)
                    record["keyword_stems"] = record["keywords"]
                yield cast(FeedLine, record)
        except (OSError, EOFError) as exc:
            raise InputFormatError(f"cannot read {file_path}: {exc}") from exc
    if bad_lines > _LOGGED_BAD_LINES:
        logger.warning("%s: %d bad lines skipped in all", file_path, bad_lines)


def _bounded_lines(handle: Any, max_line_bytes: int | None) -> Iterator[bytes | None]:
    """Yield the lines of a binary file; ``None`` for a line longer than ``max_line_bytes``."""
    if max_line_bytes is None:
        yield from handle
        return
    while True:
        line = handle.readline(max_line_bytes + 1)
        if not line:
            return
        if len(line) <= max_line_bytes or (len(line) == max_line_bytes + 1 and line[-1:] == b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):  # skip the rest of the long line
            line = handle.readline(1 << 20)
        yield None


def iter_feeds(
    paths: Iterable[str | os.PathLike[str]],
    report: ReadReport | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[FeedLine]:
    """Yield the records of several feeds, each URL once (the first); repeats count as skipped.

    At-least-once crawling (a request requeued after its worker died, a resumed crawl) may write
    a page twice; every reader of several feeds counts it once. Records without a ``url`` string
    are yielded as they are (the caller decides about them).
    """
    report = report if report is not None else ReadReport()
    seen: set[str] = set()
    for path in paths:
        for record in iter_jsonl(path, report, max_line_bytes):
            url = record.get("url")
            if isinstance(url, str):
                if url in seen:
                    report.records -= 1
                    report.skip("duplicate_url")
                    continue
                seen.add(url)
            yield record
