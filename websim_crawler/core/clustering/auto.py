"""Choosing the number of clusters by a fuzzy validity index (Bezdek 1981; Xie & Beni 1991)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from websim_crawler.core.clustering.fcm import FuzzyCMeans, Matrix
from websim_crawler.core.clustering.params import VALIDITY_INDICES

logger = logging.getLogger(__name__)

# The direction in which each index gets better.
_HIGHER_IS_BETTER = {"xie_beni": False, "partition_coefficient": True, "partition_entropy": False}


@dataclass(frozen=True)
class CandidateScore:
    """The validity indices of one candidate number of clusters."""

    n_clusters: int
    partition_coefficient: float
    partition_entropy: float
    xie_beni: float
    objective: float

    def value(self, index: str) -> float:
        """Return the named index."""
        return float(getattr(self, index))


def candidate_range(n_distinct: int, max_clusters: int) -> list[int]:
    """Return the numbers of clusters to try: 2 .. min(max_clusters, sqrt(N)) (at least [2]).

    ``c_max = sqrt(N)`` is the usual bound for validity-index searches (Bezdek & Pal 1998).
    """
    if n_distinct < 2:
        return [1]
    upper = min(max_clusters, max(2, math.isqrt(n_distinct)), n_distinct)
    return list(range(2, upper + 1))


def choose_n_clusters(
    data: Matrix,
    candidates: Sequence[int],
    make_estimator: Callable[[int], FuzzyCMeans],
    index: str = "xie_beni",
    on_candidate: Callable[[CandidateScore], None] | None = None,
) -> tuple[FuzzyCMeans, list[CandidateScore]]:
    """Fit one model per candidate and return the best by ``index`` with every score."""
    if index not in VALIDITY_INDICES:
        raise ValueError(f"unknown validity index {index!r}; use one of {VALIDITY_INDICES}")
    best_model: FuzzyCMeans | None = None
    best_value = math.nan
    scores: list[CandidateScore] = []
    for n_clusters in candidates:
        model = make_estimator(n_clusters).fit(data)
        score = CandidateScore(
            n_clusters=n_clusters,
            partition_coefficient=model.partition_coefficient_,
            partition_entropy=model.partition_entropy_,
            xie_beni=model.xie_beni_,
            objective=model.objective_,
        )
        scores.append(score)
        if on_candidate is not None:
            on_candidate(score)
        value = score.value(index)
        if best_model is None or _better(value, best_value, _HIGHER_IS_BETTER[index]):
            best_model, best_value = model, value
    if best_model is None:
        raise ValueError("no candidate number of clusters")
    logger.info("auto: %d clusters chosen by %s", best_model.n_clusters, index)
    return best_model, scores


def _better(value: float, incumbent: float, higher_is_better: bool) -> bool:
    if math.isnan(value):
        return False
    if math.isnan(incumbent):
        return True
    return value > incumbent if higher_is_better else value < incumbent
