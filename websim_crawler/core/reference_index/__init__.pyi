"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .answers import MatchLine, has_similar, match_line, prepared_page
from .index import INDEX_FORMAT, Match, ReferenceIndex
from .links import MAX_POSTINGS_READ
from .params import MatchParams
from .rarity_counts import MAX_BRAND_SCORED

__all__ = [
    "INDEX_FORMAT",
    "MAX_BRAND_SCORED",
    "MAX_POSTINGS_READ",
    "Match",
    "MatchLine",
    "MatchParams",
    "ReferenceIndex",
    "has_similar",
    "match_line",
    "prepared_page",
]
