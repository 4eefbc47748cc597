"""What queries of each frequency band bring: the planner's learnt yields (UCB1 over bands).

A term's band is its relative document frequency among the records reached, doubling from band
to band. Each answered query credits its band with the new records it brought, the records it
showed and its cost (one query, a tenth of one per result page); recent answers weigh more, as
yields fall while coverage grows. The next band is the one of the highest yield per cost plus an
upper-confidence bonus for bands little tried (UCB1: Auer, Cesa-Bianchi and Fischer, "Finite-time
analysis of the multiarmed bandit problem", 2002).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

_PAGE_COST = 0.1  # what a result page costs beside its query (the budget counts queries)
_OPTIMISM = 3.0  # an untried band is worth this many full result pages of new records
_DECAY = 0.97  # weight an answer keeps per later answer: yields fall as coverage grows
_EXPLORATION = 0.25  # weight of the upper-confidence bonus of a little-tried band


def band_of(frequency: int, held: int) -> int:
    """Return the frequency band of a term found in ``frequency`` of ``held`` records."""
    return math.floor(math.log2(max(frequency, 1) * 1024.0 / max(held, 1)))


def bands_of(
    frequency: np.ndarray[Any, np.dtype[np.int64]], held: int
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Return ``band_of`` of every term at once."""
    relative = np.maximum(frequency, 1) * 1024.0 / max(held, 1)
    return np.floor(np.log2(relative)).astype(np.int64)


class BandYields:
    """Decayed new records, records shown, queries and cost of each band's answers."""

    def __init__(self) -> None:
        self._new: dict[int, float] = {}
        self._cost: dict[int, float] = {}
        self._shown: dict[int, float] = {}
        self._queries: dict[int, float] = {}

    def credit(self, band: int, new: int, shown: int, pages: int) -> None:
        """Credit one answered query of ``band``; every earlier answer weighs a little less."""
        for table in (self._new, self._cost, self._shown, self._queries):
            for known in table:
                table[known] *= _DECAY
            table.setdefault(band, 0.0)
        self._new[band] += new
        self._cost[band] += 1.0 + _PAGE_COST * pages
        self._shown[band] += shown
        self._queries[band] += 1.0

    def best(self, bands: Iterable[int], page_size: int) -> int:
        """Return the band of the highest yield per cost plus its exploration bonus (the higher
        band on a tie)."""
        optimistic = float(max(page_size, 1)) * _OPTIMISM
        tried = sum(self._cost.values())
        best_band, best_value = 0, -math.inf
        for band in bands:
            cost = self._cost.get(band, 0.0)
            if cost <= 0:
                value = optimistic  # an untried band is worth a try
            else:
                bonus = _EXPLORATION * optimistic * math.sqrt(math.log(tried + 1.0) / cost)
                value = self._new[band] / cost + bonus
            if value > best_value or (value == best_value and band > best_band):
                best_band, best_value = band, value
        return best_band

    def shown_per_query(self, band: int) -> float | None:
        """Return how many records a query of ``band`` showed, on average (``None``: untried)."""
        queries = self._queries.get(band, 0.0)
        return self._shown[band] / queries if queries > 0 else None
