"""The exact sentence -> pages index, built in one streaming pass with bounded memory.

Each page adds one ``(sentence hash, page id)`` entry per distinct long sentence to a buffer; a
full buffer is split by hash into ``partitions`` files on disk (a hash partition holds every
entry of its sentences, so it can be finished alone). Finishing a partition sorts it by hash: a
run of equal hashes is one sentence and its length is the sentence's collection frequency.
A sentence is also set aside on the pages of a site where it is that site's template: on at
least ``site_template_min_pages`` of the site's pages and at least ``site_template_share`` of them
(the run sorted by site, a site's run length against the site's page count). The other
sentences on at most F pages count towards their pages' sentence totals; those on 2..F pages
give every pair of their pages, spilled again by pair key, and counting equal keys per pair
partition gives the shared sentences of each pair. Memory holds one buffer, one partition and
12 bytes per page.
"""

from __future__ import annotations

import logging
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from websim_crawler.core.neardup.pages import PageSentences

logger = logging.getLogger(__name__)

ENTRY_DTYPE = np.dtype([("hash", "<u8"), ("page", "<u4")])
_RECORD_HEADER = struct.Struct("<III")
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing spreads keys over partitions


@dataclass
class IndexStats:
    """Counts the index gathers while it is finished."""

    entries: int = 0
    distinct_sentences: int = 0
    frequent_sentences: int = 0
    site_template_sentences: int = 0
    shared_sentences: int = 0
    pair_entries: int = 0
    spills: int = 0


@dataclass(frozen=True)
class StoredPage:
    """A page read back from the store."""

    url: str
    link_hashes: np.ndarray
    sentence_hashes: np.ndarray


class PageStore:
    """Append-only binary file of pages (URL, link and sentence hashes) with an offset table."""

    def __init__(self, path: Path, keep_sentences: bool) -> None:
        self.path = path
        self.keep_sentences = keep_sentences
        self._offsets = array("q")
        self._writer: BinaryIO | None = path.open("wb")
        self._reader: BinaryIO | None = None
        self._size = 0

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, page: PageSentences) -> int:
        """Store a page and return its id."""
        if self._writer is None:
            raise RuntimeError("the page store is closed for writing")
        url = page.url.encode("utf-8")
        sentences = page.sentence_hashes if self.keep_sentences else page.sentence_hashes[:0]
        header = _RECORD_HEADER.pack(len(url), len(page.link_hashes), len(sentences))
        record = b"".join(
            (
                header,
                url,
                page.link_hashes.astype("<u8").tobytes(),
                sentences.astype("<u8").tobytes(),
            )
        )
        self._offsets.append(self._size)
        self._writer.write(record)
        self._size += len(record)
        return len(self._offsets) - 1

    def read(self, page_id: int) -> StoredPage:
        """Read one page back."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._reader is None:
            self._reader = self.path.open("rb")
        self._reader.seek(self._offsets[page_id])
        url_length, n_links, n_sentences = _RECORD_HEADER.unpack(
            self._reader.read(_RECORD_HEADER.size)
        )
        url = self._reader.read(url_length).decode("utf-8")
        links = np.frombuffer(self._reader.read(8 * n_links), dtype="<u8")
        sentences = np.frombuffer(self._reader.read(8 * n_sentences), dtype="<u8")
        return StoredPage(url, links, sentences)

    def close(self) -> None:
        """Close the file handles."""
        for handle in (self._writer, self._reader):
            if handle is not None:
                handle.close()
        self._writer = self._reader = None


class _Spill:
    """Numbered partition files that arrays are appended to."""

    def __init__(self, folder: Path, prefix: str, partitions: int) -> None:
        self.paths = [folder / f"{prefix}-{number:04d}.bin" for number in range(partitions)]
        for path in self.paths:
            path.write_bytes(b"")

    def append(self, records: np.ndarray, partition_of: np.ndarray) -> None:
        order = np.argsort(partition_of, kind="stable")
        records, partition_of = records[order], partition_of[order]
        bounds = np.searchsorted(partition_of, np.arange(len(self.paths) + 1))
        for number, path in enumerate(self.paths):
            start, end = bounds[number], bounds[number + 1]
            if end > start:
                with path.open("ab") as handle:
                    records[start:end].tofile(handle)

    def load(self, number: int, dtype: np.dtype | type) -> np.ndarray:
        path = self.paths[number]
        data = np.fromfile(path, dtype=dtype)
        path.unlink()
        return data


def partition_of_keys(keys: np.ndarray, partitions: int) -> np.ndarray:
    """Spread 64-bit keys over partitions by their mixed high bits."""
    return ((keys * _MIX) >> np.uint64(40)) % np.uint64(partitions)


@dataclass(frozen=True)
class SiteTemplateRule:
    """A sentence on at least ``min_pages`` and ``share`` of its site's pages is site template."""

    share: float
    min_pages: int

    def is_template(self, on_site: Any, site_pages: Any) -> Any:
        """Tell (elementwise for arrays) whether a sentence on ``on_site`` of ``site_pages``
        pages of one site is that site's template."""
        return (on_site >= self.min_pages) & (on_site >= self.share * site_pages)

    def entries(
        self, hashes: np.ndarray, sites: np.ndarray, site_pages: np.ndarray
    ) -> tuple[np.ndarray, int]:
        """Mark the (hash, site) entries of site-template sentences; hashes must be sorted.

        Return the mask in the entries' order and the number of (sentence, site) runs marked.
        """
        if not len(hashes):
            return np.zeros(0, dtype=bool), 0
        order = np.lexsort((sites, hashes))
        sorted_hashes, sorted_sites = hashes[order], sites[order]
        new_run = np.r_[
            True,
            (sorted_hashes[1:] != sorted_hashes[:-1]) | (sorted_sites[1:] != sorted_sites[:-1]),
        ]
        starts = np.flatnonzero(new_run)
        sizes = np.diff(np.r_[starts, len(sorted_hashes)])
        run_template = self.is_template(sizes, site_pages[sorted_sites[starts]])
        mask = np.empty(len(hashes), dtype=bool)
        mask[order] = np.repeat(run_template, sizes)
        return mask, int(np.count_nonzero(run_template))


