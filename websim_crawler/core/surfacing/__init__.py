"""Surfacing a hidden database: finding the way in, choosing the queries, filling the form's
other inputs, and estimating how much of the database was reached.

Pure: works on ``lxml.html`` trees, URL strings and counts; the ``deepweb`` spider feeds it
what its result pages showed and submits what it chooses.
"""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
