"""HTML pages, robustly: decoding, parsing, visibility, title and language, outgoing links.

The public names of the HTML helpers; other modules import from here.
"""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
