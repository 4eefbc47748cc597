"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .diagnosis import CrawlDiagnosis, Diagnosis
from .forms import SearchForm, find_search_form, form_words, rank_search_forms
from .link_roles import SearchTarget, is_view_parameter, shows_result_list
from .memory import ResultListMemory
from .no_results import says_no_results
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
from .refusals import RefusedUrls, refusal_summary
from .regions import DataRegion, find_data_regions
from .shapes import shapes_nest, url_shape

__all__ = [
    "CrawlDiagnosis",
    "DataRegion",
    "Diagnosis",
    "NextPage",
    "RefusedUrls",
    "ResultListMemory",
    "ResultRecords",
    "SearchForm",
    "SearchTarget",
    "advance_page_parameter",
    "find_data_regions",
    "find_records",
    "find_search_form",
    "form_words",
    "is_view_parameter",
    "next_page",
    "rank_search_forms",
    "record_links",
    "refusal_summary",
    "says_no_results",
    "shapes_nest",
    "shows_result_list",
    "site_template_links",
    "url_shape",
]
