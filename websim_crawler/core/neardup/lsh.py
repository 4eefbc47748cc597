"""MinHash/LSH candidate pairs (datasketch) for collections whose exact sentence index is too big.

One streaming pass stores each page's long-sentence hashes on disk and counts sentence
frequencies in a count-min sketch (Cormode and Muthukrishnan 2005, "An improved data stream
summary: the count-min sketch"), so memory does not grow with the number of distinct sentences;
a second sketch counts (sentence, site) keys for the site-template rule. A second pass over the
stored pages keeps the sentences whose estimated frequency is at most F and that are not their
site's template by the estimated site count,
builds each page's MinHash (Broder 1997) over them, queries the LSH for earlier pages with a
similar sentence set, inserts the page, and checks each candidate exactly. Pairs whose Jaccard
similarity is far below the LSH threshold (small partial overlaps) are missed by design.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from datasketch import MinHash, MinHashLSH

from websim_crawler.core.neardup.index import IndexStats, PageStore, SiteTemplateRule
from websim_crawler.core.neardup.pages import PageSentences

logger = logging.getLogger(__name__)

_SKETCH_DEPTH = 4
_SKETCH_BATCH = 1_000_000
_SITE_MIX = 0x9E3779B97F4A7C15
_UINT64_MASK = (1 << 64) - 1


def site_keys(sentences: np.ndarray, site: int) -> np.ndarray:
    """Return the (sentence, site) keys the site sketch counts."""
    return sentences.astype(np.uint64) ^ np.uint64(((site + 1) * _SITE_MIX) & _UINT64_MASK)


class CountMinSketch:
    """Count-min sketch of 64-bit keys with multiply-shift row hashes; never under-counts."""

    def __init__(self, width: int, depth: int = _SKETCH_DEPTH, seed: int = 0) -> None:
        if width < 2 or width & (width - 1):
            raise ValueError(f"the sketch width must be a power of two, got {width}")
        self.width = width
        self._shift = np.uint64(64 - (width.bit_length() - 1))
        rng = np.random.default_rng(seed)
        self._multipliers = rng.integers(0, 1 << 63, size=depth, dtype=np.uint64) * np.uint64(
            2
        ) + np.uint64(1)
        self.table = np.zeros((depth, width), dtype=np.uint32)

    def _columns(self, keys: np.ndarray) -> np.ndarray:
        return ((keys[None, :] * self._multipliers[:, None]) >> self._shift).astype(np.intp)

    def add(self, keys: np.ndarray) -> None:
        """Count each key once."""
        columns = self._columns(keys.astype(np.uint64, copy=False))
        for row, row_columns in enumerate(columns):
            self.table[row] += np.bincount(row_columns, minlength=self.width).astype(np.uint32)

    def estimate(self, keys: np.ndarray) -> np.ndarray:
        """Return each key's count, possibly over-estimated by collisions."""
        columns = self._columns(keys.astype(np.uint64, copy=False))
        rows = np.arange(len(columns))[:, None]
        estimates: np.ndarray = self.table[rows, columns].min(axis=0)
        return estimates


class MinHashIndex:
    """Store pages and sketch frequencies in one pass; yield LSH-found pairs checked exactly."""

    def __init__(
        self,
        folder: Path,
        *,
        max_frequency: int,
        min_shared: int,
        site_template: SiteTemplateRule,
        threshold: float,
        num_perm: int,
        sketch_width: int,
    ) -> None:
        self.max_frequency = max_frequency
        self.min_shared = min_shared
        self.site_template = site_template
        self.threshold = threshold
        self.num_perm = num_perm
        self.store = PageStore(folder / "pages.bin", keep_sentences=True)
        self.sketch = CountMinSketch(sketch_width)
        self.site_sketch = CountMinSketch(sketch_width, seed=1)
        self.stats = IndexStats()
        self._page_sites = array("I")
        self._site_pages: np.ndarray = np.zeros(0, dtype=np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_sites: list[np.ndarray] = []
        self._pending_size = 0
        self.page_counts_: np.ndarray | None = None

    def add(self, page: PageSentences, site: int) -> int:
        """Store a page, count its sentences (``site``: its site's number) and return its id."""
        page_id = self.store.append(page)
        self._page_sites.append(site)
        self._pending.append(page.sentence_hashes)
        self._pending_sites.append(site_keys(page.sentence_hashes, site))
        self._pending_size += len(page.sentence_hashes)
        if self._pending_size >= _SKETCH_BATCH:
            self._flush()
        return page_id

    def _flush(self) -> None:
        if self._pending:
            keys = np.concatenate(self._pending)
            self.sketch.add(keys)
            self.site_sketch.add(np.concatenate(self._pending_sites))
            self.stats.entries += len(keys)
        self._pending, self._pending_sites, self._pending_size = [], [], 0

    def _selected(self, page_id: int) -> np.ndarray:
        sentences = self.store.read(page_id).sentence_hashes
        if not len(sentences):
            return sentences
        site = self._page_sites[page_id]
        on_site = self.site_sketch.estimate(site_keys(sentences, site))
        template = self.site_template.is_template(on_site, self._site_pages[site])
        keep = (self.sketch.estimate(sentences) <= self.max_frequency) & ~template
        selected: np.ndarray = sentences[keep]
        return selected

    def pairs(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Run the LSH pass; yield ``(page a ids, page b ids, shared counts)`` once at the end."""
        self._flush()
        self._site_pages = np.bincount(np.frombuffer(self._page_sites, dtype=np.uint32))
        n_pages = len(self.store)
        counts = np.zeros(n_pages, dtype=np.int64)
        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm)
        permutations = MinHash(num_perm=self.num_perm, scheme="affine64").permutations
        firsts: list[int] = []
        seconds: list[int] = []
        shared_counts: list[int] = []
        for page_id in range(n_pages):
            selected = self._selected(page_id)
            counts[page_id] = len(selected)
            if len(selected) < self.min_shared:
                continue
            minhash = MinHash(
                num_perm=self.num_perm,
                scheme="affine64",
                hashfunc=int,
                permutations=permutations,
            )
            minhash.update_batch(selected.tolist())
            for candidate in lsh.query(minhash):
                self.stats.pair_entries += 1
                shared = len(np.intersect1d(selected, self._selected(candidate), True))
                if shared >= self.min_shared:
                    firsts.append(candidate)
                    seconds.append(page_id)
                    shared_counts.append(shared)
            lsh.insert(page_id, minhash, check_duplication=False)
        self.page_counts_ = counts
        yield (
            np.asarray(firsts, dtype=np.int64),
            np.asarray(seconds, dtype=np.int64),
            np.asarray(shared_counts, dtype=np.int64),
        )
