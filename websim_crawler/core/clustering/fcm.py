"""Fuzzy c-means (Bezdek 1981) on sparse or dense rows, with scikit-learn's estimator conventions.

Objective ``J_m = sum_i sum_j u_ij^m d_ij^2``, minimised by the standard alternating updates:
centres are the ``u^m``-weighted means of the rows, memberships are
``u_ij = 1 / sum_l (d_ij / d_il)^(2 / (m - 1))``. With ``metric="cosine"`` the rows are L2
normalised, ``d^2 = 1 - cos(x, c)`` and the centres are projected back onto the unit sphere
(spherical fuzzy c-means, Kummamuru, Dhawale & Krishnapuram 2003). Distances come from sparse
products ``||x||^2 - 2 x.c + ||c||^2``, so a sparse input is never densified.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from websim_crawler.core.clustering.params import INIT_METHODS, METRICS
from websim_crawler.errors import ConfigError

logger = logging.getLogger(__name__)


# Squared distances are floored here before the membership update (a row sitting on a centre).
_MIN_SQUARED_DISTANCE = 1e-12

Matrix = Any  # a scipy.sparse matrix/array or a 2-D numpy array
_TIE_TOLERANCE = 1e-9  # relative: objectives closer than this are one objective


class FuzzyCMeans:
    """Fuzzy c-means clustering; ``fit`` then read ``membership_`` and ``cluster_centers_``.

    ``init`` is ``"k-means++"`` (D^2 seeding, Arthur & Vassilvitskii 2007), ``"random"`` (distinct
    random rows) or an array of initial centres. ``tol`` bounds the largest change of a membership
    between two iterations. The best of ``n_init`` runs (lowest objective; the earliest of equal
    ones) is kept; ``restart_xie_beni_`` holds every run's Xie-Beni index, in run order.
    """

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        m: float = 1.1,
        metric: str = "cosine",
        init: str | NDArray[Any] = "k-means++",
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-4,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.m = m
        self.metric = metric
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # -- fitting --------------------------------------------------------------------------------

    def fit(self, X: Matrix, y: object = None) -> FuzzyCMeans:
        """Cluster the rows of ``X`` (sparse or dense, samples x features)."""
        self._check_params()
        data = self._prepare(X)
        n_samples = data.shape[0]
        if self.n_clusters > n_samples:
            raise ConfigError(
                f"n_clusters={self.n_clusters} is larger than the number of samples ({n_samples})"
            )
        rng = np.random.default_rng(self.random_state)
        row_norms = _squared_row_norms(data)
        best: _Run | None = None
        restart_xie_beni: list[float] = []
        n_runs = 1 if isinstance(self.init, np.ndarray) else self.n_init
        for run_index in range(n_runs):
            centers = self._initial_centers(data, row_norms, rng)
            run = self._run(data, row_norms, centers)
            restart_xie_beni.append(xie_beni(run.objective, run.centers, n_samples, self.metric))
            logger.debug(
                "fcm run %d: objective %.6g after %d iterations",
                run_index,
                run.objective,
                run.n_iter,
            )
            # A later run wins only by more than rounding: several starts often reach one
            # partition, and multithreaded BLAS sums in varying order (the labels would follow).
            if best is None or run.objective < best.objective * (1.0 - _TIE_TOLERANCE):
                best = run
        assert best is not None
        self.cluster_centers_ = best.centers
        self.membership_ = best.membership
        self.n_iter_ = best.n_iter
        self.objective_ = best.objective
        self.objective_history_ = best.history
        self.n_features_in_ = data.shape[1]
        self.partition_coefficient_ = partition_coefficient(best.membership)
        self.partition_entropy_ = partition_entropy(best.membership)
        self.xie_beni_ = xie_beni(best.objective, best.centers, n_samples, self.metric)
        self.restart_xie_beni_ = np.array(restart_xie_beni)
        return self

    def fit_predict(self, X: Matrix, y: object = None) -> NDArray[np.intp]:
        """Fit and return the hard cluster label of each row."""
        return np.asarray(self.fit(X).membership_.argmax(axis=1))

    def predict_proba(self, X: Matrix) -> NDArray[np.float64]:
        """Return the membership of each row of ``X`` in each fitted cluster (rows sum to 1)."""
        centers = self._fitted_centers()
        data = self._prepare(X)
        if data.shape[1] != centers.shape[1]:
            raise ConfigError(
                f"X has {data.shape[1]} features, the model was fitted on {centers.shape[1]}"
            )
        distances = self._squared_distances(data, _squared_row_norms(data), centers)
        return memberships_from_distances(distances, self.m)

    def predict(self, X: Matrix) -> NDArray[np.intp]:
        """Return the cluster of largest membership for each row of ``X``."""
        return np.asarray(self.predict_proba(X).argmax(axis=1))

    # -- internals ------------------------------------------------------------------------------

    def _check_params(self) -> None:
        if not isinstance(self.n_clusters, (int, np.integer)) or self.n_clusters < 1:
            raise ConfigError(f"n_clusters must be a positive integer, got {self.n_clusters!r}")
        if not (isinstance(self.m, (int, float)) and self.m > 1.0 and math.isfinite(self.m)):
            raise ConfigError(f"m (fuzziness) must be a number > 1, got {self.m!r}")
        if self.metric not in METRICS:
            raise ConfigError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if not isinstance(self.init, np.ndarray) and self.init not in INIT_METHODS:
            raise ConfigError(f"init must be one of {INIT_METHODS} or an array of centres")
        if not isinstance(self.n_init, int) or self.n_init < 1:
            raise ConfigError(f"n_init must be a positive integer, got {self.n_init!r}")
        if not isinstance(self.max_iter, int) or self.max_iter < 1:
            raise ConfigError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not (isinstance(self.tol, (int, float)) and self.tol >= 0):
            raise ConfigError(f"tol must be a number >= 0, got {self.tol!r}")

    def _prepare(self, X: Matrix) -> Matrix:
        """Return float rows (CSR when sparse), L2-normalised for the cosine metric."""
        if sp.issparse(X):
            data = sp.csr_matrix(X)
            if data.dtype not in (np.float32, np.float64):
                data = data.astype(np.float64)
        else:
            data = np.asarray(X)
            if data.dtype not in (np.float32, np.float64):
                data = data.astype(np.float64)
        if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] == 0:
            raise ConfigError(f"X must be a non-empty 2-D matrix, got shape {data.shape}")
        values = data.data if sp.issparse(data) else data
        if not np.all(np.isfinite(values)):
            raise ConfigError("X contains NaN or infinite values")
        if self.metric == "cosine":
            data = l2_normalize_rows(data)
        return data

    def _fitted_centers(self) -> NDArray[Any]:
        centers = getattr(self, "cluster_centers_", None)
        if centers is None:
            raise ConfigError("this FuzzyCMeans is not fitted yet: call fit first")
        return np.asarray(centers)

    def _initial_centers(
        self, data: Matrix, row_norms: NDArray[Any], rng: np.random.Generator
    ) -> NDArray[Any]:
        if isinstance(self.init, np.ndarray):
            centers = np.array(self.init, dtype=data.dtype)
            if centers.shape != (self.n_clusters, data.shape[1]):
                raise ConfigError(
                    f"init centres must have shape {(self.n_clusters, data.shape[1])}, "
                    f"got {centers.shape}"
                )
        elif self.init == "random":
            rows = rng.choice(data.shape[0], size=self.n_clusters, replace=False)
            centers = _dense_rows(data, rows)
        else:
            centers = self._kmeans_plus_plus(data, row_norms, rng)
        if self.metric == "cosine":
            centers = l2_normalize_rows(centers)
        return centers

    def _kmeans_plus_plus(
        self, data: Matrix, row_norms: NDArray[Any], rng: np.random.Generator
    ) -> NDArray[Any]:
        """Greedy D^2 seeding (Arthur & Vassilvitskii 2007): best of 2 + log k candidates a step."""
        n_samples = data.shape[0]
        n_trials = 2 + int(math.log(self.n_clusters))
        chosen = [int(rng.integers(n_samples))]
        closest = self._squared_distances(data, row_norms, _dense_rows(data, chosen))[:, 0]
        potential = float(closest.sum())
        for _ in range(1, self.n_clusters):
            if potential <= 0.0:  # every row sits on a chosen centre: pick unused rows
                unused = np.setdiff1d(np.arange(n_samples), chosen)
                chosen.append(int(rng.choice(unused)))
                continue
            targets = rng.random(n_trials) * potential
            candidates = np.searchsorted(np.cumsum(closest), targets)
            candidates = np.minimum(candidates, n_samples - 1)
            distances = self._squared_distances(data, row_norms, _dense_rows(data, candidates))
            candidate_closest = np.minimum(closest[:, None], distances)
            potentials = candidate_closest.sum(axis=0)
            best = int(potentials.argmin())
            chosen.append(int(candidates[best]))
            closest = candidate_closest[:, best]
            potential = float(potentials[best])
        return _dense_rows(data, chosen)

    def _squared_distances(
        self, data: Matrix, row_norms: NDArray[Any], centers: NDArray[Any]
    ) -> NDArray[np.float64]:
        """Return the (samples x clusters) squared distances without densifying ``data``."""
        products = np.asarray(data @ centers.T, dtype=np.float64)
        if self.metric == "cosine":
            distances = np.subtract(1.0, products, out=products)  # in place: rows x clusters
        else:
            center_norms = np.einsum("ij,ij->i", centers, centers, dtype=np.float64)
            distances = row_norms[:, None] - 2.0 * products + center_norms[None, :]
        return np.maximum(distances, 0.0, out=distances)

    def _update_centers(self, data: Matrix, weights: NDArray[np.float64]) -> NDArray[Any]:
        """Return the ``u^m``-weighted means of the rows (projected on the sphere for cosine)."""
        cast = weights.astype(data.dtype, copy=False)
        sums = np.asarray((data.T @ cast).T)
        if self.metric == "cosine":
            return l2_normalize_rows(sums)
        totals = weights.sum(axis=0)
        return (sums / totals[:, None]).astype(data.dtype, copy=False)

    def _run(self, data: Matrix, row_norms: NDArray[Any], centers: NDArray[Any]) -> _Run:
        membership = memberships_from_distances(
            self._squared_distances(data, row_norms, centers), self.m
        )
        history: list[float] = []
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):  # noqa: B007 (n_iter is read after the loop)
            centers = self._update_centers(data, membership**self.m)
            distances = self._squared_distances(data, row_norms, centers)
            new_membership = memberships_from_distances(distances, self.m)
            history.append(objective(new_membership, distances, self.m))
            change = float(np.abs(new_membership - membership).max())
            membership = new_membership
            if change < self.tol:
                break
        return _Run(centers, membership, n_iter, history[-1], history)


class _Run:
    """The outcome of one fuzzy c-means run from one initialisation."""

    def __init__(
        self,
        centers: NDArray[Any],
        membership: NDArray[np.float64],
        n_iter: int,
        objective: float,
        history: list[float],
    ) -> None:
        self.centers = centers
        self.membership = membership
        self.n_iter = n_iter
        self.objective = objective
        self.history = history


def memberships_from_distances(
    squared_distances: NDArray[np.float64], m: float
) -> NDArray[np.float64]:
    """Return ``u_ij = 1 / sum_l (d_ij^2 / d_il^2)^(1/(m-1))``, computed in log space."""
    exponent = -1.0 / (m - 1.0)
    # one rows x clusters array, updated in place (a million rows: 160 MB a copy at k = 20)
    weights: NDArray[np.float64] = np.maximum(squared_distances, _MIN_SQUARED_DISTANCE)
    np.log(weights, out=weights)
    weights *= exponent
    weights -= weights.max(axis=1, keepdims=True)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights


def objective(
    membership: NDArray[np.float64], squared_distances: NDArray[np.float64], m: float
) -> float:
    """Return the fuzzy c-means objective ``J_m = sum u_ij^m d_ij^2``."""
    return float(np.sum(membership**m * squared_distances))


def partition_coefficient(membership: NDArray[np.float64]) -> float:
    """Return Bezdek's partition coefficient ``sum u^2 / N`` (1 = crisp, 1/c = uniform)."""
    return float(np.sum(membership**2) / membership.shape[0])


