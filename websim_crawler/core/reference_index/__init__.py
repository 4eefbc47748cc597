"""Match pages against a reference index of known pages (phishing checks, archives, search)."""

from __future__ import annotations

import lazy_loader

# Reading the settings (``params``) must not import the index, faiss or the similarity stages:
# the names listed in ``__init__.pyi`` are imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
