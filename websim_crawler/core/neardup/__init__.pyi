"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .detect import (
    NearDuplicateFinder,
    NeardupPair,
    NeardupReport,
    find_near_duplicates,
)
from .pages import PageSentences, page_sentences
from .params import NeardupParams

__all__ = [
    "NearDuplicateFinder",
    "NeardupPair",
    "NeardupParams",
    "NeardupReport",
    "PageSentences",
    "find_near_duplicates",
    "page_sentences",
]
