"""The ``deepweb`` spider's side of surfacing: feeds the query planner, journals, counts, reports.

Thin: what to ask and when to stop is ``core.surfacing.QueryPlanner``'s; this class turns the
spider's result pages into the planner's observations, keeps the JOBDIR journal, and writes the
stats and the end-of-crawl line.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from lxml import etree

from websim_crawler.config.distributed import DistributedParams
from websim_crawler.core.crawling import ResultRecords
from websim_crawler.core.surfacing import (
    ANSWERS_NOTHING,
    FormInput,
    FormPlan,
    QueryPlanner,
    ResultCount,
    SurfacingEvent,
    SurfacingParams,
    record_key,
    record_snippets,
    result_count,
)
from websim_crawler.core.text import detect_language
from websim_crawler.distributed.surfacing_journal import SharedSurfacingJournal
from websim_crawler.frontier.surfacing_journal import SurfacingJournal

logger = logging.getLogger(__name__)


class Surfacing:
    """Choose the queries of a deepweb crawl that was given none (``-a queries=auto``)."""

    def __init__(
        self,
        params: SurfacingParams,
        *,
        max_pages: int,
        given: Iterable[str] = (),
        journal: SurfacingJournal | SharedSurfacingJournal | None = None,
    ) -> None:
        self.params = params
        self.max_pages = max_pages
        self.given = list(given)
        self.journal = journal
        self.planner: QueryPlanner | None = None
        self.form_plan: FormPlan | None = None
        self.query_field = ""
        self._verdicts_logged = False

    @classmethod
    def of(
        cls,
        params: SurfacingParams,
        settings: Any,
        *,
        max_queries: int | None,
        max_pages: int,
        given: Iterable[str],
        distributed: DistributedParams | None = None,
        spider_name: str = "deepweb",
    ) -> Surfacing:
        """Build the surfacing of a crawl (``max_queries`` overrides the setting); with
        ``distributed`` (a Redis crawl) its journal is the workers' shared one."""
        if max_queries is not None:
            params = dataclasses.replace(params, max_queries=max_queries)
        journal: SurfacingJournal | SharedSurfacingJournal | None = SurfacingJournal.of(settings)
        if distributed is not None and distributed.redis_url is not None:
            journal = SharedSurfacingJournal.of(distributed, spider_name)
        return cls(params, max_pages=max_pages, given=given, journal=journal)

    def begin(
        self,
        page_text: str,
        form_text: str,
        form: tuple[list[FormInput], dict[str, str], str] | None = None,
    ) -> None:
        """Start the planner in the site's language, seeded by the given queries, the search
        form's own words and the start page's; with the form's other inputs (``form``: its
        inputs, the fixed values of its required typed inputs, its query field), probe its
        selects, radios and checkboxes first. An earlier run of the JOBDIR, or the other workers'
        events in Redis, are replayed."""
        language = detect_language(page_text or form_text)
        planner = QueryPlanner(self.params, language=language, max_pages=self.max_pages)
        for text in (" ".join(self.given), form_text, page_text):
            planner.seed(text)
        if form is not None:
            inputs, fixed, self.query_field = form
            plan = FormPlan(inputs, fixed, self.query_field, self.params.max_input_values)
            self.form_plan = plan if plan.inputs else None
        self.planner = planner
        self._catch_up()
        if planner.queries:
            logger.info(
                "deepweb surfacing: %s with %d queries asked, %d records reached",
                "joined the other workers" if self._shared else "resumed",
                planner.queries,
                planner.records,
            )
        logger.info(
            "deepweb surfacing: choosing up to %d queries (language %s), %d at a time",
            self.params.max_queries,
            language,
            self.params.concurrent_queries,
        )

    def next_queries(self) -> list[str]:
        """Return the queries to submit now: as many as keep ``concurrent_queries`` in flight.

        The form's other inputs are probed and used first (``form_plan``); then words."""
        planner = self.planner
        if planner is None:
            return []
        self._catch_up()
        chosen: list[str] = []
        plan = self.form_plan
        while len(planner.in_flight()) < self.params.concurrent_queries:
            if plan is not None and plan.pending():
                key = plan.next_submission()
                self._log_verdicts()
                if key is None or not planner.submit(key):
                    break  # waiting for the probes' answers, or surfacing is over
                query: str | None = key
            else:
                query = planner.next_query()
            if query is None:
                break
            if self.journal is not None and not self.journal.claim(query):
                continue  # another worker chose it first: its answer comes through the journal
            self._journal({"event": "chosen", "query": query})
            chosen.append(query)
        return chosen

    def fields(self, query: str) -> dict[str, str] | None:
        """Return the form fields a chosen query sends (``None``: the query box alone)."""
        return self.form_plan.fields_of(query) if self.form_plan is not None else None

    def _log_verdicts(self) -> None:
        plan = self.form_plan
        if plan is None or self._verdicts_logged or not plan.verdicts:
            return
        self._verdicts_logged = True
        for name, (informative, why) in plan.verdicts.items():
            logger.info(
                "deepweb surfacing: input %r %s: %s",
                name,
                "is informative, its values are submitted" if informative else "is left as it is",
                why,
            )

    def _apply(self, event: SurfacingEvent) -> None:
        """Apply one event (this process's, a resumed run's or another worker's)."""
        assert self.planner is not None
        self.planner.replay([event])
        plan, query = self.form_plan, str(event.get("query", ""))
        if plan is None:
            return
        if event.get("event") == "chosen":
            plan.replay_chosen(query)
        elif event.get("event") == "page":
            plan.observe(
                query,
                list(event.get("records") or {}),
                ResultCount.of_event(event.get("count")),
                bool(event.get("has_next")),
            )
        elif event.get("event") == "finished":
            plan.finish(query, self.planner.was_capped(query))
            total = plan.partition_total()
            if total is not None:
                self.planner.note_total(total)

    @property
    def _shared(self) -> bool:
        return self.journal is not None and self.journal.shared

    def _catch_up(self) -> None:
        """Apply the events this process has not seen: a resumed run's, other workers'."""
        if self.journal is not None and self.planner is not None:
            for event in self.journal.new_events():
                self._apply(event)

    def _emit(self, event: SurfacingEvent) -> None:
        """Record an event: applied and journaled; through the shared journal with Redis, so
        every worker applies the events in one order."""
        if self._shared:  # (a worker may fetch others' result pages before its own start page)
            self._journal(event)
            self._catch_up()
        elif self.planner is not None:
            self._apply(event)
            self._journal(event)

    def result_page(
        self,
        query: str,
        root: etree._Element,
        url: str,
        found: ResultRecords,
        *,
        has_next: bool,
    ) -> bool:
        """Account for a result page; return whether its next page is to be fetched (every
        answer is read to its end, within ``max_pages``). Its results are its result lists'
        items (a record listed in several counts in each), else its record links."""
        snippets = record_snippets(root, url, found.links, self.params.snippet_chars)
        records = {record_key(link, query): snippets.get(link, "") for link in found.links}
        count = result_count(root)
        entries = sum(region.items for region in found.regions) or len(found.links)
        self._emit(
            {
                "event": "page",
                "query": query,
                "records": records,
                "count": {
                    "matches": count.matches,
                    "shown_cap": count.shown_cap,
                    "total": count.database_total,
                },
                "has_next": has_next,
                "entries": entries,
            }
        )
        return has_next

    def failed(self, query: str) -> None:
        """Account for a result page the site answered with an error."""
        self._emit({"event": "failed", "query": query})

    def finished(self, query: str) -> None:
        """Mark a query's answer complete."""
        self._emit({"event": "finished", "query": query})

    def finish_dangling(self) -> None:
        """Mark complete every query still waiting (the crawl went idle: nothing more comes).
        Not with Redis: a waiting query may be another worker's, and a dead worker's leased
        requests come back."""
        if self.planner is not None and not self._shared:
            for query in self.planner.in_flight():
                self.finished(query)

    def record_page(self, url: str, query: str, keywords: Mapping[str, Any] | None) -> None:
        """Add an analysed record page's keywords to its record's terms."""
        if not keywords:
            return
        key = record_key(url, query)
        self._emit({"event": "record_terms", "key": key, "words": [str(word) for word in keywords]})

    def close(self, stats: Any) -> None:
        """Log the end-of-crawl line and keep the outcome in the stats."""
        if self.journal is not None:
            self.journal.close()
        planner = self.planner
        if planner is None:
            return
        self._catch_up()
        estimate = planner.estimate()
        values: dict[str, Any] = {
            "websim/surfacing/queries": planner.queries,
            "websim/surfacing/result_pages": planner.requests,
            "websim/surfacing/records": planner.records,
            "websim/surfacing/estimate": estimate.size,
            "websim/surfacing/estimate_low": estimate.low,
            "websim/surfacing/estimate_high": estimate.high,
            "websim/surfacing/estimate_method": estimate.method,
            "websim/surfacing/stopped": planner.stopped or "crawl ended",
            "websim/surfacing/query_log": planner.query_log(),
            "websim/surfacing/curve": [[point.requests, point.records] for point in planner.curve],
        }
        if planner.site_cap is not None:
            values["websim/surfacing/site_cap"] = planner.site_cap
        if planner.site_semantics is not None:
            values["websim/surfacing/site_semantics"] = planner.site_semantics
        if planner.site_stems is not None:
            values["websim/surfacing/site_stems"] = planner.site_stems
        if planner.site_order is not None:
            values["websim/surfacing/site_order"] = planner.site_order
        if planner.terms_dropped:
            values["websim/surfacing/terms_dropped"] = planner.terms_dropped
        if planner.stopped == ANSWERS_NOTHING:
            values["websim/surfacing/answers_nothing"] = 1
        for key, value in values.items():
            stats.set_value(key, value)
        if planner.stopped == ANSWERS_NOTHING:
            logger.error(
                "deepweb surfacing: the search answered nothing to its first %d queries (errors "
                "or empty result pages); give queries with -a queries=... if the site needs "
                "particular words",
                planner.queries,
            )
        else:
            logger.info("deepweb surfacing: %s", planner.summary())

    def _journal(self, event: SurfacingEvent) -> None:
        if self.journal is not None:
            self.journal.append(event)
