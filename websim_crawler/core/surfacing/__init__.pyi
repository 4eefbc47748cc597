"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .answers import CoveragePoint, QueryLogEntry, SurfacingEvent, journal_event
from .counts import ResultCount, result_count, result_count_of_text
from .curve import coverage_png
from .entrance import (
    MISSING_PAGE_PATH,
    entrance_pages,
    opensearch_links,
    opensearch_template,
)
from .estimate import (
    SizeEstimate,
    capture_estimate,
    chao_estimate,
    jackknife_estimate,
    stated_estimate,
)
from .inputs import FormInput, FormPlan, form_inputs, search_form_inputs, typed_value, unfillable
from .params import SurfacingParams
from .planner import ANSWERS_NOTHING, QueryPlanner
from .snippets import record_key, record_snippets

__all__ = [
    "ANSWERS_NOTHING",
    "MISSING_PAGE_PATH",
    "CoveragePoint",
    "FormInput",
    "FormPlan",
    "QueryLogEntry",
    "QueryPlanner",
    "ResultCount",
    "SizeEstimate",
    "SurfacingEvent",
    "SurfacingParams",
    "capture_estimate",
    "chao_estimate",
    "coverage_png",
    "entrance_pages",
    "form_inputs",
    "jackknife_estimate",
    "journal_event",
    "opensearch_links",
    "opensearch_template",
    "record_key",
    "record_snippets",
    "result_count",
    "result_count_of_text",
    "search_form_inputs",
    "stated_estimate",
    "typed_value",
    "unfillable",
]
