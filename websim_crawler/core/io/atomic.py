"""Result files written atomically: through a temporary file renamed over the target.

The temporary files of a writer that was killed are removed by the next write of the same
target, which first rolls forward a pair write (``pair_journal``) that a kill interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from websim_crawler.core.io.output_folder import make_own_folder
from websim_crawler.core.io.pair_journal import atomic_write_pair, journal_of, roll_forward
from websim_crawler.core.io.temporary_files import remove_leftovers, temporary_beside
from websim_crawler.errors import OutputPathError


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Raise ``OutputPathError`` unless a file can be written at ``path`` (before the work).

    Creates the file's own folder when missing (never the folders above it) and a temporary
    file beside ``path``, as the write at the end will; a folder, a missing root, a read-only
    place or ``/proc/x`` fail here with the fix.
    """
    target = Path(path)
    if target.is_dir() or str(path).endswith(os.sep):
        raise OutputPathError(
            f"{target} is a folder: give a file name, e.g. {target / 'output.json'}"
        )
    make_own_folder(target)
    try:
        temporary_beside(target).unlink()
    except OSError as exc:
        raise OutputPathError(
            f"cannot write {target}: {exc.strerror or exc}; choose a path in a writable folder"
        ) from exc


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
    make_own_folder(target)
    roll_forward(journal_of(target))
    remove_leftovers(target)
    temporary = temporary_beside(target)
    try:
        yield temporary
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
