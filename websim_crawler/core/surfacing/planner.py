"""Choosing the queries that surface a hidden database: which word to ask next, and when to stop.

Pure and deterministic: the spider reports what each result page showed (record links with their
result-page text, and the counts the page states), and asks for the next query. The idea is
Ntoulas, Zerfos and Cho's adaptive crawler ("Downloading textual hidden web content through
keyword queries", JCDL 2005): the next query is the term expected to bring the most new records
per query, estimated from the records already downloaded. Ntoulas et al. estimate a term's
new matches from its frequency among those records; here what a term of a given frequency
brings is learnt from the site's own answers, because sites differ in what they show:

* candidate terms are the words (stop words of the site's language left out) of the start page,
  of the search form's labels and options, of each record's result-page text (title, snippet)
  and, with ``follow=1``, of the record page's analysed keywords;
* a term's relative document frequency among the records reached puts it in a band (bands
  double in frequency); the new records an answer brought per query (a result page costing a
  tenth of a query) are credited to the band of its term, recent answers weighing more: a site
  that caps its answers at 20 of its first records rewards rarer bands than one that lists all;
* the next query is the most novel term of the best band, an upper-confidence bonus (UCB1)
  letting little-tried bands be tried: novelty is the mean of 1/(queries that reached it) over
  the term's records, so terms of records near the unexplored part of the database come first;
* a site that matches word forms alike (a same-stem pair of queries got one answer) is not asked
  a second form of a word; the next result page of a query is not fetched when its last page
  brought nothing new.

It stops when the records reached cover the estimated size (``estimate``), when the last queries
brought almost nothing new, when no term is left, at the budget, or when the first queries all
fail or answer nothing. Everything it learns is rebuilt from the observations it was given, so a
resumed crawl replays them (``replay``) and asks nothing twice.
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from websim_crawler.core.surfacing.counts import ResultCount
from websim_crawler.core.surfacing.estimate import (
    SizeEstimate,
    chao_estimate,
    stated_estimate,
)
from websim_crawler.core.surfacing.params import SurfacingParams
from websim_crawler.core.text import stemmer, stopwords, tokenize

_TERM = re.compile(r"[^\W\d_]{3,40}", re.UNICODE)  # letters only, 3 to 40 of them
_MIN_CAP_EVIDENCE = 2  # answers that stop at one length before it is taken as the site's cap
_PAGE_COST = 0.1  # what a result page costs beside its query (the budget counts queries)
_OPTIMISM = 3.0  # an untried band is worth this many full result pages of new records
_DECAY = 0.97  # weight an answer keeps per later answer: yields fall as coverage grows
_EXPLORATION = 1.0  # weight of the upper-confidence bonus of a little-tried frequency band
_SEED_LIMIT = 400  # seed terms kept from the start page and the form
_MIN_QUERIES_FOR_COVERED = 8  # answers before "covered" is believed
ANSWERS_NOTHING = "the search answers nothing"  # why surfacing stopped when nothing came back


class QueryLogEntry(TypedDict):
    """One asked query as the stats and report show it."""

    query: str
    new: int
    shown: int
    matches: int | None
    pages: int
    capped: bool
    failed: bool


@dataclass
class _Asked:
    """What one asked query brought back, as it comes in."""

    query: str
    frequency_when_asked: int  # its document frequency among records reached when chosen
    records_when_asked: int  # records reached when it was chosen
    records: set[int] = field(default_factory=set)
    new: int = 0
    pages: int = 0
    matches: int | None = None
    stated_cap: int | None = None
    failed: bool = False
    finished: bool = False
    more_pages: bool = False  # the last result page fetched had a way to the next one


@dataclass(frozen=True)
class CoveragePoint:
    """Records reached after ``requests`` result pages (a point of the coverage curve)."""

    requests: int
    records: int


class QueryPlanner:
    """Choose queries for a hidden database and account for what they reached."""

    def __init__(
        self, params: SurfacingParams | None = None, *, language: str = "en", max_pages: int = 5
    ) -> None:
        self.params = params or SurfacingParams()
        self.language = language
        self.max_pages = max_pages
        self._stop = stopwords(language)
        self._stem = stemmer(language)
        self._records: dict[str, int] = {}  # record key -> index
        self._captures: list[int] = []  # per record: answers that showed it
        self._record_terms: list[list[int]] = []  # per record: its term ids
        self._terms: dict[str, int] = {}  # term -> id
        self._term_words: list[str] = []
        self._stem_ids: dict[str, int] = {}  # stem -> id
        self._term_stem_ids = np.zeros(1024, dtype=np.int64)  # per term: its stem's id
        self._asked_stem_ids: set[int] = set()
        self._novelty_total = 0.0  # sum over records of 1/captures
        self._frequency = np.zeros(1024, dtype=np.int64)  # per term: records that have it
        self._novelty = np.zeros(1024, dtype=np.float64)  # per term: sum of 1/captures
        self._usable = np.zeros(1024, dtype=bool)
        self._seeds: list[str] = []
        self._asked: dict[str, _Asked] = {}
        self._order: list[str] = []  # queries in the order they were chosen
        self._site_stems: bool | None = None  # does the site match word forms alike?
        self._stem_probe: str | None = None  # the asked query a same-stem probe repeats
        self._stated_total: int | None = None
        self._total_method = "stated"
        self._stated_cap: int | None = None
        self._page_size = 0  # most records seen on one result page
        self._requests = 0
        self._recent_new: deque[int] = deque(maxlen=self.params.stall_queries)
        # per frequency band (see _band): decayed new records and result pages of its answers
        self._band_new: dict[int, float] = {}
        self._band_pages: dict[int, float] = {}
        self.terms_dropped = 0  # new terms ignored at max_terms
        self.curve: list[CoveragePoint] = []
        self.stopped: str | None = None

    # --- what comes in ---------------------------------------------------------------------

    def seed(self, text: str) -> None:
        """Offer the words of a text (the start page, the form's labels and options) as the
        first queries, most frequent first, before any record was reached."""
        counts = Counter(self._words(text))
        for word, _ in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])):
            if len(self._seeds) >= _SEED_LIMIT:
                break
            if word not in self._seeds:
                self._seeds.append(word)

    def add_result_page(
        self,
        query: str,
        records: Mapping[str, str],
        count: ResultCount | None = None,
        *,
        has_next: bool = False,
    ) -> int:
        """Account for one result page of ``query``: its record keys with their result-page
        text, the counts it states and whether it leads to a next page; return the records new
        to the crawl."""
        asked = self._asked_query(query)
        self._requests += 1
        asked.pages += 1
        asked.more_pages = has_next
        if count is not None:
            if count.matches is not None:
                asked.matches = count.matches
            if count.shown_cap is not None:
                asked.stated_cap = count.shown_cap
                self._stated_cap = count.shown_cap
            if count.database_total is not None:
                self._stated_total = count.database_total
                self._total_method = "stated"
        self._page_size = max(self._page_size, len(records))
        new = 0
        for key, text in records.items():
            index = self._records.get(key)
            if index is None:
                index = self._add_record(key, text)
                new += 1
            if index not in asked.records:
                asked.records.add(index)
                self._capture(index)
        asked.new += new
        self.curve.append(CoveragePoint(self._requests, len(self._records)))
        return new

    def add_record_terms(self, key: str, words: Iterable[str]) -> None:
        """Add the words of a record's own page (its analysed keywords) to what its result-page
        text gave: a record page says far more than its snippet. Unknown records are ignored."""
        index = self._records.get(key)
        if index is None:
            return
        known = set(self._record_terms[index])
        captures = self._captures[index]
        for word in dict.fromkeys(words):
            if not _TERM.fullmatch(word) or word in self._stop:
                continue
            term = self._term_id(word)
            if term is None or term in known:
                continue
            known.add(term)
            self._record_terms[index].append(term)
            self._frequency[term] += 1
            if captures:
                self._novelty[term] += 1.0 / captures

    def add_failure(self, query: str) -> None:
        """Account for a query the site answered with an error (the term is not asked again)."""
        asked = self._asked_query(query)
        self._requests += 1
        asked.failed = True
        self.curve.append(CoveragePoint(self._requests, len(self._records)))

    def finish(self, query: str) -> None:
        """Mark ``query``'s answer complete (no further result page will come) and learn."""
        asked = self._asked.get(query)
        if asked is None or asked.finished:
            return
        asked.finished = True
        if asked.failed and not asked.records:
            return
        self._recent_new.append(asked.new)
        band = _band(asked.frequency_when_asked, asked.records_when_asked)
        for known in self._band_new:
            self._band_new[known] *= _DECAY
            self._band_pages[known] *= _DECAY
        self._band_new[band] = self._band_new.get(band, 0.0) + asked.new
        self._band_pages[band] = self._band_pages.get(band, 0.0) + 1.0 + _PAGE_COST * asked.pages
        self._learn_stemming(asked)

    def worth_next_page(self, query: str, page_new: int, page_records: int) -> bool:
        """Tell whether to fetch the next result page of ``query``: not when this page showed
        records and none was new (the rest of a capped list is mostly known too)."""
        return not (page_records > 0 and page_new == 0)

    # --- what goes out ---------------------------------------------------------------------

    def next_query(self) -> str | None:
        """Choose the next query (and count it asked), or ``None`` when surfacing is done
        (``stopped`` says why) or every query is waiting for answers."""
        if self.stopped is not None:
            return None
        reason = self.stop_reason()
        if reason is not None:
            self.stopped = reason
            return None
        query = self._best_term() if self._records else self._next_seed()
        if query is None:
            if self.in_flight():
                return None
            self.stopped = "no terms left"
            return None
        self._choose(query)
        return query

    def submit(self, key: str) -> bool:
        """Count a submission chosen elsewhere (a form's select value) as asked; ``False`` (and
        nothing counted) when surfacing must stop (``stopped`` says why)."""
        if self.stopped is not None:
            return False
        reason = self.stop_reason()
        if reason is not None:
            self.stopped = reason
            return False
        if key not in self._asked:
            self._choose(key)
        return True

    def was_capped(self, query: str) -> bool:
        """Tell whether a query's answer stopped before its end (the site's cap, max_pages)."""
        asked = self._asked.get(query)
        return asked is not None and self._was_capped(asked)

    def note_total(self, total: int) -> None:
        """Take a database size found by a form's partitioning input (its counts' sum)."""
        self._stated_total = total
        self._total_method = "partition"

    def in_flight(self) -> list[str]:
        """Return the queries chosen whose answers are not complete yet."""
        return [query for query in self._order if not self._asked[query].finished]

    def stop_reason(self) -> str | None:
        """Return why surfacing should stop now, or ``None``."""
        asked = len(self._order)
        if asked >= self.params.max_queries:
            return "budget (max_queries)"
        answered = [self._asked[query] for query in self._order if self._asked[query].finished]
        if not self._records:
            unanswered = [one for one in answered if one.failed or not one.records]
            if len(unanswered) >= self.params.max_unanswered_probes:
                return ANSWERS_NOTHING
            return None
        held = len(self._records)
        estimate = self.estimate()
        if estimate.method in ("stated", "partition") and held >= estimate.size:
            return "every record reached"
        if (
            len(answered) >= _MIN_QUERIES_FOR_COVERED
            and estimate.method == "capture-recapture"
            and held >= self.params.covered_share * estimate.high
        ):
            return "estimate covered"
        window = self.params.stall_queries
        if (
            len(self._recent_new) >= window
            and len(answered) >= window
            and sum(self._recent_new) <= self.params.stall_share * held
        ):
            return "the last queries brought almost nothing new"
        return None

    # --- what it says ----------------------------------------------------------------------

    @property
    def records(self) -> int:
        """Return how many records were reached."""
        return len(self._records)

    @property
    def requests(self) -> int:
        """Return how many result pages were fetched (failed answers included)."""
        return self._requests

    @property
    def queries(self) -> int:
        """Return how many queries were chosen."""
        return len(self._order)

    @property
    def site_cap(self) -> int | None:
        """Return the most results the site shows for one query, when known."""
        return self._stated_cap or self._observed_cap()

    @property
    def site_stems(self) -> bool | None:
        """Return whether the site matches word forms alike (``None``: not seen yet)."""
        return self._site_stems

    def estimate(self) -> SizeEstimate:
        """Estimate the database size (see ``core.surfacing.estimate``)."""
        held = len(self._records)
        if self._stated_total is not None:
            return stated_estimate(self._stated_total, held, self._total_method)
        return chao_estimate(self._captures)

    def query_log(self) -> list[QueryLogEntry]:
        """Return every asked query with what it brought, in the order they were chosen."""
        return [
            QueryLogEntry(
                query=asked.query,
                new=asked.new,
                shown=len(asked.records),
                matches=asked.matches,
                pages=asked.pages,
                capped=self._was_capped(asked),
                failed=asked.failed,
            )
            for asked in (self._asked[query] for query in self._order)
        ]

    def summary(self) -> str:
        """Return the end-of-crawl line: reached, queries, pages, estimate, why it stopped."""
        estimate = self.estimate()
        stopped = self.stopped or "crawl ended"
        return (
            f"reached {self.records} records with {self.queries} queries ({self.requests} result "
            f"pages); the site holds {estimate.describe()}; stopped: {stopped}"
        )

    # --- inside ----------------------------------------------------------------------------

    def _words(self, text: str) -> list[str]:
        return [
            token for token in tokenize(text) if _TERM.fullmatch(token) and token not in self._stop
        ]

    def _asked_query(self, query: str) -> _Asked:
        asked = self._asked.get(query)
        if asked is None:  # a query the crawl was given, or one replayed from a resumed crawl
            self._choose(query)
            asked = self._asked[query]
        return asked

    def _choose(self, query: str) -> None:
        term = self._terms.get(query)
        frequency = int(self._frequency[term]) if term is not None else 0
        self._asked[query] = _Asked(query, frequency, len(self._records))
        self._order.append(query)
        self._asked_stem_ids.add(self._stem_id(query))
        if term is not None:
            self._usable[term] = False
        if query in self._seeds:
            self._seeds.remove(query)

    def _next_seed(self) -> str | None:
        while self._seeds:
            word = self._seeds[0]
            if word not in self._asked:
                return word
            self._seeds.pop(0)
        return None

    def _add_record(self, key: str, text: str) -> int:
        index = len(self._captures)
        self._records[key] = index
        self._captures.append(0)
        term_ids: list[int] = []
        for word in dict.fromkeys(self._words(text[: self.params.snippet_chars])):
            term = self._term_id(word)
            if term is not None:
                term_ids.append(term)
                self._frequency[term] += 1
        self._record_terms.append(term_ids)
        return index

    def _term_id(self, word: str) -> int | None:
        term = self._terms.get(word)
        if term is not None:
            return term
        if len(self._terms) >= self.params.max_terms:
            self.terms_dropped += 1
            return None
        term = len(self._term_words)
        if term >= len(self._frequency):
            grown = len(self._frequency) * 2
            self._frequency = np.resize(self._frequency, grown)
            self._frequency[term:] = 0
            self._novelty = np.resize(self._novelty, grown)
            self._novelty[term:] = 0.0
            self._usable = np.resize(self._usable, grown)
            self._usable[term:] = False
            self._term_stem_ids = np.resize(self._term_stem_ids, grown)
        self._terms[word] = term
        self._term_words.append(word)
        self._term_stem_ids[term] = self._stem_id(word)
        self._usable[term] = word not in self._asked
        return term

    def _stem_id(self, word: str) -> int:
        return self._stem_ids.setdefault(self._stem(word), len(self._stem_ids))

    def _capture(self, index: int) -> None:
        before = self._captures[index]
        self._captures[index] = before + 1
        change = 1.0 / (before + 1) - (1.0 / before if before else 0.0)
        self._novelty_total += change
        terms = self._record_terms[index]
        if terms:
            self._novelty[terms] += change

    def _was_capped(self, asked: _Asked) -> bool:
        shown = len(asked.records)
        if asked.matches is not None and asked.matches > shown:
            return True
        if asked.more_pages:  # stopped by max_pages or by worth_next_page
            return True
        cap = self._stated_cap or self._observed_cap(excluding=asked.query)
        return cap is not None and shown >= cap

    def _observed_cap(self, excluding: str | None = None) -> int | None:
        """Return the answer length several answers stopped at while stating more matches."""
        lengths = Counter(
            len(asked.records)
            for asked in self._asked.values()
            if asked.finished
            and asked.query != excluding
            and asked.matches is not None
            and asked.matches > len(asked.records)
            and not asked.more_pages
        )
        if not lengths:
            return None
        length, times = lengths.most_common(1)[0]
        return length if times >= _MIN_CAP_EVIDENCE else None

    def _learn_stemming(self, asked: _Asked) -> None:
        if self._stem_probe is None or asked.query == self._stem_probe:
            return
        probe = self._asked.get(self._stem_probe)
        if probe is None or self._stem(probe.query) != self._stem(asked.query):
            return
        if not (probe.finished and probe.records and asked.records):
            return
        if not (self._was_capped(probe) or self._was_capped(asked)):
            self._site_stems = probe.records == asked.records
        self._stem_probe = None  # a capped pair tells nothing: a later pair may probe again

    def _best_term(self) -> str | None:
        """Return the term of the most rewarding frequency band, the most novel of it.

        A band is a range of relative document frequency (doubling from band to band). What a
        band brings per result page is learnt from the answers so far (recent ones weigh more),
        with an upper-confidence bonus for bands little tried (UCB1, Auer, Cesa-Bianchi and
        Fischer 2002); within the band, the term whose records the fewest queries reached.
        """
        count = len(self._term_words)
        frequency = self._frequency[:count]
        candidates = self._usable[:count] & (frequency > 0) & self._stem_allowed(count)
        if not candidates.any():
            return self._next_seed()
        held = len(self._records)
        bands = _bands(frequency, held)
        novelty = self._novelty[:count] / np.maximum(frequency, 1)
        tried = sum(self._band_pages.values())
        optimistic = float(max(self._page_size, 1)) * _OPTIMISM
        best_band, best_value = 0, -math.inf
        for band in np.unique(bands[candidates]).tolist():
            pages = self._band_pages.get(band, 0.0)
            if pages <= 0:
                value = optimistic  # an untried band is worth a try
            else:
                value = (
                    self._band_new[band] / pages
                    + _EXPLORATION * optimistic * math.sqrt(math.log(tried + 1.0) / pages) / 4.0
                )
            if value > best_value or (value == best_value and band > best_band):
                best_band, best_value = band, value
        in_band = candidates & (bands == best_band)
        score = np.where(in_band, novelty + 1e-6 * frequency, -np.inf)
        best = int(np.argmax(score))
        word = self._term_words[best]
        stem = self._term_stem_ids[best]
        if self._site_stems is None and stem in self._asked_stem_ids:
            self._stem_probe = next(
                (query for query in self._order if self._stem_id(query) == stem), None
            )
        return word

    def _stem_allowed(self, count: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Leave out terms whose word form was asked already once the site is known to match
        word forms alike, and while a same-stem probe waits for its answer."""
        blocking = self._site_stems is True or (
            self._site_stems is None and self._stem_probe is not None
        )
        if not blocking or not self._asked_stem_ids:
            return np.ones(count, dtype=bool)
        asked = np.fromiter(self._asked_stem_ids, dtype=np.int64)
        return ~np.isin(self._term_stem_ids[:count], asked)

    def replay(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Rebuild the planner from the events a crawl logged (``event`` dicts, see
        ``core.surfacing.journal``): a resumed crawl knows what it asked and reached."""
        for event in events:
            kind = event.get("event")
            query = str(event.get("query", ""))
            if kind == "chosen" and query not in self._asked:
                self._choose(query)
            elif kind == "page":
                count = event.get("count") or {}
                self.add_result_page(
                    query,
                    dict(event.get("records") or {}),
                    ResultCount(count.get("matches"), count.get("shown_cap"), count.get("total")),
                    has_next=bool(event.get("has_next")),
                )
            elif kind == "record_terms":
                self.add_record_terms(str(event.get("key", "")), list(event.get("words") or []))
            elif kind == "failed":
                self.add_failure(query)
            elif kind == "finished":
                self.finish(query)


def _band(frequency: int, held: int) -> int:
    """Return the frequency band of a term found in ``frequency`` of ``held`` records."""
    return math.floor(math.log2(max(frequency, 1) * 1024.0 / max(held, 1)))


def _bands(
    frequency: np.ndarray[Any, np.dtype[np.int64]], held: int
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Return ``_band`` of every term at once."""
    relative = np.maximum(frequency, 1) * 1024.0 / max(held, 1)
    return np.floor(np.log2(relative)).astype(np.int64)
