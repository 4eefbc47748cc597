"""Page analysis, phase 1 of VDEC: chunks, their features and fate, the main content.

The public names of the page analysis; other packages import from here only.
"""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
