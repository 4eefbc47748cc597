"""Latent semantic analysis: a truncated SVD of the tf-idf rows (Deerwester et al. 1990)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from websim_crawler.core.clustering.fcm import l2_normalize_rows

logger = logging.getLogger(__name__)

# Below this many components the SVD is skipped: the rows are clustered as they are.
MIN_COMPONENTS = 2


def svds(matrix: Any, k: int, v0: NDArray[np.float64]) -> tuple[NDArray[Any], ...]:
    """Return SciPy's truncated SVD (``scipy.sparse.linalg.svds``), imported on first use.

    Importing ``scipy.sparse.linalg`` takes longer than most commands' whole work, and only the
    clustering needs it.
    """
    from scipy.sparse.linalg import svds as scipy_svds

    return tuple(scipy_svds(matrix, k=k, v0=v0))


def lsa_reduce(
    matrix: Any, n_components: int, random_state: int | None = None
) -> NDArray[np.float32] | None:
    """Return the rows projected on their top singular directions, L2-normalised (or None).

    ``None`` means the reduction does not apply: ``n_components`` is 0, or the matrix is too small
    to have ``n_components`` (at least 2) directions below its rank bound.
    """
    if n_components <= 0:
        return None
    components = min(n_components, min(matrix.shape) - 1)
    if components < MIN_COMPONENTS:
        logger.debug("lsa: %s matrix too small for an SVD, rows kept as they are", matrix.shape)
        return None
    data = sp.csr_matrix(matrix, dtype=np.float64) if sp.issparse(matrix) else np.asarray(matrix)
    start = np.random.default_rng(random_state).uniform(-1.0, 1.0, size=min(data.shape))
    left, singular_values, _right = svds(data, k=components, v0=start)
    reduced = (left * singular_values[None, :]).astype(np.float32)
    normalized: NDArray[np.float32] = l2_normalize_rows(reduced)
    return normalized