def partition_entropy(membership: NDArray[np.float64]) -> float:
    """Return Bezdek's partition entropy ``-sum u log u / N`` (0 = crisp, log c = uniform)."""
    positive = np.where(membership > 0, membership, 1.0)
    return float(-np.sum(membership * np.log(positive)) / membership.shape[0])


def xie_beni(objective_value: float, centers: NDArray[Any], n_samples: int, metric: str) -> float:
    """Return the Xie-Beni index ``J_m / (N min_{j!=l} d^2(c_j, c_l))`` (lower = better).

    Xie & Beni 1991, with ``u^m`` in the numerator as generalised by Pal & Bezdek 1995; infinite
    when two centres coincide, NaN for a single cluster.
    """
    if centers.shape[0] < 2:
        return math.nan
    centers64 = np.asarray(centers, dtype=np.float64)
    gram = centers64 @ centers64.T
    if metric == "cosine":
        separations = 1.0 - gram
    else:
        norms = np.diag(gram)
        separations = norms[:, None] - 2.0 * gram + norms[None, :]
    np.fill_diagonal(separations, np.inf)
    smallest = float(max(separations.min(), 0.0))
    if smallest <= 0.0:
        return math.inf
    return objective_value / (n_samples * smallest)


def l2_normalize_rows(data: Matrix, copy: bool = True) -> Matrix:
    """Scale each non-zero row to unit Euclidean length (sparse stays sparse; a CSR matrix is
    scaled in place with ``copy=False``)."""
    if sp.issparse(data):
        csr = sp.csr_matrix(data, copy=copy)
        norms = np.sqrt(np.asarray(csr.multiply(csr).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        csr.data *= np.repeat(scale, np.diff(csr.indptr)).astype(csr.dtype)
        return csr
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    return np.divide(data, norms, out=np.zeros_like(data), where=norms > 0)


def _squared_row_norms(data: Matrix) -> NDArray[np.float64]:
    if sp.issparse(data):
        return np.asarray(data.multiply(data).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", data, data, dtype=np.float64)


def _dense_rows(data: Matrix, rows: Any) -> NDArray[Any]:
    selected = data[np.asarray(rows)]
    return np.asarray(selected.toarray() if sp.issparse(selected) else selected)
