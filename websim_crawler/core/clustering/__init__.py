"""Fuzzy c-means clustering of crawled pages by their keywords, and the clusters report."""

from __future__ import annotations

import lazy_loader

# Importing a submodule (the settings in ``params``) must not import the others: the names listed
# in ``__init__.pyi`` are imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
