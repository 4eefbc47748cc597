"""Choosing the queries that surface a hidden database: which word to ask next, and when to stop.

Pure and deterministic: the spider reports what each result page showed (record links with their
result-page text, and the counts the page states), and asks for the next query. After Ntoulas,
Zerfos and Cho's adaptive crawler ("Downloading textual hidden web content through keyword
queries", JCDL 2005), the next query is the term expected to bring the most new records per
query; what a term of a given frequency brings is learnt from the site's own answers
(``core.surfacing.bands``), and within the best band the term of the records fewest queries
reached comes first (novelty: the mean of 1/captures over its records). The site's query
language is learnt too: whether it stems, whether it joins two words by AND or OR (under OR,
rare words are asked several at a time). On a site that caps its answers and lists them by
record id, the next word is instead the one whose answer is expected to show the most unseen
records under that order (``core.surfacing.order``). docs/surfacing.md tells the whole story.

It stops when the records reached cover the estimated size (``estimate``), when the last queries
brought almost nothing new, when no term is left, at the budget, or when the first queries all
fail or answer nothing. Everything it learns is rebuilt from the observations it was given, so a
resumed crawl replays them (``replay``) and asks nothing twice.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from websim_crawler.core.surfacing.answers import (
    Asked,
    CoveragePoint,
    QueryLogEntry,
    SurfacingEvent,
    observed_cap,
)
from websim_crawler.core.surfacing.bands import BandYields, band_of, bands_of
from websim_crawler.core.surfacing.counts import ResultCount
from websim_crawler.core.surfacing.estimate import SizeEstimate, capture_estimate, stated_estimate
from websim_crawler.core.surfacing.order import ListingOrder
from websim_crawler.core.surfacing.params import SurfacingParams
from websim_crawler.core.text import stemmer, stopwords, tokenize

_TERM = re.compile(r"[^\W\d_]{3,40}", re.UNICODE)  # letters only, 3 to 40 of them
_MAX_BUNDLE = 5  # words one OR query carries at most
_SEED_LIMIT = 400  # seed terms kept from the start page and the form
_MIN_QUERIES_FOR_COVERED = 8  # answers before "covered" is believed
ANSWERS_NOTHING = "the search answers nothing"  # why surfacing stopped when nothing came back


class QueryPlanner:
    """Choose queries for a hidden database and account for what they reached.

    Takes the site's answers (``add_result_page``: a result page's record keys and their text);
    ``next_query`` returns the next query (``str``), or ``None`` when a stopping rule holds.
    """

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
        self._asked: dict[str, Asked] = {}
        self._order: list[str] = []  # queries in the order they were chosen
        self._site_stems: bool | None = None  # does the site match word forms alike?
        self._stem_probe: str | None = None  # the asked query a same-stem probe repeats
        self._stated_total: int | None = None
        self._total_method = "stated"
        self._stated_cap: int | None = None
        self._cut_at_max_pages = False  # an answer went on past the max_pages pages read
        self._page_size = 0  # most records seen on one result page
        self._requests = 0
        self._recent_new: deque[int] = deque(maxlen=self.params.stall_queries)
        self._yields = BandYields()  # what each frequency band's queries brought
        self._listing = ListingOrder()  # whether answers are listed by record id
        self._semantics: str | None = None  # "and", "or" or "unknown": two words in one query
        self._semantics_probe: tuple[str, str, str] | None = None  # (query, first, second)
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
        entries: int | None = None,
    ) -> int:
        """Account for one result page of ``query``: its record keys with their result-page
        text, the counts it states, whether it leads to a next page and how many results it
        lists (``entries``, default one a record); return the records new to the crawl."""
        asked = self._asked_query(query)
        self._requests += 1
        asked.pages += 1
        asked.more_pages = has_next
        asked.entries += len(records) if entries is None else entries
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
        listed = []
        for key, text in records.items():
            index = self._records.get(key)
            if index is None:
                index = self._add_record(key, text)
                new += 1
            listed.append(index)
            if index not in asked.records:
                asked.records.add(index)
                self._capture(index)
        asked.new += new
        self._listing.observe(query, listed)
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
        added = []
        for word in dict.fromkeys(words):
            if not _TERM.fullmatch(word) or word in self._stop:
                continue
            term = self._term_id(word)
            if term is None or term in known:
                continue
            known.add(term)
            added.append(term)
            self._frequency[term] += 1
            if captures:
                self._novelty[term] += 1.0 / captures
        self._record_terms[index].extend(added)
        self._listing.add_terms(index, added)

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
        self._cut_at_max_pages |= asked.more_pages
        self._recent_new.append(asked.new)
        if " " not in query and asked.records_when_asked:
            self._listing.calibrate(
                asked.frequency_when_asked / asked.records_when_asked,
                sorted(asked.records),
                self._was_capped(asked),
            )
        band = band_of(asked.frequency_when_asked, asked.records_when_asked)
        self._yields.credit(band, asked.new, len(asked.records), asked.pages)
        self._learn_stemming(asked)
        self._learn_semantics(asked)

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
        query = self._semantics_query() or (
            self._best_term() if self._records else self._next_seed()
        )
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

    @property
    def site_semantics(self) -> str | None:
        """Return how the site joins two words of a query ("and", "or"), when known."""
        return self._semantics if self._semantics in ("and", "or") else None

    @property
    def site_order(self) -> str | None:
        """Return "ids ascending" or "ids descending" when every answer was listed so."""
        return {1: "ids ascending", -1: "ids descending"}.get(self._listing.direction or 0)

    def estimate(self) -> SizeEstimate:
        """Estimate the database size (see ``core.surfacing.estimate``)."""
        held = len(self._records)
        if self._stated_total is not None:
            return stated_estimate(self._stated_total, held, self._total_method)
        samples = sum(1 for asked in self._asked.values() if asked.records)
        return capture_estimate(self._captures, samples)

    def query_log(self) -> list[QueryLogEntry]:
        """Return every asked query with what it brought, in the order they were chosen."""
        answers = (self._asked[query] for query in self._order)
        return [asked.log_entry(self._was_capped(asked)) for asked in answers]

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

    def _asked_query(self, query: str) -> Asked:
        asked = self._asked.get(query)
        if asked is None:  # a query the crawl was given, or one replayed from a resumed crawl
            self._choose(query)
            asked = self._asked[query]
        return asked

    def _choose(self, query: str) -> None:
        """Count ``query`` asked; each of its words (several under OR) is not offered again."""
        words = query.split() if " " in query and not query.startswith("form: ") else [query]
        terms = [term for term in (self._terms.get(word) for word in words) if term is not None]
        frequency = max((int(self._frequency[term]) for term in terms), default=0)
        self._asked[query] = Asked(query, frequency, len(self._records))
        self._order.append(query)
        for word in words:
            self._asked_stem_ids.add(self._stem_id(word))
            if word in self._seeds:
                self._seeds.remove(word)
        for term in terms:
            self._usable[term] = False

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
        self._listing.add_record(key)
        self._listing.add_terms(index, term_ids)
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

    def _was_capped(self, asked: Asked) -> bool:
        shown = asked.shown
        if asked.matches is not None and asked.matches > shown:
            return True
        if asked.more_pages:  # stopped by max_pages
            return True
        cap = self._stated_cap or self._observed_cap(excluding=asked.query)
        return cap is not None and shown >= cap

    def _observed_cap(self, excluding: str | None = None) -> int | None:
        answers = (asked for asked in self._asked.values() if asked.query != excluding)
        return observed_cap(answers, self._page_size)

    def _learn_stemming(self, asked: Asked) -> None:
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

    def _semantics_query(self) -> str | None:
        """Return, once, two asked words in one query, to learn whether the site joins them by
        AND or by OR: two words whose whole answers are known, small and different."""
        if self._semantics is not None or self._semantics_probe is not None:
            return None
        limit = self._shown_limit()
        whole = [
            asked
            for asked in self._asked.values()
            if asked.finished
            and asked.records
            and not asked.failed
            and " " not in asked.query
            and not asked.query.startswith("form: ")
            and not self._was_capped(asked)
        ]
        for first, second in itertools.combinations(whole, 2):
            union = first.records | second.records
            if first.records != second.records and len(union) < limit:
                query = f"{first.query} {second.query}"
                self._semantics_probe = (query, first.query, second.query)
                asked = self._asked.get(query)
                if asked is None:
                    return query
                if asked.finished:  # asked before a resume: learn from its answer
                    self._learn_semantics(asked)
                return None
        return None

    def _learn_semantics(self, asked: Asked) -> None:
        probe = self._semantics_probe
        if probe is None or asked.query != probe[0]:
            return
        first, second = self._asked[probe[1]].records, self._asked[probe[2]].records
        if asked.records == first | second:
            self._semantics = "or"
        elif asked.records == first & second:
            self._semantics = "and"
        else:
            self._semantics = "unknown"

    def _shown_limit(self) -> float:
        """Return how many records one answer can show: the site's cap, ``max_pages`` pages."""
        limit = float(self.max_pages * max(self._page_size, 1))
        cap = self.site_cap
        return min(limit, float(cap)) if cap is not None else limit

    def _bundle_size(self, band: int) -> int:
        """Return how many words of a band one query can carry: under OR semantics, as many as
        fill four fifths of an answer by what the band's answers showed (at most 5)."""
        shown = self._yields.shown_per_query(band)
        if self._semantics != "or" or shown is None:
            return 1
        return max(1, min(_MAX_BUNDLE, int(0.8 * self._shown_limit() / max(shown, 1.0))))

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
        novelty = self._novelty[:count] / np.maximum(frequency, 1)
        if self._listing.direction is not None and (self.site_cap or self._cut_at_max_pages):
            return self._listed_terms(np.flatnonzero(candidates), novelty)
        bands = bands_of(frequency, held)
        best_band = self._yields.best(np.unique(bands[candidates]).tolist(), self._page_size)
        in_band = candidates & (bands == best_band)
        score = np.where(in_band, novelty + 1e-6 * frequency, -np.inf)
        bundle = self._bundle_size(best_band)
        if bundle > 1:
            words: list[str] = []
            stems: set[int] = set()
            for term in np.argsort(-score, kind="stable")[: bundle * 4].tolist():
                if math.isfinite(float(score[term])) and self._term_stem_ids[term] not in stems:
                    words.append(self._term_words[term])
                    stems.add(int(self._term_stem_ids[term]))
                if len(words) == bundle:
                    break
            if len(words) > 1:
                return " ".join(words)
        best = int(np.argmax(score))
        word = self._term_words[best]
        stem = self._term_stem_ids[best]
        if self._site_stems is None and stem in self._asked_stem_ids:
            self._stem_probe = next(
                (query for query in self._order if self._stem_id(query) == stem), None
            )
        return word

    def _listed_terms(
        self, candidates: np.ndarray[Any, np.dtype[np.int64]], novelty: np.ndarray[Any, Any]
    ) -> str:
        """Return the term whose answer is expected to show the most unseen records, given the
        order the site lists answers in (``core.surfacing.order``); one word a query, also
        under OR: two words' answer ends sooner in the order, where fewer records are unseen."""
        limit = int(self._shown_limit())
        held = len(self._records)
        # Records few answers showed resemble the unseen ones (Good and Turing); the square
        # root tempers it: over the gallery's capped databases it reached more than either
        # the full ratio or none.
        likeness = np.sqrt(novelty[candidates] * held / max(self._novelty_total, 1e-9))
        expected = self._listing.expected_new(candidates, limit, self._captures, likeness)
        return self._term_words[int(candidates[np.lexsort((-novelty[candidates], -expected))[0]])]

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

    def replay(self, events: Iterable[SurfacingEvent]) -> None:
        """Rebuild the planner from the events a crawl logged (``event`` dicts, see
        ``core.surfacing.journal``): a resumed crawl knows what it asked and reached."""
        for event in events:
            kind = event.get("event")
            query = str(event.get("query", ""))
            if kind == "chosen" and query not in self._asked:
                self._choose(query)
            elif kind == "page":
                self.add_result_page(
                    query,
                    dict(event.get("records") or {}),
                    ResultCount.of_event(event.get("count")),
                    has_next=bool(event.get("has_next")),
                    entries=event.get("entries"),
                )
            elif kind == "record_terms":
                self.add_record_terms(str(event.get("key", "")), list(event.get("words") or []))
            elif kind == "failed":
                self.add_failure(query)
            elif kind == "finished":
                self.finish(query)
