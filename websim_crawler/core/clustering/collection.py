"""The pages a clustering collects, kept compactly: term ids and counts as CSR parts, URLs and
titles.

A million feed pages held as Python dicts of keywords take gigabytes. Here a page costs its URL
and, per keyword, a term id (4 bytes) and a count (8 bytes) in growing ``array`` buffers; the
vocabulary maps each term to its id once. The surface forms the report shows for a stem are added
up over the collection as the pages come, not kept per page: every page votes for its forms, so
the totals are those a page-by-page count would give.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping

import numpy as np

from websim_crawler.core.clustering.vectorize import TfidfMatrix, tfidf_rows


class PageCollection:
    """URLs, keyword counts (CSR parts over a term vocabulary) and surface-form votes per stem."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.titles: list[str | None] = []  # the pages' titles, for the report (None: none)
        self.term_ids: dict[str, int] = {}
        # stem -> surface form -> summed count over the pages whose text was given
        self.form_votes: dict[str, dict[str, float]] = {}
        self._indptr = array("q", [0])
        self._term_of_count = array("i")
        self._counts = array("d")
        self._counts_taken = False

    def __len__(self) -> int:
        return len(self.urls)

    def append(
        self,
        url: str,
        keywords: Mapping[str, float],
        forms: Mapping[str, Mapping[str, int]] | None = None,
        title: str | None = None,
    ) -> None:
        """Add one page: its keyword counts (only positive counts are kept) and, when its text
        was given, the surface forms of its stems (a stem missing from ``forms`` appears only as
        itself)."""
        if self._counts_taken:
            raise ValueError("the counts of this collection were already turned into tf-idf")
        term_ids = self.term_ids
        for term, count in keywords.items():
            if not count > 0:
                continue
            term_id = term_ids.get(term)
            if term_id is None:
                term_id = term_ids[term] = len(term_ids)
            self._term_of_count.append(term_id)
            self._counts.append(count)
        self._indptr.append(len(self._counts))
        self.urls.append(url)
        self.titles.append(title)
        if forms is not None:
            for stem, count in keywords.items():
                votes = self.form_votes.setdefault(stem, {})
                for form, form_count in forms.get(stem, {stem: count}).items():
                    votes[form] = votes.get(form, 0.0) + form_count

    def keyword_counts(self, row: int) -> dict[str, float]:
        """Return the keyword counts of one page, as collected (before ``take_tfidf``)."""
        terms = list(self.term_ids)
        start, end = self._indptr[row], self._indptr[row + 1]
        return {terms[self._term_of_count[at]]: self._counts[at] for at in range(start, end)}

    def surface_terms(self, stems: set[str]) -> dict[str, str]:
        """Return each stem's most frequent surface form over the pages whose text was given (the
        stem itself when none was; ties go to the alphabetically first form)."""
        terms = {}
        for stem in stems:
            votes = self.form_votes.get(stem)
            terms[stem] = (
                min(votes.items(), key=lambda item: (-item[1], item[0]))[0] if votes else stem
            )
        return terms

    def take_tfidf(
        self,
        *,
        min_df: int = 2,
        max_df: float = 0.95,
        max_features: int | None = None,
        sublinear_tf: bool = True,
    ) -> TfidfMatrix:
        """Turn the counts into the pages' tf-idf rows (``vectorize.tfidf_rows``, the formula of
        ``tfidf_vectors``) and free them: the collection keeps its URLs and form votes only, so
        a million pages' counts and their tf-idf rows are not held side by side while clustering.
        """
        if self._counts_taken:
            raise ValueError("the counts of this collection were already turned into tf-idf")
        tfidf = tfidf_rows(
            np.frombuffer(self._indptr, dtype=np.int64),
            np.frombuffer(self._term_of_count, dtype=np.int32),
            np.frombuffer(self._counts, dtype=np.float64),
            list(self.term_ids),
            min_df=min_df,
            max_df=max_df,
            max_features=max_features,
            sublinear_tf=sublinear_tf,
        )
        self._indptr, self._term_of_count, self._counts = array("q"), array("i"), array("d")
        self._counts_taken = True
        return tfidf
