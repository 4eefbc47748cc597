"""The order a site lists its answers in, and what an unasked word would show under it.

Many search sites list matches by record id (oldest or newest first) and show only the first
few dozen: a word of many matches shows the same first ids again and again, and a record late in
the order is reached only by a word with few matches before it. Once every answer so far was
listed by the number in its records' keys (``/record/123``), ascending or descending, the
records reached tell what an unasked word would show: its first ``limit`` matches in that order,
so nothing past its ``limit``-th known match, and sooner where its estimated matches fill
``limit`` sooner. What it brings is the unseen records listed before that point (the ids
missing between those reached: at most one record per id) times the chance that an unseen
record holds the word.

That chance starts from the share of records reached that hold the word, scaled by how much
more a word matches than result-page texts show (learnt from the answers: matches shown per id
spanned against that share when the word was asked), and by how alike the word's records are
to the unseen ones (the planner's ``likeness``: records few answers showed resemble those none
showed, as in Good and Turing's estimate of the unseen).
"""

from __future__ import annotations

import itertools
import math
import re
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

_KEY_NUMBER = re.compile(r"\d{1,15}")
_MIN_ORDER_PAIRS = 20  # neighbouring records that agree with an order before it is believed

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]


class ListingOrder:
    """Learn whether answers are listed by key number, and predict what a word would bring.

    The planner reports each record reached (``add_record``, in index order), the terms it
    holds (``add_terms``), each result page's records in listing order (``observe``) and each
    answered one-word query (``calibrate``).
    """

    def __init__(self) -> None:
        self._numbers = array("d")  # per record: its key's number (NaN: none)
        self._occurrence_records = array("q")  # (record, term) pairs: a record holds a term
        self._occurrence_terms = array("q")
        self._last: dict[str, float] = {}  # per query: the number listed last
        self._pairs = {1: 0, -1: 0}  # neighbouring listed records agreeing with each direction
        self._broken = False  # a record without a number, or both directions seen
        self._answered_share = 0.0  # over answered one-word queries: matches shown per id
        self._known_share = 0.0  # ... and their share of the records reached when asked

    def add_record(self, key: str) -> None:
        """Take the next record's key."""
        numbers = _KEY_NUMBER.findall(key)
        self._numbers.append(float(numbers[-1]) if numbers else math.nan)

    def add_terms(self, index: int, terms: Sequence[int]) -> None:
        """Take terms record ``index`` holds (each once)."""
        self._occurrence_records.extend([index] * len(terms))
        self._occurrence_terms.extend(terms)

    def observe(self, query: str, listed: Sequence[int]) -> None:
        """Take one result page of ``query`` (pages in order): its records' indices as listed."""
        if self._broken:
            return
        last = self._last.get(query, math.nan)
        for index in listed:
            number = self._numbers[index]
            if math.isnan(number):
                self._broken = True
                return
            if not math.isnan(last) and number != last:
                self._pairs[1 if number > last else -1] += 1
            last = number
        self._last[query] = last
        self._broken = bool(self._pairs[1] and self._pairs[-1])

    @property
    def direction(self) -> int | None:
        """Return 1 (ascending numbers), -1 (descending) or ``None`` (no such order seen)."""
        if self._broken:
            return None
        for direction, pairs in self._pairs.items():
            if pairs >= _MIN_ORDER_PAIRS:
                return direction
        return None

    def calibrate(self, known_share: float, shown: Sequence[int], capped: bool) -> None:
        """Take a one-word query's answer (the records it showed, whether it was capped) and
        the share of records reached that held the word when it was asked. Of the records
        reached that the answer spans (up to its last record when capped, else all), exactly
        those it showed hold the word: that is its true share."""
        direction = self.direction
        if direction is None or known_share <= 0 or not shown:
            return
        position = self._positions(direction)
        spanned = len(position)
        if capped:
            spanned = int(np.count_nonzero(position <= position[list(shown)].max()))
        self._answered_share += len(shown) / spanned
        self._known_share += known_share

    def expected_new(
        self, candidates: IntArray, limit: int, captures: Sequence[int], likeness: FloatArray
    ) -> FloatArray:
        """Return, per candidate term (sorted ids), the unseen records its answer is expected
        to show (at most ``limit``); zeros while no order is known.

        ``captures``: per record, the answers that showed it; ``likeness`` per candidate: how
        much more (or less) an unseen record holds the term than one reached does.
        """
        direction = self.direction
        if direction is None or not len(candidates):
            return np.zeros(len(candidates))
        position = self._positions(direction)
        terms = np.frombuffer(self._occurrence_terms, dtype=np.int64)
        records = np.frombuffer(self._occurrence_records, dtype=np.int64)
        by_term = np.lexsort((position[records], terms))  # each term's records in listed order
        starts = np.searchsorted(terms[by_term], candidates, side="left")
        counts = np.searchsorted(terms[by_term], candidates, side="right") - starts
        window = np.full(len(candidates), np.inf)  # where the answer ends at the latest
        full = counts >= limit
        window[full] = position[records[by_term[starts[full] + limit - 1]]]
        share = counts / max(len(position), 1)
        if self._known_share > 0:  # result-page texts show a word in fewer records than hold it
            share = np.minimum(share * (self._answered_share / self._known_share), 1.0)
        unseen = _UnseenProfile(position, np.asarray(captures, dtype=np.int64))
        with np.errstate(divide="ignore"):
            filled = unseen.where_records_reach(limit / share)  # where ``limit`` matches end
        shown_unseen = unseen.before(np.minimum(window, filled))
        return np.minimum(np.minimum(share * likeness, 1.0) * shown_unseen, float(limit))

    def _positions(self, direction: int) -> FloatArray:
        """Return each record's place in the listing order (its number, negated if descending)."""
        return direction * np.frombuffer(self._numbers, dtype=np.float64)


