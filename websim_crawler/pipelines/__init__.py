"""Item pipelines of websim-crawler, usable in any Scrapy project through ``ITEM_PIPELINES``."""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