class ExactSentenceIndex:
    """Sentence -> pages index with disk spill; yields pairs with their shared sentence count."""

    def __init__(
        self,
        folder: Path,
        *,
        max_frequency: int,
        min_shared: int,
        partitions: int,
        buffer_entries: int,
        site_template: SiteTemplateRule,
    ) -> None:
        self.max_frequency = max_frequency
        self.min_shared = min_shared
        self.site_template = site_template
        self.partitions = partitions
        self.buffer_entries = buffer_entries
        self.store = PageStore(folder / "pages.bin", keep_sentences=False)
        self.stats = IndexStats()
        self._entries = _Spill(folder, "sentences", partitions)
        self._pair_spill = _Spill(folder, "pairs", partitions)
        self._hashes = array("Q")
        self._pages = array("I")
        self._page_sites = array("I")
        self.page_counts_: np.ndarray | None = None

    def add(self, page: PageSentences, site: int) -> int:
        """Add a page's sentences (``site``: the number of its site) and return its id."""
        page_id = self.store.append(page)
        self._page_sites.append(site)
        self._hashes.extend(page.sentence_hashes.tolist())
        self._pages.extend([page_id] * len(page.sentence_hashes))
        if len(self._hashes) >= self.buffer_entries:
            self._flush()
        return page_id

    def _flush(self) -> None:
        if not self._hashes:
            return
        records = np.empty(len(self._hashes), dtype=ENTRY_DTYPE)
        records["hash"] = np.frombuffer(self._hashes, dtype=np.uint64)
        records["page"] = np.frombuffer(self._pages, dtype=np.uint32)
        self._entries.append(records, partition_of_keys(records["hash"], self.partitions))
        self.stats.entries += len(records)
        self.stats.spills += 1
        self._hashes = array("Q")
        self._pages = array("I")

    def pairs(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Finish the index; yield ``(page a ids, page b ids, shared counts)`` array batches.

        ``page_counts_`` (each page's selected sentences) is complete before the first batch.
        """
        self._flush()
        counts = np.zeros(len(self.store), dtype=np.int64)
        sites = np.frombuffer(self._page_sites, dtype=np.uint32)
        site_pages = np.bincount(sites) if len(sites) else np.zeros(0, dtype=np.int64)
        pending: list[np.ndarray] = []
        for number in range(self.partitions):
            entries = self._entries.load(number, ENTRY_DTYPE)
            if len(entries):
                counts += self._finish_sentence_partition(
                    entries, (sites, site_pages), len(counts), pending
                )
            if sum(len(keys) for keys in pending) >= self.buffer_entries:
                self._spill_pairs(pending)
        self._spill_pairs(pending)
        self.page_counts_ = counts
        for number in range(self.partitions):
            keys = self._pair_spill.load(number, np.uint64)
            if not len(keys):
                continue
            unique, shared = np.unique(keys, return_counts=True)
            keep = shared >= self.min_shared
            unique, shared = unique[keep], shared[keep]
            yield (
                (unique >> np.uint64(32)).astype(np.int64),
                (unique & np.uint64(0xFFFFFFFF)).astype(np.int64),
                shared,
            )

    def _spill_pairs(self, pending: list[np.ndarray]) -> None:
        if pending:
            keys = np.concatenate(pending)
            self._pair_spill.append(keys, partition_of_keys(keys, self.partitions))
            pending.clear()

    def _finish_sentence_partition(
        self,
        entries: np.ndarray,
        sites: tuple[np.ndarray, np.ndarray],
        n_pages: int,
        pending: list[np.ndarray],
    ) -> np.ndarray:
        order = np.argsort(entries["hash"], kind="stable")
        hashes, pages = entries["hash"][order], entries["page"][order]
        starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
        sizes = np.diff(np.r_[starts, len(hashes)])
        self.stats.distinct_sentences += len(starts)
        self.stats.frequent_sentences += int(np.count_nonzero(sizes > self.max_frequency))
        selected = np.repeat(sizes, sizes) <= self.max_frequency
        page_sites, site_pages = sites
        template, n_template = self.site_template.entries(
            hashes[selected], page_sites[pages[selected]], site_pages
        )
        self.stats.site_template_sentences += n_template
        hashes, pages = hashes[selected][~template], pages[selected][~template]
        starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])[: len(hashes)]
        sizes = np.diff(np.r_[starts, len(hashes)])
        page_counts = np.bincount(pages, minlength=n_pages)
        shared_groups = sizes >= 2
        self.stats.shared_sentences += int(np.count_nonzero(shared_groups))
        for size in np.unique(sizes[shared_groups]).tolist():
            group_starts = starts[shared_groups & (sizes == size)]
            members = pages[group_starts[:, None] + np.arange(size)].astype(np.uint64)
            first, second = np.triu_indices(size, 1)
            left, right = members[:, first].ravel(), members[:, second].ravel()
            keys = (np.minimum(left, right) << np.uint64(32)) | np.maximum(left, right)
            self.stats.pair_entries += len(keys)
            pending.append(keys)
        return page_counts
