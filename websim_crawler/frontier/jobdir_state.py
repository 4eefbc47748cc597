"""Pipeline state that survives a paused crawl: JSON files in Scrapy's ``JOBDIR``.

``scrapy crawl ... -s JOBDIR=crawls/run1`` keeps the request queue and the seen requests on
disk; a pipeline with state of its own (the per-site template memory, the clustering buffer)
saves it here when the spider closes, shutdown by SIGTERM or Ctrl-C included, and takes it back
when the same ``JOBDIR`` is crawled again. A second SIGTERM (forced stop) skips the save: the
resumed crawl then starts that state afresh, as the README says.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.params import SettingsLike
from websim_crawler.errors import InputFormatError

logger = logging.getLogger(__name__)

T = TypeVar("T")


def state_path(settings: SettingsLike, name: str, suffix: str = ".json") -> Path | None:
    """Return the file of state ``name`` in ``JOBDIR``, or ``None`` when no JOBDIR is set."""
    jobdir = settings.get("JOBDIR")
    return Path(str(jobdir)) / f"websim-{name}{suffix}" if jobdir else None


def load_state(
    settings: SettingsLike, name: str, rebuild: Callable[[dict[str, Any]], T]
) -> T | None:
    """Return state ``name`` saved by an earlier run of this JOBDIR, rebuilt, or ``None``.

    A missing file is a fresh crawl; an unreadable or malformed one is logged and ignored.
    """
    path = state_path(settings, name)
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        logger.error("cannot read saved state %s, starting it afresh: %s", path, exc)
        return None
    if not isinstance(data, dict):
        logger.error("saved state %s is not a JSON object, starting it afresh", path)
        return None
    try:
        state = rebuild(data)
    except InputFormatError as exc:
        logger.error("saved state %s is malformed, starting it afresh: %s", path, exc)
        return None
    logger.info("resuming websim %s from %s", name, path)
    return state


def save_state(settings: SettingsLike, name: str, data: dict[str, Any]) -> None:
    """Write state ``name`` into JOBDIR atomically (nothing without a JOBDIR)."""
    path = state_path(settings, name)
    if path is not None:
        atomic_write_json(path, data)
