"""Sparse tf-idf vectors over a collection of keyword-count dictionaries."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from websim_crawler.core.clustering.fcm import l2_normalize_rows

logger = logging.getLogger(__name__)


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
    n_documents = len(keyword_counts)
    document_frequency: dict[str, int] = {}
    for counts in keyword_counts:
        for term, count in counts.items():
            if count > 0:
                document_frequency[term] = document_frequency.get(term, 0) + 1
    lowest = min(min_df, max(n_documents, 1))
    highest = max(math.floor(max_df * n_documents), lowest)
    kept = [term for term, df in document_frequency.items() if lowest <= df <= highest]
    if max_features is not None and len(kept) > max_features:
        kept.sort(key=lambda term: (-document_frequency[term], term))
        kept = kept[:max_features]
    kept.sort()
    column_of = {term: column for column, term in enumerate(kept)}
    logger.debug(
        "tf-idf: %d documents, %d of %d terms kept (df in [%d, %d])",
        n_documents,
        len(kept),
        len(document_frequency),
        lowest,
        highest,
    )

    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    for counts in keyword_counts:
        for term, count in counts.items():
            column = column_of.get(term)
            if column is not None and count > 0:
                indices.append(column)
                values.append(1.0 + math.log(count) if sublinear_tf else float(count))
        indptr.append(len(indices))
    matrix = sp.csr_matrix(
        (
            np.asarray(values, dtype=np.float32),
            np.asarray(indices, dtype=np.int32),
            np.asarray(indptr, dtype=np.int64),
        ),
        shape=(n_documents, len(kept)),
    )
    frequencies = np.asarray([document_frequency[term] for term in kept], dtype=np.float64)
    idf = np.log((n_documents + 1.0) / frequencies).astype(np.float32)
    matrix = sp.csr_matrix(matrix @ sp.diags(idf))
    matrix.sum_duplicates()
    return TfidfMatrix(l2_normalize_rows(matrix), tuple(kept), idf)
