"""websim-crawler: crawl query-result pages, extract main content, cluster and compare them.

The front door: ``from websim_crawler import analyse_page, compare_pages, ...`` (``__all__``).
Each name is imported on first use (``__init__.pyi`` lists them), so ``import websim_crawler``
stays cheap: a command's start-up and the ``from websim_crawler import __version__`` of every
room load nothing else.
"""

from __future__ import annotations

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
