"""How many records a hidden database holds, from what its queries brought back.

Pure arithmetic on counts. Two estimators, the better-founded one answering:

* **Stated totals.** A site that states its whole size ("(360 total)") is taken at its word;
  so are the stated counts of a select that partitions the records, added up
  (``core.surfacing.inputs``).
* **Capture-recapture.** Each query's answer is a sample of the database; a record caught by
  several queries is recaptured. Chao's estimator for heterogeneous catchability (Chao 1987,
  "Estimating the population size for capture-recapture data with unequal catchability")
  ``N = S + f1^2 / (2 f2)`` (``S`` records seen, ``f1`` seen once, ``f2`` seen twice; the
  bias-corrected ``f1 (f1 - 1) / 2`` when ``f2 = 0``), with Chao's log-normal 95 % interval,
  whose lower end is never below ``S``. Queries are not random samples (each is a word of a
  record already seen); heterogeneity of this kind is what Chao's estimator is for, and it is a
  lower bound in expectation: the interval says how far it may be off.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

_Z95 = 1.96


@dataclass(frozen=True)
class SizeEstimate:
    """An estimated database size with its 95 % interval and the way it was found."""

    size: int
    low: int
    high: int
    method: str  # "stated", "partition", "capture-recapture", "seen" (nothing to go on)

    def covered(self, held: int, share: float) -> bool:
        """Tell whether ``held`` records are at least ``share`` of the estimate's upper end."""
        return held > 0 and held >= share * self.high

    def describe(self) -> str:
        """Return "about 360 (330-395)" or "360" when exact."""
        if self.low == self.high == self.size:
            return f"{self.size}"
        return f"about {self.size} ({self.low}-{self.high})"


def chao_estimate(capture_counts: Iterable[int]) -> SizeEstimate:
    """Estimate a population from how many times each seen record was caught (Chao 1987)."""
    counts = [count for count in capture_counts if count > 0]
    seen = len(counts)
    if seen == 0:
        return SizeEstimate(0, 0, 0, "seen")
    f1 = sum(1 for count in counts if count == 1)
    f2 = sum(1 for count in counts if count == 2)
    if f1 == 0:
        return SizeEstimate(seen, seen, seen, "capture-recapture")
    if f2 > 0:
        unseen = f1 * f1 / (2.0 * f2)
        ratio = f1 / f2
        variance = f2 * (ratio**4 / 4.0 + ratio**3 + ratio**2 / 2.0)
    else:
        unseen = f1 * (f1 - 1) / 2.0
        variance = f1 * (f1 - 1) / 2.0 + f1 * (2 * f1 - 1) ** 2 / 4.0 - f1**4 / (4.0 * seen)
    if unseen <= 0:
        return SizeEstimate(seen, seen, seen, "capture-recapture")
    spread = math.exp(_Z95 * math.sqrt(math.log(1.0 + max(variance, 0.0) / unseen**2)))
    return SizeEstimate(
        size=round(seen + unseen),
        low=seen + math.floor(unseen / spread),
        high=seen + math.ceil(unseen * spread),
        method="capture-recapture",
    )


def stated_estimate(total: int, held: int, method: str = "stated") -> SizeEstimate:
    """Return the size a site states, or the sum of a partitioning input's stated counts
    (``method`` "partition"), never below what was already reached."""
    size = max(total, held)
    return SizeEstimate(size, size, size, method)
