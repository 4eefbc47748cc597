"""websim-crawler: crawl query-result pages, extract main content, cluster and compare them."""

from __future__ import annotations

__version__ = "0.1.0"
