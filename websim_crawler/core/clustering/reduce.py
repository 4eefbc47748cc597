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
# From this many rows on, the randomized SVD replaces ARPACK's: ``svds`` took 96 s on 100,000
# synthetic pages (6.5M nonzeros) on the loaded 2-core machine, and its restarts grow faster
# than the nonzeros; below, ``svds`` keeps the results of smaller collections as they were.
RANDOMIZED_MIN_ROWS = 50_000
# The randomized range finder's extra columns and power iterations (Halko et al. 2011, 4.3-4.5).
OVERSAMPLING = 10
POWER_ITERATIONS = 4


def svds(matrix: Any, k: int, v0: NDArray[np.float64]) -> tuple[NDArray[Any], ...]:
    """Return SciPy's truncated SVD (``scipy.sparse.linalg.svds``), imported on first use.

    Importing ``scipy.sparse.linalg`` takes longer than most commands' whole work, and only the
    clustering needs it.
    """
    from scipy.sparse.linalg import svds as scipy_svds

    return tuple(scipy_svds(matrix, k=k, v0=v0))


def randomized_svd(
    matrix: Any, k: int, random_state: int | None = None
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Return the top ``k`` left singular vectors and values of ``matrix`` (sparse or dense).

    Halko, Martinsson & Tropp 2011 (randomized range finder with power iterations, their
    Algorithms 4.4 and 5.1): a Gaussian sketch ``A @ G`` of ``k + OVERSAMPLING`` columns, made
    orthonormal by QR, then ``POWER_ITERATIONS`` rounds of ``A^T Q``, ``A Q`` each orthonormalised
    again; the SVD of the small ``Q^T A`` gives the singular triplets. Each step is one product
    with the sparse matrix, so the cost is linear in its nonzeros; float32 throughout (the
    tf-idf's own precision) halves the memory of the row blocks.
    """
    rng = np.random.default_rng(random_state)
    width = min(k + OVERSAMPLING, min(matrix.shape))
    gaussian = rng.standard_normal((matrix.shape[1], width)).astype(np.float32)
    basis = np.linalg.qr(np.asarray(matrix @ gaussian, dtype=np.float32))[0]
    for _ in range(POWER_ITERATIONS):
        columns = np.linalg.qr(np.asarray(matrix.T @ basis, dtype=np.float32))[0]
        basis = np.linalg.qr(np.asarray(matrix @ columns, dtype=np.float32))[0]
    projected = np.asarray(matrix.T @ basis, dtype=np.float32).T  # Q^T A, width x columns
    left_small, singular_values, _right = np.linalg.svd(projected, full_matrices=False)
    left: NDArray[np.float32] = basis @ left_small[:, :k]
    return left, singular_values[:k]


def lsa_reduce(
    matrix: Any, n_components: int, random_state: int | None = None
) -> NDArray[np.float32] | None:
    """Return the rows projected on their top singular directions, L2-normalised (or None).

    ``None`` means the reduction does not apply: ``n_components`` is 0, or the matrix is too small
    to have ``n_components`` (at least 2) directions below its rank bound. ARPACK's ``svds``
    below ``RANDOMIZED_MIN_ROWS`` rows, ``randomized_svd`` from there on.
    """
    if n_components <= 0:
        return None
    components = min(n_components, min(matrix.shape) - 1)
    if components < MIN_COMPONENTS:
        logger.debug("lsa: %s matrix too small for an SVD, rows kept as they are", matrix.shape)
        return None
    if matrix.shape[0] >= RANDOMIZED_MIN_ROWS:
        left, singular_values = randomized_svd(matrix, components, random_state)
        reduced: NDArray[np.float32] = l2_normalize_rows(left * singular_values[None, :])
        return reduced
    data = sp.csr_matrix(matrix, dtype=np.float64) if sp.issparse(matrix) else np.asarray(matrix)
    start = np.random.default_rng(random_state).uniform(-1.0, 1.0, size=min(data.shape))
    left, singular_values, _right = svds(data, k=components, v0=start)
    normalized: NDArray[np.float32] = l2_normalize_rows(
        (left * singular_values[None, :]).astype(np.float32)
    )
    return normalized
