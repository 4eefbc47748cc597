"""Moving through a query-result site: the next result page and the links to its records.

Pure: works on an ``lxml.html`` tree (Scrapy's ``response.selector.root`` or ``parse_html``) and
URL strings; the spiders call these and turn the answers into requests. Links are resolved by
``core.urls.absolute_url``; the spiders' settings are in ``websim_crawler.crawl_params``.
"""

from __future__ import annotations

from websim_crawler.core.crawling.diagnosis import CrawlDiagnosis, Diagnosis
from websim_crawler.core.crawling.memory import ResultListMemory
from websim_crawler.core.crawling.pagination import NextPage, advance_page_parameter, next_page
from websim_crawler.core.crawling.records import (
    ResultRecords,
    find_records,
    record_links,
    site_template_links,
)
from websim_crawler.core.crawling.regions import DataRegion, find_data_regions
from websim_crawler.core.crawling.shapes import url_shape

__all__ = [
    "CrawlDiagnosis",
    "DataRegion",
    "Diagnosis",
    "NextPage",
    "ResultListMemory",
    "ResultRecords",
    "advance_page_parameter",
    "find_data_regions",
    "find_records",
    "next_page",
    "record_links",
    "site_template_links",
    "url_shape",
]
