"""Choosing the number of clusters: a coarse-to-fine search scored by validity indices.

The candidates run from 2 up to ``N / 5`` (capped by a setting), far beyond the usual
``sqrt(N)`` bound (Bezdek & Pal 1998), so a collection of many small topics can be found. They
are tried coarse to fine: a geometric grid first, then the middles of the gaps between the chosen
candidate and its nearest tried neighbours, halved until the gaps close. Each candidate is
scored by the fuzzy validity indices (partition coefficient and entropy, Bezdek 1981; Xie & Beni
1991). Xie-Beni (compactness over the closest centres' separation) keeps drifting down as the
number of clusters grows, so ``xie_beni`` takes the fewest clusters whose index is within
``XIE_BENI_TOLERANCE`` of the lowest one (a parsimony rule, like the one-standard-error rule).
The closest pair of centres makes one run's Xie-Beni noisy (one lucky run at a large number of
clusters moves the lowest value, and with it the choice), so a candidate is scored by the
median Xie-Beni of its restarts rather than by that of its lowest-objective run alone.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from websim_crawler.core.clustering.fcm import FuzzyCMeans, Matrix
from websim_crawler.core.clustering.params import VALIDITY_INDICES

logger = logging.getLogger(__name__)

# The direction in which each single index gets better.
_HIGHER_IS_BETTER = {"xie_beni": False, "partition_coefficient": True, "partition_entropy": False}
# Xie-Beni: the fewest clusters whose index is at most this much (relative) above the lowest.
XIE_BENI_TOLERANCE = 0.1
# The coarse grid grows by this factor (at least one cluster) from one candidate to the next.
GRID_GROWTH = 1.25
# At most N / this many clusters are tried (about five pages per cluster).
MIN_PAGES_PER_CLUSTER = 5


@dataclass(frozen=True)
class CandidateScore:
    """The validity indices of one candidate number of clusters."""

    n_clusters: int
    partition_coefficient: float
    partition_entropy: float
    xie_beni: float
    objective: float
    xie_beni_median: float  # over the restarts; the ``xie_beni`` rule reads this one

    def value(self, index: str) -> float:
        """Return the named single index (for ``xie_beni``, the median over the restarts)."""
        if index == "xie_beni":
            return self.xie_beni_median
        return float(getattr(self, index))


def upper_bound(n_distinct: int, max_clusters: int) -> int:
    """Return the largest number of clusters auto tries: ``min(max_clusters, N / 5)``, >= 2."""
    if n_distinct < 2:
        return 1
    return max(2, min(max_clusters, n_distinct // MIN_PAGES_PER_CLUSTER, n_distinct))


def coarse_grid(upper: int) -> list[int]:
    """Return 2, 3, ... growing by ``GRID_GROWTH`` up to ``upper`` (which is always included)."""
    if upper < 2:
        return [1]
    grid = [2]
    while grid[-1] < upper:
        grid.append(min(upper, max(grid[-1] + 1, round(grid[-1] * GRID_GROWTH))))
    return grid


def choose_n_clusters(
    data: Matrix,
    upper: int,
    make_estimator: Callable[[int], FuzzyCMeans],
    index: str = "xie_beni",
    on_candidate: Callable[[CandidateScore], None] | None = None,
) -> tuple[FuzzyCMeans, list[CandidateScore]]:
    """Search 2..``upper`` coarse to fine; return the chosen model and every candidate's score."""
    if index not in VALIDITY_INDICES:
        raise ValueError(f"unknown validity index {index!r}; use one of {VALIDITY_INDICES}")
    models: dict[int, FuzzyCMeans] = {}
    scores: dict[int, CandidateScore] = {}

    def evaluate(n_clusters: int) -> None:
        if n_clusters in scores:
            return
        model = make_estimator(n_clusters).fit(data)
        score = CandidateScore(
            n_clusters=n_clusters,
            partition_coefficient=model.partition_coefficient_,
            partition_entropy=model.partition_entropy_,
            xie_beni=model.xie_beni_,
            objective=model.objective_,
            xie_beni_median=_median(model),
        )
        models[n_clusters], scores[n_clusters] = model, score
        if on_candidate is not None:
            on_candidate(score)

    for n_clusters in coarse_grid(upper):
        evaluate(n_clusters)
    while True:  # fine: halve the gaps to the chosen candidate's neighbours until none is left
        best = _best(list(scores.values()), index)
        lower = max((k for k in scores if k < best), default=best)
        higher = min((k for k in scores if k > best), default=best)
        middles = {(lower + best) // 2, (best + higher + 1) // 2} - set(scores)
        if not middles:
            break
        for n_clusters in sorted(middles):
            evaluate(n_clusters)
    chosen = _best(list(scores.values()), index)
    logger.info(
        "auto: %d clusters chosen by %s among %d candidates (2..%d)",
        chosen,
        index,
        len(scores),
        upper,
    )
    return models[chosen], [scores[k] for k in sorted(scores)]


def _median(model: FuzzyCMeans) -> float:
    """Return the median Xie-Beni index of the model's restarts (NaN for one cluster)."""
    values = [float(value) for value in model.restart_xie_beni_]
    if not values or any(math.isnan(value) for value in values):
        return math.nan
    return float(statistics.median(values))


def _best(scores: list[CandidateScore], index: str) -> int:
    """Return the number of clusters the index prefers among the scored candidates."""
    if not scores:
        raise ValueError("no candidate number of clusters")
    values = [score.value(index) for score in scores if not math.isnan(score.value(index))]
    if not values:  # one cluster: no separation to score
        return min(score.n_clusters for score in scores)
    if index == "xie_beni":
        ceiling = min(values) * (1 + XIE_BENI_TOLERANCE)
        return min(s.n_clusters for s in scores if s.value(index) <= ceiling)
    best = max(values) if _HIGHER_IS_BETTER[index] else min(values)
    return min(s.n_clusters for s in scores if s.value(index) == best)
