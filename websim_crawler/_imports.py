"""Probe optional extras once, in one place, with an error that names the extra to install."""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from websim_crawler.errors import MissingExtraError

_EXTRA_OF_MODULE = {
    "scrapy_playwright": "render",
    "playwright": "render",
    "psutil": "render",
    "scrapy_redis": "distributed",
    "redis": "distributed",
    "dask": "distributed",
    "distributed": "distributed",
    "starlette": "serve",
    "uvicorn": "serve",
    "multipart": "serve",
    "python_multipart": "serve",
}


def require(module_name: str) -> ModuleType:
    """Import an optional module or raise ``MissingExtraError`` naming its extra."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        extra = _EXTRA_OF_MODULE.get(module_name.split(".")[0], "all")
        raise MissingExtraError(
            f"{module_name} is not installed: pip install 'websim-crawler[{extra}]'"
        ) from exc


def available(module_name: str) -> bool:
    """Tell whether an optional module can be imported."""
    try:
        importlib.import_module(module_name)
    except ImportError:
        return False
    return True


def local_dask_cluster(**options: Any) -> Any:
    """Start a ``distributed.LocalCluster`` for one run, its chatter kept out of the output.

    Dask's scheduler and workers log a dozen INFO lines each (addresses, start, stop), which
    reach this process's handlers whatever their level (dask sets its loggers to INFO), and on a
    loaded machine a worker whose heartbeat outlives the scheduler's close logs an ERROR with a
    traceback: they are set to CRITICAL here, and in the worker processes, unless this process
    logs at DEBUG (a task's own error reaches the caller through the client, as an exception).
    Its HTTP server takes a free port without the dashboard (not 8787, which parallel runs would
    share).
    """
    distributed = require("distributed")
    level = logging.DEBUG if logging.getLogger().isEnabledFor(logging.DEBUG) else logging.CRITICAL
    logging.getLogger("distributed").setLevel(level)
    return distributed.LocalCluster(
        dashboard_address=":0",
        scheduler_kwargs={"dashboard": False},
        silence_logs=level,
        **options,
    )
