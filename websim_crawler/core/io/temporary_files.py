"""Temporary files of atomic writes: made beside their target, removed once their writer died."""

from __future__ import annotations

import glob
import logging
import os
import re
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


def temporary_beside(target: Path) -> Path:
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


def remove_leftovers(target: Path) -> None:
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
