"""Public import path of the page similarity measures (``from websim_crawler.similarity import
structural_similarity``); the implementation is the pure core in ``websim_crawler.core.similarity``.
"""

from __future__ import annotations

from websim_crawler.core.similarity import *  # noqa: F403
from websim_crawler.core.similarity import __all__ as __all__
