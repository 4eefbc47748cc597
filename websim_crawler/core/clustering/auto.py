"""Choosing the number of clusters: a coarse-to-fine search scored by validity indices.

The candidates run from 2 up to ``N / 5`` (capped by a setting), far beyond the usual
``sqrt(N)`` bound (Bezdek & Pal 1998), so a collection of many small topics can be found. They
are tried coarse to fine: a geometric grid first, then the middles of the gaps between the best
candidate and its nearest tried neighbours, halved until the gaps close. Each candidate is
scored by the fuzzy validity indices (partition coefficient and entropy, Bezdek 1981; Xie & Beni
1991) and by its split-half stability: the collection is split in two random halves, each half
clustered, and the clusters of the second half are compared with what the first half's model
predicts for it (adjusted Rand index, Hubert & Arabie 1985; the prediction-strength idea of
Tibshirani & Walther 2005). The default, ``stable_xie_beni``, keeps the candidates whose
stability is within ``STABLE_SHARE`` of the most stable one and picks the best separated of
them (lowest Xie-Beni): Xie-Beni alone keeps falling as the number of clusters grows, and
stability alone cannot tell apart the stable levels of a hierarchy.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from websim_crawler.core.clustering.fcm import FuzzyCMeans, Matrix
from websim_crawler.core.clustering.params import STABLE_XIE_BENI, VALIDITY_INDICES

logger = logging.getLogger(__name__)

# The direction in which each single index gets better.
_HIGHER_IS_BETTER = {"xie_beni": False, "partition_coefficient": True, "partition_entropy": False}
# Candidates whose split-half stability is at least this share of the best are "stable".
STABLE_SHARE = 0.9
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
    stability: float = math.nan

    def value(self, index: str) -> float:
        """Return the named single index."""
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


def adjusted_rand_index(first: np.ndarray, second: np.ndarray) -> float:
    """Agreement of two labelings corrected for chance (Hubert & Arabie 1985); 1 = the same."""
    _, first_ids = np.unique(first, return_inverse=True)
    _, second_ids = np.unique(second, return_inverse=True)
    table = np.zeros((first_ids.max() + 1, second_ids.max() + 1))
    np.add.at(table, (first_ids, second_ids), 1)

    def pairs(counts: np.ndarray) -> float:
        return float((counts * (counts - 1) / 2).sum())

    together, rows, columns = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    total = len(first) * (len(first) - 1) / 2
    expected = rows * columns / total if total else 0.0
    maximum = (rows + columns) / 2
    return 1.0 if maximum == expected else (together - expected) / (maximum - expected)


def split_half_stability(
    data: Matrix, n_clusters: int, make_estimator: Callable[[int], FuzzyCMeans], seed: int
) -> float:
    """Cluster two random halves (one run each); return how well the first half's model
    predicts the second half's clusters (adjusted Rand index), or NaN when a half is too small."""
    n_rows = data.shape[0]
    half = n_rows // 2
    if half < 2 * n_clusters:
        return math.nan
    order = np.random.default_rng(seed).permutation(n_rows)
    first, second = np.sort(order[:half]), np.sort(order[half:])
    trained, tested = make_estimator(n_clusters), make_estimator(n_clusters)
    trained.n_init = tested.n_init = 1
    trained.fit(data[first])
    tested.fit(data[second])
    return adjusted_rand_index(tested.predict(data[second]), trained.predict(data[second]))


def choose_n_clusters(
    data: Matrix,
    upper: int,
    make_estimator: Callable[[int], FuzzyCMeans],
    index: str = STABLE_XIE_BENI,
    on_candidate: Callable[[CandidateScore], None] | None = None,
    seed: int = 0,
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
        stability = (
            split_half_stability(data, n_clusters, make_estimator, seed)
            if index == STABLE_XIE_BENI
            else math.nan
        )
        score = CandidateScore(
            n_clusters=n_clusters,
            partition_coefficient=model.partition_coefficient_,
            partition_entropy=model.partition_entropy_,
            xie_beni=model.xie_beni_,
            objective=model.objective_,
            stability=stability,
        )
        models[n_clusters], scores[n_clusters] = model, score
        if on_candidate is not None:
            on_candidate(score)

    for n_clusters in coarse_grid(upper):
        evaluate(n_clusters)
    while True:  # fine: halve the gaps to the best candidate's neighbours until none is left
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


def _best(scores: list[CandidateScore], index: str) -> int:
    """Return the number of clusters the index prefers among the scored candidates."""
    if index == STABLE_XIE_BENI:
        stabilities = [score.stability for score in scores if not math.isnan(score.stability)]
        if stabilities:
            floor = STABLE_SHARE * max(stabilities)
            stable = [s for s in scores if not math.isnan(s.stability) and s.stability >= floor]
            scores = stable or scores
        index = "xie_beni"
    best: CandidateScore | None = None
    for score in scores:
        if best is None or _better(score.value(index), best.value(index), _HIGHER_IS_BETTER[index]):
            best = score
    if best is None:
        raise ValueError("no candidate number of clusters")
    return best.n_clusters


def _better(value: float, incumbent: float, higher_is_better: bool) -> bool:
    if math.isnan(value):
        return False
    if math.isnan(incumbent):
        return True
    return value > incumbent if higher_is_better else value < incumbent
