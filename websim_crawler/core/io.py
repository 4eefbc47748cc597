"""Reading crawl feeds (JSON Lines) and writing result files atomically."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from websim_crawler.errors import InputFormatError

logger = logging.getLogger(__name__)


@dataclass
class ReadReport:
    """What a JSON Lines read met: records read and lines skipped, by reason."""

    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one skipped line."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def iter_jsonl(
    path: str | os.PathLike[str], report: ReadReport | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSON Lines file (``.gz`` too), counting bad lines in ``report``.

    A line that is not a JSON object (a truncated last line after a crash, say) is skipped, logged
    with its number and counted; a missing or unreadable file raises ``InputFormatError``.
    """
    report = report if report is not None else ReadReport()
    file_path = Path(path)
    opener = gzip.open if file_path.suffix == ".gz" else open
    try:
        handle = opener(file_path, "rt", encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputFormatError(f"cannot read {file_path}: {exc.strerror or exc}") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    logger.warning("%s:%d: not valid JSON, line skipped", file_path, number)
                    report.skip("invalid_json")
                    continue
                if not isinstance(record, dict):
                    logger.warning("%s:%d: not a JSON object, line skipped", file_path, number)
                    report.skip("not_an_object")
                    continue
                report.records += 1
                yield record
        except (OSError, EOFError) as exc:
            raise InputFormatError(f"cannot read {file_path}: {exc}") from exc


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Yield a UTF-8 text file that replaces ``path`` only when the block ends without error.

    The text goes to a temporary file in the same folder, renamed over ``path`` at the end; an
    error or a kill on the way leaves ``path`` as it was (and no temporary file on an error).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text to ``path`` through a temporary file in the same folder and a rename."""
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON to ``path`` atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
