"""Item pipelines of websim-crawler, usable in any Scrapy project through ``ITEM_PIPELINES``."""

from __future__ import annotations

from websim_crawler.pipelines.analysis import PageAnalysisPipeline

__all__ = ["PageAnalysisPipeline"]
