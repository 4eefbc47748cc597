"""Reading crawl feeds (JSON Lines, ``.gz`` too): bad and cut lines counted, each URL once."""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websim_crawler.core.io.feed_writer import incomplete_marker
from websim_crawler.errors import InputFormatError

logger = logging.getLogger(__name__)

_LOGGED_BAD_LINES = 3  # bad lines logged one by one per file; the rest are only counted


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
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSON Lines file (``.gz`` too), counting bad lines in ``report``.

    A line that is not a JSON object or is longer than ``max_line_bytes`` is skipped and counted
    (the first few are logged with their number); a last line cut short by a kill (no newline,
    not valid JSON) is counted as ``cut_last_line`` and logged at INFO only; a missing or
    unreadable file raises ``InputFormatError``.
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
                    record = json.loads(line.decode("utf-8", errors="replace"))
                except json.JSONDecodeError:
                    if not line.endswith(b"\n"):  # the last line, cut by a kill mid-write
                        logger.info("%s:%d: last line cut short, skipped", file_path, number)
                        report.skip("cut_last_line")
                        continue
                    skip(number, "invalid_json", "not valid JSON")
                    continue
                if not isinstance(record, dict):
                    skip(number, "not_an_object", "not a JSON object")
                    continue
                report.records += 1
                yield record
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
) -> Iterator[dict[str, Any]]:
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
