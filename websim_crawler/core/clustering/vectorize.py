"""Sparse tf-idf vectors over a collection of keyword-count dictionaries."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from websim_crawler.core.clustering.fcm import l2_normalize_rows

logger = logging.getLogger(__name__)

# Counts turned into tf-idf weights at a time (whole rows): bounds the temporary arrays.
TFIDF_CHUNK_COUNTS = 1 << 22


@dataclass(frozen=True)
class TfidfMatrix:
    """Documents x terms tf-idf rows (CSR, float32, L2-normalised) and the term of each column."""

    matrix: sp.csr_matrix
    terms: tuple[str, ...]
    idf: NDArray[np.float32]


def tfidf_vectors(
    keyword_counts: Sequence[Mapping[str, float]],
    *,
    min_df: int = 2,
    max_df: float = 0.95,
    max_features: int | None = None,
    sublinear_tf: bool = True,
) -> TfidfMatrix:
    """Build tf-idf rows from keyword counts, keeping terms found in ``min_df``..``max_df`` docs.

    ``tf = 1 + log(count)`` when ``sublinear_tf``, else the count; ``idf = ln((N + 1) / df)``
    (Sparck Jones 1972, with N + 1 so a term in every document keeps a small positive weight and
    one document still gets a vector). scikit-learn's ``+ 1`` is left out on purpose: it flattens
    the idf contrast (a term in 2 of 877 pages weighs 3.8 times one in 400 pages with it, 7.7
    times without) and measured lower NMI (benchmarks/clustering.py). ``min_df`` is capped at the
    number of documents and ``max_df`` (a fraction of the documents) never removes a term found in
    ``min_df`` documents or fewer, so one or two documents still get vectors. ``max_features``
    keeps the most frequent terms by document frequency.
    """
    vocabulary: dict[str, int] = {}
    indptr = [0]
    term_of_count: list[int] = []
    positive_counts: list[float] = []
    for counts in keyword_counts:
        for term, count in counts.items():
            if count > 0:
                term_of_count.append(vocabulary.setdefault(term, len(vocabulary)))
                positive_counts.append(float(count))
        indptr.append(len(term_of_count))
    return tfidf_rows(
        np.asarray(indptr, dtype=np.int64),
        np.asarray(term_of_count, dtype=np.int32),
        np.asarray(positive_counts, dtype=np.float64),
        list(vocabulary),
        min_df=min_df,
        max_df=max_df,
        max_features=max_features,
        sublinear_tf=sublinear_tf,
    )


def tfidf_rows(
    indptr: NDArray[np.int64],
    term_of_count: NDArray[np.int32],
    counts: NDArray[np.float64],
    vocabulary: Sequence[str],
    *,
    min_df: int = 2,
    max_df: float = 0.95,
    max_features: int | None = None,
    sublinear_tf: bool = True,
) -> TfidfMatrix:
    """Build the tf-idf rows of ``tfidf_vectors`` from counts held as CSR parts: row ``r``'s
    counts are ``counts[indptr[r]:indptr[r + 1]]`` of the terms ``vocabulary[term_of_count]``
    (each term once per row, every count positive).

    Array-wise, a bounded number of counts at a time; the terms are numbered in sorted order and
    each row's columns ascend (the canonical CSR layout the L2 norms are summed in).
    """
    n_documents = len(indptr) - 1
    frequency = np.bincount(term_of_count, minlength=len(vocabulary))
    lowest = min(min_df, max(n_documents, 1))
    highest = max(math.floor(max_df * n_documents), lowest)
    in_range = (frequency >= lowest) & (frequency <= highest)
    kept = [vocabulary[term_id] for term_id in np.flatnonzero(in_range).tolist()]
    if max_features is not None and len(kept) > max_features:
        frequency_of = dict(zip(vocabulary, frequency.tolist(), strict=True))
        kept.sort(key=lambda term: (-frequency_of[term], term))
        kept = kept[:max_features]
    kept.sort()
    logger.debug(
        "tf-idf: %d documents, %d of %d terms kept (df in [%d, %d])",
        n_documents,
        len(kept),
        len(vocabulary),
        lowest,
        highest,
    )
    id_of = {term: term_id for term_id, term in enumerate(vocabulary)}
    kept_ids = np.asarray([id_of[term] for term in kept], dtype=np.int64)
    column_of_term = np.full(len(vocabulary), -1, dtype=np.int32)
    column_of_term[kept_ids] = np.arange(len(kept), dtype=np.int32)
    idf = np.log((n_documents + 1.0) / frequency[kept_ids].astype(np.float64)).astype(np.float32)
    chunks = list(_row_chunks(indptr))
    kept_counts = sum(
        int(np.count_nonzero(column_of_term[term_of_count[indptr[first] : indptr[last]]] >= 0))
        for first, last in chunks
    )
    data = np.empty(kept_counts, dtype=np.float32)
    indices = np.empty(kept_counts, dtype=np.int32)
    row_ends = np.zeros(n_documents + 1, dtype=np.int64)
    filled = 0
    for first_row, end_row in chunks:
        start, end = indptr[first_row], indptr[end_row]
        columns = column_of_term[term_of_count[start:end]]
        rows = np.repeat(np.arange(end_row - first_row), np.diff(indptr[first_row : end_row + 1]))
        keep = columns >= 0
        columns, rows, chunk_counts = columns[keep], rows[keep], counts[start:end][keep]
        order = np.argsort(rows * len(kept) + columns)  # by row, then column
        columns, rows = columns[order], rows[order]
        data[filled : filled + len(columns)] = (
            _term_frequency(chunk_counts[order], sublinear_tf) * idf[columns]
        )
        indices[filled : filled + len(columns)] = columns
        filled += len(columns)
        row_ends[first_row + 1 : end_row + 1] = np.bincount(rows, minlength=end_row - first_row)
    matrix = sp.csr_matrix(
        (data, indices, np.cumsum(row_ends)), shape=(n_documents, len(kept)), copy=False
    )
    return TfidfMatrix(l2_normalize_rows(matrix, copy=False), tuple(kept), idf)


def _row_chunks(indptr: NDArray[np.int64]) -> Iterator[tuple[int, int]]:
    """Yield (first row, end row) ranges of whole rows, about ``TFIDF_CHUNK_COUNTS`` counts each
    (at least one row)."""
    n_rows = len(indptr) - 1
    first_row = 0
    while first_row < n_rows:
        end_row = int(np.searchsorted(indptr, indptr[first_row] + TFIDF_CHUNK_COUNTS, "right")) - 1
        end_row = min(max(end_row, first_row + 1), n_rows)
        yield first_row, end_row
        first_row = end_row


def _term_frequency(counts: NDArray[np.float64], sublinear_tf: bool) -> NDArray[np.float32]:
    """Return ``1 + ln(count)`` (or the count) in float32, ``math.log`` once per distinct count."""
    if not sublinear_tf:
        return counts.astype(np.float32)
    distinct, position = np.unique(counts, return_inverse=True)
    logs = np.asarray([1.0 + math.log(count) for count in distinct.tolist()], dtype=np.float64)
    weights: NDArray[np.float32] = logs[position].astype(np.float32)
    return weights
