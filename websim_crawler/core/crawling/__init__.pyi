"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .pagination import (
    NextPage,
    advance_page_parameter,
    next_page,
)
from .records import (
    record_links,
    site_template_links,
    url_shape,
)

__all__ = [
    "NextPage",
    "advance_page_parameter",
    "next_page",
    "record_links",
    "site_template_links",
    "url_shape",
]
