"""Reading crawl feeds (JSON Lines) and writing result files atomically."""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from websim_crawler.errors import InputFormatError, OutputPathError

logger = logging.getLogger(__name__)

_LOGGED_BAD_LINES = 3  # bad lines logged one by one per file; the rest are only counted
_TEMPORARY_SUFFIX = ".websim-tmp"


@dataclass
class ReadReport:
    """What a JSON Lines read met: records read and lines skipped, by reason."""

    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one skipped line."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def iter_jsonl(
    path: str | os.PathLike[str],
    report: ReadReport | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSON Lines file (``.gz`` too), counting bad lines in ``report``.

    A line that is not a JSON object (a truncated last line after a crash, say) or is longer than
    ``max_line_bytes`` is skipped and counted (the first few are logged with their number); a
    missing or unreadable file raises ``InputFormatError``.
    """
    report = report if report is not None else ReadReport()
    file_path = Path(path)
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


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Raise ``OutputPathError`` unless a file can be written at ``path`` (before the work).

    Creates the missing parent folders and a temporary file beside ``path``, as the atomic
    write at the end will; a folder, a read-only place or ``/proc/x`` fail here with the fix.
    """
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(
            f"{target} is a folder: give a file name, e.g. {target / 'output.json'}"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=_TEMPORARY_SUFFIX, dir=target.parent
        )
    except OSError as exc:
        raise OutputPathError(
            f"cannot write {target}: {exc.strerror or exc}; choose a path in a writable folder"
        ) from exc
    os.close(descriptor)
    Path(temporary).unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Yield a UTF-8 text file that replaces ``path`` only when the block ends without error.

    The text goes to a temporary file in the same folder, renamed over ``path`` at the end; an
    error or a kill on the way leaves ``path`` as it was (and no temporary file on an error; the
    temporary file of a killed process is removed by the next write of ``path``). The file gets
    the mode a plain ``open`` would give it (0644 under the usual umask 022).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=_TEMPORARY_SUFFIX, dir=target.parent
    )
    try:
        os.fchmod(descriptor, 0o666 & ~_umask())
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """Return the process umask (read by setting it, so set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_stale_temporaries(target: Path) -> None:
    """Delete temporary files of earlier writes of ``target`` whose process is gone."""
    pattern = re.compile(
        rf"\.{re.escape(target.name)}\.(\d+)\.[a-z0-9_]{{8}}{re.escape(_TEMPORARY_SUFFIX)}"
    )
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*{_TEMPORARY_SUFFIX}"):
        owner = pattern.fullmatch(stale.name)
        if owner is None or _process_alive(int(owner.group(1))):
            continue
        with contextlib.suppress(OSError):
            stale.unlink()
            logger.info("removed %s, left by an interrupted write", stale)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive but someone else's
        return True
    return True


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text to ``path`` through a temporary file in the same folder and a rename."""
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON to ``path`` atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
