"""websim-crawler: crawl query-result pages, extract main content, cluster and compare them."""

from __future__ import annotations

from websim_crawler._moved import install_moved_module_aliases

__version__ = "0.1.0"

install_moved_module_aliases()
