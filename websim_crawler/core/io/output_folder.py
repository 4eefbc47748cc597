"""The folder of an output file: the file's own folder may be created, nothing above it.

An output path names a file; its folder is created when missing, but only when the folder that
holds it exists: a mistyped root (``/nonexistent-dir/sub/out.json``) is an error naming the
missing folder, never a tree of folders made where the user did not ask for one.
"""

from __future__ import annotations

import os
from pathlib import Path

from websim_crawler.errors import OutputPathError


def make_own_folder(path: str | os.PathLike[str]) -> Path:
    """Create the folder of the file ``path`` if missing (not its parents); return the folder.

    Raise ``OutputPathError`` when the folder above it is missing or is not a folder.
    """
    folder = Path(path).absolute().parent
    if folder.is_dir():
        return folder
    if folder.exists():
        raise OutputPathError(f"cannot write {path}: {folder} is not a folder")
    if not folder.parent.is_dir():
        raise OutputPathError(
            f"cannot write {path}: the folder {_missing_root(folder)} does not exist; "
            "create it first or choose another path"
        )
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise OutputPathError(
            f"cannot write {path}: cannot create its folder {folder}: {exc.strerror or exc}"
        ) from exc
    return folder


def _missing_root(folder: Path) -> Path:
    """Return the highest missing folder on the way to ``folder``."""
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    return missing
