"""A page's answer from the index: the line ``websim match`` prints and the match service sends.

Both take a record prepared for the similarity stage (``core.stages``, in the worker pool),
rebuild its features with ``prepared_page`` and answer it with ``match_line``: one code path, so
the service's JSON is the command's line for the same page.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from websim_crawler.core.reference_index.index import MatchedReference, ReferenceIndex
from websim_crawler.core.similarity.comparison import PageFeatures
from websim_crawler.core.similarity.params import SimilarityRecord
from websim_crawler.core.similarity.portable import features_from_dict
from websim_crawler.errors import InputFormatError, PageError


class MatchLine(TypedDict):
    """A page's answer: its best references for the question, best first."""

    url: str | None
    question: str
    matches: list[MatchedReference]
    problems: NotRequired[list[str]]  # what of the page could not be used (HTML, screenshot)


def prepared_page(record: SimilarityRecord) -> PageFeatures:
    """Return the features of a record prepared for the similarity stage; raise ``PageError``
    with the reason it has none (``bad_features`` when they do not read back)."""
    reason = record.get("similarity_skipped")
    ready = record.get("similarity_features")
    if isinstance(reason, str) or ready is None:
        reason = str(reason or "no_features")
        raise PageError(reason, f"{record.get('url')}: {reason}")
    try:
        return features_from_dict(ready)
    except InputFormatError as exc:
        raise PageError("bad_features", f"{record.get('url')}: {exc}") from exc


def match_line(
    index: ReferenceIndex, page: PageFeatures, question: str | None = None, top: int | None = None
) -> MatchLine:
    """Return the page's best references of the index for ``question`` (``None``: as set)."""
    matches = index.query(page, question=question, top=top)
    line = MatchLine(
        url=page.url,
        question=index.asked(question).question,
        matches=[match.to_dict() for match in matches],
    )
    if page.problems:
        line["problems"] = list(page.problems)
    return line


def has_similar(line: MatchLine) -> bool:
    """Tell whether some reference of the line is ``similar``."""
    return any(match["verdict"] == "similar" for match in line["matches"])
