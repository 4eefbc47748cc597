"""Near-duplicate pages at collection scale (Shibata, Kang and Kurohashi 2010).

Content region of each page -> long sentences -> sentence index over the collection (exact, with
disk spill; MinHash/LSH candidates; or a Dask bag) -> pairs sharing low-frequency sentences ->
class (identical, inclusion, partial) and relation (mirror, in-site, linked, citing, copies).
"""

from __future__ import annotations

from websim_crawler.core.neardup.detect import (
    NearDuplicateFinder,
    NeardupPair,
    NeardupReport,
    find_near_duplicates,
)
from websim_crawler.core.neardup.pages import PageSentences, page_sentences
from websim_crawler.core.neardup.params import NeardupParams

__all__ = [
    "NearDuplicateFinder",
    "NeardupPair",
    "NeardupParams",
    "NeardupReport",
    "PageSentences",
    "find_near_duplicates",
    "page_sentences",
]
