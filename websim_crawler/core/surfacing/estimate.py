"""How many records a hidden database holds, from what its queries brought back.

Pure arithmetic on counts. Two estimators, the better-founded one answering:

* **Stated totals.** A site that states its whole size ("(360 total)") is taken at its word;
  so are the stated counts of a select that partitions the records, added up
  (``core.surfacing.inputs``).
* **Capture-recapture.** Each query's answer is a sample of the database; a record caught by
  several queries is recaptured. Queries are not random samples (each is a word of a record
  already seen), so records differ widely in how likely an answer is to show them, and every
  estimator for such heterogeneous catchability errs one way or the other somewhere. Two are
  combined: Chao's (Chao 1987, "Estimating the population size for capture-recapture data with
  unequal catchability") ``N = S + f1^2 / (2 f2)`` (``S`` records seen, ``f1`` seen once,
  ``f2`` seen twice; the bias-corrected ``f1 (f1 - 1) / 2`` when ``f2 = 0``), a lower bound in
  expectation, with Chao's log-normal 95 % interval; and the first-order jackknife (Burnham and
  Overton 1978, "Estimation of the size of a closed population when capture probabilities vary
  among animals") ``N = S + f1 (k - 1) / k`` over the ``k`` answers that showed any record,
  with its variance ``f1 r (1 + r)``, ``r = (k - 1) / k``, and the same log-normal interval on
  its unseen part. Chao's is the closer when most records are rarely caught (random samples
  that saw a third of a population of unequal catchability: 0.75-0.90 of the truth against
  0.56-0.59), the jackknife once most are reached (the gallery's databases at the end of their
  crawls: 0.99-1.02 against 0.95-1.00). The size is the larger of the two and the interval
  covers both of theirs: it held the gallery's truth at the end of 55 of 56 crawls, Chao's
  alone of 27 (``benchmarks/surfacing.py --intervals 8``, benchmarks/RESULTS.md).
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


def capture_estimate(capture_counts: Iterable[int], samples: int) -> SizeEstimate:
    """Estimate a population from how many times each seen record was caught by ``samples``
    samples (the answers that showed any record): the larger of Chao's estimate and the
    first-order jackknife, with an interval covering both of theirs."""
    counts = [count for count in capture_counts if count > 0]
    chao, jackknife = chao_estimate(counts), jackknife_estimate(counts, samples)
    return SizeEstimate(
        size=max(chao.size, jackknife.size),
        low=min(chao.low, jackknife.low),
        high=max(chao.high, jackknife.high),
        method=chao.method,
    )


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
    return _log_normal(seen, unseen, variance)


def jackknife_estimate(capture_counts: Iterable[int], samples: int) -> SizeEstimate:
    """Estimate a population from how many times each seen record was caught by ``samples``
    samples: the first-order jackknife (Burnham and Overton 1978)."""
    counts = [count for count in capture_counts if count > 0]
    seen = len(counts)
    if seen == 0:
        return SizeEstimate(0, 0, 0, "seen")
    f1 = sum(1 for count in counts if count == 1)
    if f1 == 0 or samples < 2:
        return SizeEstimate(seen, seen, seen, "capture-recapture")
    share = (samples - 1) / samples
    return _log_normal(seen, share * f1, f1 * share * (1.0 + share))


def _log_normal(seen: int, unseen: float, variance: float) -> SizeEstimate:
    """Return ``seen + unseen`` with the log-normal 95 % interval of the unseen part (Chao 1987),
    whose lower end is never below ``seen``."""
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
