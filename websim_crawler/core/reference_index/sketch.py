"""Stage sketches: each page's layout, text and links as short vectors whose cosines rank
candidates the way the exact stages would, cheaply.

Feature hashing (Weinberger et al., "Feature Hashing for Large Scale Multitask Learning", 2009):
each token goes to one of ``DIMENSIONS`` buckets with a sign from its CRC-32, so the inner
product of two sketches estimates that of the full token vectors. The tokens are the layout
stage's tag pq-grams (Augsten, Boehlen and Gamper, 2005; the page's ``ParsedDocument.pq_grams``),
the text stage's keyword stems and the links stage's link keys, weighted like the text stage
(1 + ln(count)); every sketch is scaled to unit length, so a dot product is a cosine.

The links stage's exact score is a Jaccard of link sets, which a 256-bucket sketch estimates
poorly where pages share a few links of many (two pages of one site: a few hundredths, within the
sketch's noise). ``link_hashes`` keeps each page's link set as sorted 64-bit hashes (BLAKE2b), so
candidates are ranked by the exact Jaccard for that stage at eight bytes a link.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.similarity.comparison import PageFeatures

DIMENSIONS = 256
SKETCHED_STAGES = ("layout", "text", "links")
_SIGN_BIT = 1 << 31


def hashed_vector(tokens: Iterable[tuple[bytes, float]]) -> NDArray[np.float32]:
    """Return the unit-length signed hash of weighted tokens (all zeros when there are none)."""
    vector = np.zeros(DIMENSIONS, dtype=np.float64)
    for token, weight in tokens:
        code = zlib.crc32(token)
        vector[code % DIMENSIONS] += -weight if code & _SIGN_BIT else weight
    norm = float(np.linalg.norm(vector))
    if norm > 0.0:
        vector /= norm
    return vector.astype(np.float32)


def _counted(count: int) -> float:
    return 1.0 + math.log(count) if count > 1 else 1.0


def layout_tokens(page: PageFeatures) -> list[tuple[bytes, float]]:
    """Return the page's tag pq-grams with their weights (none without a document)."""
    if page.document is None:
        return []
    return [
        ("\x1f".join(gram).encode("utf-8", "replace"), _counted(count))
        for gram, count in page.document.pq_grams.items()
    ]


def text_tokens(page: PageFeatures) -> list[tuple[bytes, float]]:
    """Return the page's keyword stems with their weights."""
    return [
        (term.encode("utf-8", "replace"), _counted(count))
        for term, count in page.keywords.items()
        if count > 0
    ]


def link_tokens(page: PageFeatures) -> list[tuple[bytes, float]]:
    """Return the page's link keys (the links its own URL resolves), each weighing 1."""
    return [(link.encode("utf-8", "replace"), 1.0) for link in page.links]


def stage_sketches(page: PageFeatures) -> NDArray[np.float32]:
    """Return the page's sketches, one row per stage of ``SKETCHED_STAGES``."""
    return np.stack(
        [
            hashed_vector(layout_tokens(page)),
            hashed_vector(text_tokens(page)),
            hashed_vector(link_tokens(page)),
        ]
    )


def link_hashes(page: PageFeatures) -> NDArray[np.uint64]:
    """Return the sorted 64-bit hashes of the page's distinct link keys."""
    hashes = {
        int.from_bytes(hashlib.blake2b(link.encode("utf-8", "replace"), digest_size=8).digest())
        for link in page.links
    }
    return np.sort(np.fromiter(hashes, dtype=np.uint64, count=len(hashes)))


def link_jaccards(
    query: NDArray[np.uint64],
    hashes: NDArray[np.uint64],
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Return the Jaccard of the query's link hashes with each reference's, the references'
    being ``hashes[starts[i]:ends[i]]``; 0 where both are empty."""
    lengths = ends - starts
    if not len(lengths):
        return np.zeros(0)
    owners = np.repeat(np.arange(len(lengths)), lengths)
    positions = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    shared = np.isin(hashes[np.repeat(starts, lengths) + positions], query)
    common = np.bincount(owners, weights=shared, minlength=len(lengths))
    union = len(query) + lengths - common
    return np.divide(common, union, out=np.zeros(len(lengths)), where=union > 0)
