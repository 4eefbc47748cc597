"""Fuzzy c-means on a Dask cluster: row chunks and their memberships stay on the workers.

Each iteration is one map and one reduce. Every worker task takes its chunk of rows, the
previous memberships of those rows and the current centres, and returns the new memberships
(kept on the worker), the chunk's share of the objective, its largest membership change and
its centre sums ``sum_i u_ij^m x_i`` and ``sum_i u_ij^m``; the client adds the sums up into the
next centres. The updates are those of :class:`~websim_crawler.core.clustering.fcm.FuzzyCMeans`
(Bezdek 1981; spherical for cosine, Kummamuru et al. 2003), so both engines give the same
clusters up to floating-point summation order. The k-means++ seeding runs on the client, on the
same rows, with the same random generator.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from websim_crawler._imports import local_dask_cluster, require
from websim_crawler.core.clustering.fcm import (
    FuzzyCMeans,
    Matrix,
    _Run,
    l2_normalize_rows,
    memberships_from_distances,
    objective,
)
from websim_crawler.core.clustering.params import DEFAULT_CHUNK_ROWS
from websim_crawler.errors import ConfigError

logger = logging.getLogger(__name__)

_INLINE_BYTES = 1 << 20  # centres up to this size travel inside the tasks


class DaskFuzzyCMeans(FuzzyCMeans):
    """``FuzzyCMeans`` whose iterations run on Dask workers over chunks of ``chunk_rows`` rows.

    ``scheduler`` is the address of a running ``dask.distributed`` scheduler
    (``tcp://host:8786``); ``None`` uses the current default client, or a local in-process
    cluster for the duration of ``fit``.
    """

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        scheduler: str | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        m: float = 1.1,
        metric: str = "cosine",
        init: str | NDArray[Any] = "k-means++",
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-4,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            n_clusters,
            m=m,
            metric=metric,
            init=init,
            n_init=n_init,
            max_iter=max_iter,
            tol=tol,
            random_state=random_state,
        )
        self.scheduler = scheduler
        self.chunk_rows = chunk_rows

    def fit(self, X: Matrix, y: object = None) -> DaskFuzzyCMeans:
        """Cluster the rows of ``X``; the iterations run on the Dask cluster."""
        if not isinstance(self.chunk_rows, int) or self.chunk_rows < 1:
            raise ConfigError(f"chunk_rows must be a positive integer, got {self.chunk_rows!r}")
        with _client(self.scheduler) as client:
            self._cluster = _ScatteredRows(client, self.chunk_rows)
            try:
                super().fit(X)
            finally:
                del self._cluster
        return self

    def _run(self, data: Matrix, row_norms: NDArray[Any], centers: NDArray[Any]) -> _Run:
        """Run the fuzzy c-means iterations from ``centers`` on the scattered row chunks."""
        rows = self._cluster
        chunks = rows.scatter(data, row_norms)
        client = rows.client
        kernel = FuzzyCMeans(self.n_clusters, m=self.m, metric=self.metric)
        shared = rows.share(centers)
        states = [
            client.submit(_first_state, chunk, shared, kernel, pure=False) for chunk in chunks
        ]
        reports = rows.reports(states)
        history: list[float] = []
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):  # noqa: B007 (n_iter is read after the loop)
            centers = self._centers_from(reports)
            shared = rows.share(centers)
            states = [
                client.submit(_next_state, chunk, state, shared, kernel, pure=False)
                for chunk, state in zip(chunks, states, strict=True)
            ]
            reports = rows.reports(states)
            history.append(math.fsum(report.objective for report in reports))
            if max(report.change for report in reports) < self.tol:
                break
        membership = np.vstack(
            client.gather([client.submit(_membership, s, pure=False) for s in states])
        )
        logger.debug("dask fcm: %d iterations over %d chunks", n_iter, len(chunks))
        return _Run(centers, membership, n_iter, history[-1], history)

    def _centers_from(self, reports: list[_ChunkReport]) -> Any:
        """Add the chunks' centre sums up into the next centres (as ``_update_centers``)."""
        weighted = np.sum([report.weighted_rows for report in reports], axis=0)
        totals = np.sum([report.weights for report in reports], axis=0)
        dtype = self._cluster.dtype
        if self.metric == "cosine":
            return l2_normalize_rows(weighted.astype(dtype))
        return (weighted / totals[:, None]).astype(dtype)


@dataclass
class _ChunkReport:
    """What a chunk reports to the client after an iteration (small: clusters x features)."""

    objective: float
    change: float
    weighted_rows: NDArray[np.float64]  # clusters x features: sum_i u_ij^m x_i
    weights: NDArray[np.float64]  # clusters: sum_i u_ij^m


@dataclass
class _ChunkState:
    """What a worker keeps for its chunk between iterations: memberships and the report."""

    membership: NDArray[np.float64]
    report: _ChunkReport


class _ScatteredRows:
    """The row chunks of one data matrix, scattered once to the cluster's workers."""

    def __init__(self, client: Any, chunk_rows: int) -> None:
        self.client = client
        self.chunk_rows = chunk_rows
        self.dtype: Any = np.float64
        self._source: Matrix = None
        self._chunks: list[Any] = []

    def scatter(self, data: Matrix, row_norms: NDArray[Any]) -> list[Any]:
        """Return futures of ``(rows, squared row norms)`` chunks (scattered on first use)."""
        if data is not self._source:
            blocks = [
                (data[start : start + self.chunk_rows], row_norms[start : start + self.chunk_rows])
                for start in range(0, data.shape[0], self.chunk_rows)
            ]
            self._chunks = self.client.scatter(blocks)
            self._source = data
            self.dtype = data.dtype
        return self._chunks

    def share(self, centers: NDArray[Any]) -> Any:
        """Return the centres as a task argument: inline when small, else broadcast once."""
        if centers.nbytes <= _INLINE_BYTES:
            return centers
        return self.client.scatter(centers, broadcast=True)

    def reports(self, states: list[Any]) -> list[_ChunkReport]:
        """Gather the chunks' reports (the memberships stay on the workers)."""
        futures = [self.client.submit(_report, state, pure=False) for state in states]
        reports: list[_ChunkReport] = self.client.gather(futures)
        return reports


def _first_state(chunk: tuple[Matrix, NDArray[Any]], centers: Any, kernel: FuzzyCMeans) -> Any:
    rows, row_norms = chunk
    membership = memberships_from_distances(
        kernel._squared_distances(rows, row_norms, centers), kernel.m
    )
    return _state(rows, membership, math.nan, math.inf, kernel.m)


def _next_state(
    chunk: tuple[Matrix, NDArray[Any]], previous: _ChunkState, centers: Any, kernel: FuzzyCMeans
) -> _ChunkState:
    rows, row_norms = chunk
    distances = kernel._squared_distances(rows, row_norms, centers)
    membership = memberships_from_distances(distances, kernel.m)
    change = float(np.abs(membership - previous.membership).max(initial=0.0))
    return _state(rows, membership, objective(membership, distances, kernel.m), change, kernel.m)


def _state(
    rows: Matrix, membership: NDArray[np.float64], value: float, change: float, m: float
) -> _ChunkState:
    weights = membership**m
    weighted_rows = np.asarray((rows.T @ weights.astype(rows.dtype, copy=False)).T, np.float64)
    report = _ChunkReport(value, change, weighted_rows, weights.sum(axis=0))
    return _ChunkState(membership, report)


def _report(state: _ChunkState) -> _ChunkReport:
    return state.report


def _membership(state: _ChunkState) -> NDArray[np.float64]:
    return state.membership


@contextlib.contextmanager
def _client(scheduler: str | None) -> Iterator[Any]:
    """Connect to ``scheduler``, or use the default client, or run a local in-process cluster."""
    distributed = require("distributed")
    if scheduler:
        with distributed.Client(scheduler, set_as_default=False) as client:
            yield client
        return
    try:
        current = distributed.default_client()
    except ValueError:  # no default client: run a local one for this fit
        current = None
    if current is not None:
        yield current
        return
    with (
        local_dask_cluster(processes=False) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client
