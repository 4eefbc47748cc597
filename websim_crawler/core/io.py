"""Reading crawl feeds (JSON Lines), appending to them durably, writing result files atomically.

Feeds: :func:`open_feed` opens a crawl feed for the feed exporter so that each item reaches the
operating system as it is written (optionally fsynced); a kill leaves valid JSON Lines up to the
last full line, and :func:`iter_jsonl` skips a cut last line quietly (counted once).
:func:`iter_feeds` reads several feeds counting each URL once (a request requeued after a worker
died may have written its page twice).

Results: :func:`atomic_writer` writes through a temporary file renamed over the target; the
temporary files of a writer that was killed are removed by the next write of the same target.
:func:`atomic_write_pair` replaces two files together (a report and its HTML view) through a
journal: after a kill both are old, or both are new once the next write has rolled forward.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from websim_crawler.errors import InputFormatError, OutputPathError

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
        _temporary_beside(target).unlink()
    except OSError as exc:
        raise OutputPathError(
            f"cannot write {target}: {exc.strerror or exc}; choose a path in a writable folder"
        ) from exc


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


class FeedFile(io.FileIO):
    """An unbuffered feed file: each ``write`` reaches the operating system whole, then returns.

    With ``fsync`` every write is also forced to the disk (survives a machine crash, not only a
    killed process), at the cost of one disk flush per item.
    """

    def __init__(self, path: str | os.PathLike[str], mode: str, *, fsync: bool) -> None:
        super().__init__(path, mode)
        self.fsync = fsync

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += super().write(view[written:]) or 0
        if self.fsync:
            os.fsync(self.fileno())
        return written


def incomplete_marker(path: str | os.PathLike[str]) -> Path:
    """Return the marker that lies beside a feed while a crawl writes it (``FEED.incomplete``)."""
    target = Path(path)
    return target.with_name(f"{target.name}.incomplete")


def open_feed(
    path: str | os.PathLike[str], *, overwrite: bool, fsync: bool, lines: bool
) -> FeedFile:
    """Open a crawl feed for writing (``overwrite``: truncate, else append), unbuffered.

    Appending to JSON Lines (``lines``) first removes a last line cut short by an earlier kill, so
    the next item starts on a line of its own; the item of that line was never acknowledged and
    is crawled again.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if lines and not overwrite:
        _remove_cut_last_line(target)
    return FeedFile(target, "wb" if overwrite else "ab", fsync=fsync)


def _remove_cut_last_line(path: Path) -> None:
    try:
        handle = path.open("rb+")
    except FileNotFoundError:
        return
    with handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            block = handle.read(end - start)
            if end == size and block.endswith(b"\n"):
                return
            newline = block.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        handle.truncate(end)
        logger.info(
            "%s: removed a last line cut short (%d bytes) before appending", path, size - end
        )


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Yield a UTF-8 text file that replaces ``path`` only when the block ends without error.

    The text goes to a hidden temporary file in the same folder (``.NAME.PID.*.tmp``), renamed
    over ``path`` at the end; an error or a kill on the way leaves ``path`` as it was. The
    temporary files that killed writers left beside ``path`` are removed first.
    """
    with _replacing(Path(path)) as temporary, temporary.open("w", encoding="utf-8") as handle:
        yield handle
        handle.flush()
        os.fsync(handle.fileno())


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` as :func:`atomic_writer` replaces a text file."""
    with _replacing(Path(path)) as temporary, temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """Yield a temporary file beside ``target``, renamed over it when the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _roll_forward(_journal_of(target))
    _remove_leftovers(target)
    temporary = _temporary_beside(target)
    try:
        yield temporary
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def atomic_write_pair(
    first: tuple[str | os.PathLike[str], str], second: tuple[str | os.PathLike[str], str]
) -> None:
    """Replace two text files together: after a kill both are old, or both new once recovered.

    Both texts are written to temporary files first; then a journal naming the two renames is
    written beside the first file, the renames are done in order, and the journal is deleted. A
    kill before the journal leaves both old files (the temporaries are removed by the next
    write); a kill after it is rolled forward by the next write of the pair (or of the first
    file): both renames are completed before anything else is done.
    """
    targets = [Path(first[0]), Path(second[0])]
    journal = _journal_of(targets[0])
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    _roll_forward(journal)
    temporaries: list[Path] = []
    try:
        for target, text in zip(targets, (first[1], second[1]), strict=True):
            _remove_leftovers(target)
            temporary = _temporary_beside(target)
            temporaries.append(temporary)
            with temporary.open("w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        renames = [
            [str(temporary), str(target)]
            for temporary, target in zip(temporaries, targets, strict=True)
        ]
        with _temporary_beside(journal).open("w", encoding="utf-8") as handle:
            json.dump({"renames": renames}, handle)
            handle.flush()
            os.fsync(handle.fileno())
            journal_temporary = Path(handle.name)
        os.replace(journal_temporary, journal)
    except BaseException:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
        raise
    _roll_forward(journal)


def _temporary_beside(target: Path) -> Path:
    """Create an empty temporary file beside ``target`` with the mode ``open`` would give it."""
    descriptor, name = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
    )
    try:
        os.fchmod(descriptor, 0o666 & ~_umask())  # mkstemp's 0600 would survive the rename
    finally:
        os.close(descriptor)
    return Path(name)


def _umask() -> int:
    """Return the process umask (read by setting it, so set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _journal_of(target: Path) -> Path:
    return target.with_name(f".{target.name}.pair.json")


def _roll_forward(journal: Path) -> None:
    """Finish the renames a pair write journaled (a no-op without a journal)."""
    try:
        renames = json.loads(journal.read_text(encoding="utf-8"))["renames"]
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("%s: unreadable pair journal removed (%s)", journal, exc)
        journal.unlink(missing_ok=True)
        return
    finished = 0
    for temporary, target in renames:
        if Path(temporary).exists():
            os.replace(temporary, target)
            finished += 1
    if finished:
        logger.info("%s: finished %d rename(s) of an interrupted pair write", journal, finished)
    journal.unlink(missing_ok=True)


def _remove_leftovers(target: Path) -> None:
    """Delete the temporary files of killed writers of ``target`` (their PID is gone)."""
    # ".NAME.PID.XXXXXXXX.tmp" exactly: ".NAME.html.PID..." belongs to another target.
    own = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.[^.]+\.tmp")
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        match = own.fullmatch(leftover.name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        leftover.unlink(missing_ok=True)
        logger.info("removed %s, left by an interrupted write", leftover)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text to ``path`` through a temporary file in the same folder and a rename."""
    with atomic_writer(path) as handle:
        handle.write(text)


def json_text(data: Any) -> str:
    """Return ``data`` as the indented UTF-8 JSON text of the result files."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON to ``path`` atomically."""
    atomic_write_text(path, json_text(data))


def atomic_write_report(
    path: str | os.PathLike[str], data: Any, html_path: str | os.PathLike[str] | None, html: str
) -> None:
    """Write a JSON report and, when ``html_path`` is given, its HTML view as one pair."""
    if html_path is None:
        atomic_write_json(path, data)
    else:
        atomic_write_pair((path, json_text(data)), (html_path, html))
