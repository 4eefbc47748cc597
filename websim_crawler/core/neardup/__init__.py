"""Near-duplicate pages at collection scale (Shibata, Kang and Kurohashi 2010).

Content region of each page -> long sentences -> sentence index over the collection (exact, with
disk spill; MinHash/LSH candidates; or a Dask bag) -> pairs sharing low-frequency sentences ->
class (identical, inclusion, partial) and relation (mirror, in-site, linked, citing, copies).
"""

from __future__ import annotations

import lazy_loader

# Importing a submodule (the settings in ``params``) must not import the others: the names listed
# in ``__init__.pyi`` are imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