class _UnseenProfile:
    """Where along the listing order the unseen records are: the records reached are cut into
    bands of consecutive positions, and each band's unseen records are estimated by Chao's
    capture-recapture over its own records (within a band every record met the same answers'
    windows, so their chances to be shown are alike) and spread evenly over its span."""

    _RECORDS_PER_BAND = 40
    _MAX_BANDS = 12

    def __init__(self, position: FloatArray, captures: IntArray) -> None:
        numbered = ~np.isnan(position)
        by_position = np.argsort(position[numbered], kind="stable")
        self.known = position[numbered][by_position]
        counts = captures[numbered][by_position]
        bands = max(1, min(self._MAX_BANDS, len(self.known) // self._RECORDS_PER_BAND))
        cuts = np.linspace(0, len(self.known), bands + 1).astype(np.int64)
        self.starts = np.empty(bands)
        self.ends = np.empty(bands)
        held = np.empty(bands)
        chao = np.empty(bands)
        for band, (first, last) in enumerate(itertools.pairwise(cuts.tolist())):
            self.starts[band] = self.known[first - 1] if first else self.known[0] - 1.0
            self.ends[band] = self.known[last - 1]
            once = int(np.count_nonzero(counts[first:last] == 1))
            twice = int(np.count_nonzero(counts[first:last] == 2))
            held[band] = last - first
            chao[band] = once * (once - 1) / (2.0 * (twice + 1))
        # Records per id, from the band capture-recapture finds most complete (at most one).
        spans = np.maximum(self.ends - self.starts, 1.0)
        best = int(np.argmax(held / (held + chao)))
        density = min(1.0, (held[best] + chao[best]) / spans[best])
        self.unseen = np.clip(density * spans - held, 0.0, spans - held)

    def before(self, points: FloatArray) -> FloatArray:
        """Return the unseen records listed at or before each point (all of them at inf)."""
        spans = np.maximum(self.ends - self.starts, 1e-9)
        share = np.clip((points[:, None] - self.starts[None, :]) / spans[None, :], 0.0, 1.0)
        return share @ self.unseen

    def where_records_reach(self, totals: FloatArray) -> FloatArray:
        """Return the point where the records listed (reached and unseen) reach each total;
        inf past the last record reached."""
        if not len(self.known):
            return np.full(len(totals), np.inf)
        listed = np.arange(1, len(self.known) + 1) + self.before(self.known)
        points = np.interp(totals, listed, self.known)
        return np.where(totals > listed[-1], np.inf, points)
