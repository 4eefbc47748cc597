"""Stage sketches: each page's layout and text as short vectors whose cosines rank candidates
the way the exact stages would, cheaply (the links stage has its exact postings: ``links``).

Feature hashing (Weinberger et al., "Feature Hashing for Large Scale Multitask Learning", 2009):
each token goes to one of ``DIMENSIONS`` buckets with a sign from its CRC-32, so the inner
product of two sketches estimates that of the full token vectors. The tokens are the layout
stage's tag pq-grams (Augsten, Boehlen and Gamper, 2005; the page's ``ParsedDocument.pq_grams``)
and the text stage's keyword stems, weighted like the text stage (1 + ln(count)); every sketch is
scaled to unit length, so a dot product is a cosine.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.similarity.comparison import PageFeatures

DIMENSIONS = 256
SKETCHED_STAGES = ("layout", "text")
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


def stage_sketches(page: PageFeatures) -> NDArray[np.float32]:
    """Return the page's sketches, one row per stage of ``SKETCHED_STAGES``."""
    return np.stack(
        [
            hashed_vector(layout_tokens(page)),
            hashed_vector(text_tokens(page)),
        ]
    )
