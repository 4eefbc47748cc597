"""The end-of-crawl diagnosis of a deep-web crawl: did the records come from the result lists?

A crawl that took a page's chrome ("view as SQL", an export link) for its records, or found
records on few of its result pages, still ends normally: the diagnosis tells. It counts the
record links per URL pattern, the result pages without records, the record links whose pattern
is on every result page (chrome, see ``ResultListMemory``) and the queries that found nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from websim_crawler.core.crawling.records import ResultRecords
from websim_crawler.core.crawling.shapes import url_shape

_SHOWN_PATTERNS = 5  # record patterns named in the log line


@dataclass(frozen=True)
class Diagnosis:
    """What the result pages of a crawl gave (counts of record links, not distinct records)."""

    result_pages: int
    result_pages_without_records: int
    result_pages_empty: int
    result_lists: int
    pages_with_several_lists: int
    records_by_pattern: dict[str, int]
    records_from_regions: int
    records_by_pattern_only: int
    chrome_like_records: int
    queries: int
    queries_without_records: tuple[str, ...]

    @property
    def records(self) -> int:
        """Return how many record links the result pages gave."""
        return self.records_from_regions + self.records_by_pattern_only

    def warning(self) -> str | None:
        """Return one line saying why the records look wrong, or ``None``."""
        problems = []
        if self.chrome_like_records and self.chrome_like_records * 2 >= self.records:
            problems.append(
                f"{self.chrome_like_records} of {self.records} record links have a pattern "
                "found on every result page (page chrome, not results)"
            )
        with_results = self.result_pages - self.result_pages_empty
        if with_results and self.result_pages_without_records * 2 > with_results:
            problems.append(
                f"{self.result_pages_without_records} of {with_results} result pages "
                "that did not say they were empty had no records"
            )
        if not problems:
            return None
        return "the records look wrong: " + "; ".join(problems)

    def failure(self) -> str | None:
        """Return why the crawl found no records in any result list, or ``None``."""
        if not self.result_pages or self.records_from_regions:
            return None
        if self.result_pages_empty == self.result_pages:
            return f"every one of the {self.result_pages} result pages says it found nothing"
        return (
            f"no record came from a data region of the {self.result_pages} result pages "
            f"({self.records_by_pattern_only} links taken by URL pattern alone)"
        )

    def summary(self) -> str:
        """Return the diagnosis in one line for the log."""
        shown = ", ".join(
            f"{pattern}: {count}"
            for pattern, count in sorted(
                self.records_by_pattern.items(), key=lambda item: (-item[1], item[0])
            )[:_SHOWN_PATTERNS]
        )
        return (
            f"{self.result_pages} result pages ({self.result_pages_empty} empty, "
            f"{self.result_pages_without_records} without records found, "
            f"{self.pages_with_several_lists} with several lists), {self.records} record links "
            f"({self.result_lists} lists, {self.records_from_regions} from data "
            f"regions, {self.chrome_like_records} chrome-like) by pattern {{{shown}}}, "
            f"{len(self.queries_without_records)} of {self.queries} queries found nothing"
        )

    def stats(self) -> dict[str, int]:
        """Return the diagnosis as ``websim/diagnosis/...`` stats."""
        return {
            "websim/diagnosis/result_pages": self.result_pages,
            "websim/diagnosis/result_pages_without_records": self.result_pages_without_records,
            "websim/diagnosis/result_pages_empty": self.result_pages_empty,
            "websim/diagnosis/result_lists": self.result_lists,
            "websim/diagnosis/result_pages_with_several_lists": self.pages_with_several_lists,
            "websim/diagnosis/records/from_region": self.records_from_regions,
            "websim/diagnosis/records/by_pattern_only": self.records_by_pattern_only,
            "websim/diagnosis/records/chrome_like": self.chrome_like_records,
            "websim/diagnosis/record_patterns": len(self.records_by_pattern),
            "websim/diagnosis/queries_without_records": len(self.queries_without_records),
            "websim/diagnosis/warning": int(self.warning() is not None),
            "websim/diagnosis/no_data_region": int(self.failure() is not None),
        }


class CrawlDiagnosis:
    """Collect the records of each result page of a crawl; ``finish`` gives the ``Diagnosis``.

    At most ``max_patterns`` record patterns and ``max_queries`` queries are told apart; the
    rest are counted together (``dropped``).
    """

    def __init__(self, max_patterns: int = 1000, max_queries: int = 100_000) -> None:
        self.max_patterns = max_patterns
        self.max_queries = max_queries
        self.dropped = 0
        self._result_pages = 0
        self._without_records = 0
        self._empty = 0
        self._lists = 0
        self._several_lists = 0
        self._from_regions = 0
        self._by_pattern_only = 0
        self._patterns: Counter[str] = Counter()
        self._pattern_only: Counter[str] = Counter()  # records by pattern alone, per pattern
        self._query_records: dict[str, int] = {}

    def add_result_page(self, query: str, found: ResultRecords) -> None:
        """Count one result page of ``query`` and the records found on it.

        A page without records is empty when it says it found nothing, or when an earlier page
        of its query had records (a pager followed past the last result); else its records
        were not found.
        """
        self._result_pages += 1
        self._lists += len(found.regions)
        self._several_lists += len(found.regions) > 1
        if not found.links:
            if found.says_empty or self._query_records.get(query, 0):
                self._empty += 1
            else:
                self._without_records += 1
        if found.region is not None:
            self._from_regions += len(found.links)
        else:
            self._by_pattern_only += len(found.links)
        for link in found.links:
            pattern = url_shape(link)
            if pattern in self._patterns or len(self._patterns) < self.max_patterns:
                self._patterns[pattern] += 1
                if found.region is None:
                    self._pattern_only[pattern] += 1
            else:
                self.dropped += 1
        if query in self._query_records or len(self._query_records) < self.max_queries:
            self._query_records[query] = self._query_records.get(query, 0) + len(found.links)
        else:
            self.dropped += 1

    def finish(self, chrome_patterns: frozenset[str]) -> Diagnosis:
        """Return the diagnosis; ``chrome_patterns`` are the patterns on every result page."""
        return Diagnosis(
            result_pages=self._result_pages,
            result_pages_without_records=self._without_records,
            result_pages_empty=self._empty,
            result_lists=self._lists,
            pages_with_several_lists=self._several_lists,
            records_by_pattern=dict(self._patterns),
            records_from_regions=self._from_regions,
            records_by_pattern_only=self._by_pattern_only,
            chrome_like_records=sum(
                count for pattern, count in self._pattern_only.items() if pattern in chrome_patterns
            ),
            queries=len(self._query_records),
            queries_without_records=tuple(
                query for query, records in self._query_records.items() if not records
            ),
        )
