"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .diagnosis import CrawlDiagnosis, Diagnosis
from .memory import ResultListMemory
from .pagination import (
    NextPage,
    advance_page_parameter,
    next_page,
)
from .records import (
    ResultRecords,
    find_records,
    record_links,
    site_template_links,
)
from .regions import DataRegion, find_data_regions
from .shapes import url_shape

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
