"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .decoding import (
    DECLARED,
    DETECTED,
    DOUBTFUL,
    DecodedPage,
    decode_html,
    decode_page,
    doubtful_text,
)
from .links import document_base_url, outgoing_links
from .metadata import (
    declared_language,
    page_title,
    stated_url,
)
from .parsing import (
    NO_LIMITS,
    HtmlTree,
    ParseLimits,
    check_page_size,
    opened_tags_over,
    parse_html,
    parse_plain_tree,
)
from .visibility import remove_invisible, visible_text

__all__ = [
    "DECLARED",
    "DETECTED",
    "DOUBTFUL",
    "NO_LIMITS",
    "DecodedPage",
    "HtmlTree",
    "ParseLimits",
    "check_page_size",
    "declared_language",
    "decode_html",
    "decode_page",
    "document_base_url",
    "doubtful_text",
    "opened_tags_over",
    "outgoing_links",
    "page_title",
    "parse_html",
    "parse_plain_tree",
    "remove_invisible",
    "stated_url",
    "visible_text",
]
