"""Text similarity: cosine of tf-idf vectors of the main content's stemmed keywords."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class InverseDocumentFrequency:
    """Smoothed idf(t) = ln((1 + N) / (1 + df(t))) + 1 over a collection of N keyword bags."""

    documents: int
    document_frequency: Mapping[str, int]
    # The tf-idf vector of each bag already weighed, by the bag's id (the bag is kept with it,
    # so its id is not reused): a page compared with many others is weighed once.
    _vectors: dict[tuple[int, bool], tuple[Mapping[str, int], dict[str, float]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def vector(self, keywords: Mapping[str, int], sublinear_tf: bool = True) -> dict[str, float]:
        """Return (and keep) the tf-idf vector of a keyword bag."""
        known = self._vectors.get((id(keywords), sublinear_tf))
        if known is None:
            known = (keywords, tfidf_vector(keywords, self, sublinear_tf=sublinear_tf))
            self._vectors[(id(keywords), sublinear_tf)] = known
        return known[1]

    @classmethod
    def fit(cls, keyword_bags: Iterable[Mapping[str, int]]) -> InverseDocumentFrequency:
        """Count in how many bags each keyword occurs."""
        frequency: dict[str, int] = {}
        documents = 0
        for bag in keyword_bags:
            documents += 1
            for term, count in bag.items():
                if count > 0:
                    frequency[term] = frequency.get(term, 0) + 1
        return cls(documents, frequency)

    def weight(self, term: str) -> float:
        """Return the idf of a term (a term never seen counts as occurring in no document)."""
        return math.log((1 + self.documents) / (1 + self.document_frequency.get(term, 0))) + 1.0


def tfidf_vector(
    keywords: Mapping[str, int], idf: InverseDocumentFrequency, *, sublinear_tf: bool = True
) -> dict[str, float]:
    """Return the tf-idf weights of a keyword bag (tf = 1 + ln(count) when ``sublinear_tf``)."""
    vector: dict[str, float] = {}
    for term, count in keywords.items():
        if count <= 0:
            continue
        tf = 1.0 + math.log(count) if sublinear_tf else float(count)
        vector[term] = tf * idf.weight(term)
    return vector


def cosine_similarity(first: Mapping[str, float], second: Mapping[str, float]) -> float:
    """Return the cosine of two sparse vectors (0.0 when either is all zero)."""
    if len(first) > len(second):
        first, second = second, first
    dot = sum(value * second.get(term, 0.0) for term, value in first.items())
    norm = math.sqrt(sum(v * v for v in first.values())) * math.sqrt(
        sum(v * v for v in second.values())
    )
    return 0.0 if norm == 0.0 else max(0.0, min(1.0, dot / norm))


def text_similarity(
    keywords_1: Mapping[str, int],
    keywords_2: Mapping[str, int],
    idf: InverseDocumentFrequency | None = None,
    *,
    sublinear_tf: bool = True,
) -> float:
    """Return the tf-idf cosine of two keyword bags; idf defaults to the two bags themselves."""
    idf = idf or InverseDocumentFrequency.fit((keywords_1, keywords_2))
    return cosine_similarity(
        idf.vector(keywords_1, sublinear_tf), idf.vector(keywords_2, sublinear_tf)
    )
