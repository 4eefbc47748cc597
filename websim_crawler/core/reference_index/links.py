"""The references' links as an inverted index: which references share a page's links, how many.

The links stage scores a pair by the Jaccard of their link sets (``core.similarity.links``). Two
pages of one site share a few links of many (a Jaccard of a few hundredths: a copy on another host
keeps only its absolute links), which no short sketch tells from noise. So every reference's
links are kept as 64-bit hashes (BLAKE2b of the link key) sorted by hash beside the reference
each belongs to: a page's links are found by binary search, and the references sharing any of
them, with the exact count shared, come from the postings read, never from every reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.similarity.comparison import PageFeatures
from websim_crawler.core.similarity.rarity import feature_hash
from websim_crawler.errors import InputFormatError

# Postings read for one query at most: past it, the links most references share are left out
# first (they tell references apart least, as the commonest words do), and the query is counted.
MAX_POSTINGS_READ = 2_000_000


def link_hashes(page: PageFeatures) -> NDArray[np.uint64]:
    """Return the sorted 64-bit hashes of the page's distinct link keys."""
    hashes = {feature_hash(link) for link in page.links}
    return np.sort(np.fromiter(hashes, dtype=np.uint64, count=len(hashes)))


class LinkPostings:
    """Every reference's link hashes, sorted by hash, with the reference each belongs to."""

    def __init__(
        self,
        hashes: NDArray[np.uint64] | None = None,
        owners: NDArray[np.int32] | None = None,
        counts: NDArray[np.int32] | None = None,
    ) -> None:
        self.hashes: NDArray[np.uint64] = np.zeros(0, np.uint64) if hashes is None else hashes
        self.owners: NDArray[np.int32] = np.zeros(0, np.int32) if owners is None else owners
        self.counts: NDArray[np.int32] = np.zeros(0, np.int32) if counts is None else counts
        self.capped_queries = 0  # queries that read MAX_POSTINGS_READ and left the rest out

    def add(self, rows: Sequence[NDArray[np.uint64]]) -> None:
        """Add the link hashes of the next references (numbered after the known ones), merged
        into the sorted postings in linear time."""
        if not rows:
            return
        first = len(self.counts)
        sizes = np.fromiter((len(row) for row in rows), np.int32, len(rows))
        new_hashes = np.concatenate(rows)
        new_owners = np.repeat(np.arange(first, first + len(rows), dtype=np.int32), sizes)
        order = np.argsort(new_hashes, kind="stable")
        new_hashes, new_owners = new_hashes[order], new_owners[order]
        places = np.searchsorted(self.hashes, new_hashes, side="right")
        self.hashes = np.insert(self.hashes, places, new_hashes)
        self.owners = np.insert(self.owners, places, new_owners)
        self.counts = np.concatenate([self.counts, sizes])

    def shared(self, query: NDArray[np.uint64]) -> NDArray[np.int64]:
        """Return, for every reference, how many of the query's link hashes it has."""
        starts = np.searchsorted(self.hashes, query, side="left")
        lengths = np.searchsorted(self.hashes, query, side="right") - starts
        if int(lengths.sum()) > MAX_POSTINGS_READ:
            self.capped_queries += 1
            kept = np.argsort(lengths, kind="stable")
            fits = np.cumsum(lengths[kept]) <= MAX_POSTINGS_READ
            starts, lengths = starts[kept[fits]], lengths[kept[fits]]
        total = int(lengths.sum())
        offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        owners = self.owners[np.repeat(starts, lengths) + offsets]
        return np.bincount(owners, minlength=len(self.counts))

    def jaccards(
        self, query: NDArray[np.uint64], shared: NDArray[np.int64], ids: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """Return the Jaccard of the query's links with those of the references ``ids``, given
        ``shared`` (what ``shared`` returned for the query)."""
        common = shared[ids].astype(np.float64)
        union = len(query) + self.counts[ids] - common
        return np.divide(common, union, out=np.zeros(len(ids)), where=union > 0)

    def check(self, references: int, source: str) -> None:
        """Raise ``InputFormatError`` unless the postings fit ``references`` references."""
        owners = self.owners
        fits = (
            self.hashes.dtype == np.uint64
            and owners.dtype == np.int32
            and self.counts.dtype == np.int32
            and self.hashes.shape == owners.shape
            and self.counts.shape == (references,)
            and (not len(owners) or 0 <= int(owners.min()) <= int(owners.max()) < references)
            and np.array_equal(np.bincount(owners, minlength=references), self.counts)
            and not bool((self.hashes[1:] < self.hashes[:-1]).any())
        )
        if not fits:
            raise InputFormatError(f"{source}: the link postings do not fit its references")
