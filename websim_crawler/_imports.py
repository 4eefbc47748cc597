"""Probe optional extras once, in one place, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from websim_crawler.errors import MissingExtraError

_EXTRA_OF_MODULE = {
    "scrapy_playwright": "render",
    "playwright": "render",
    "psutil": "render",
    "scrapy_redis": "distributed",
    "redis": "distributed",
    "dask": "distributed",
    "distributed": "distributed",
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
