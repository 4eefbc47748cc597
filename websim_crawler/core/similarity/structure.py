"""Structural and style similarity with the interface and values of html-similarity 0.5.0.

Differences on purpose: documents are parsed once (pass a ``ParsedDocument`` to compare a page
with many others), ``difflib`` runs without its autojunk heuristic (which gives wrong ratios past
200 tags), processing instructions and entities get labels instead of errors, and bytes are
decoded by their declared or detected charset.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from rapidfuzz.distance import Indel

from websim_crawler.core.similarity.documents import (
    LayoutInput,
    ParsedDocument,
    as_parsed_document,
    pq_gram_profile,
)
from websim_crawler.errors import ConfigError

STRUCTURAL_ALGORITHMS = ("indel", "pq_gram", "difflib")


def get_tags(document: LayoutInput) -> list[str]:
    """Return the node labels of a document in document order."""
    return as_parsed_document(document).tags


def get_classes(document: LayoutInput) -> set[str]:
    """Return the CSS class names a document uses."""
    return set(as_parsed_document(document).classes)


def jaccard_similarity(first: Iterable[Any], second: Iterable[Any]) -> float:
    """Return |A & B| / |A | B| of two collections taken as sets (1.0 when both are empty)."""
    set_a, set_b = set(first), set(second)
    if not set_a and not set_b:
        return 1.0
    common = len(set_a & set_b)
    return common / (len(set_a) + len(set_b) - common)


def get_pq_grams(document: LayoutInput, p: int = 2, q: int = 3) -> dict[tuple[str, ...], int]:
    """Return the pq-gram profile of a document as a bag ``{gram: count}``."""
    parsed = as_parsed_document(document)
    if (p, q) == (2, 3):
        return dict(parsed.pq_grams)
    return dict(pq_gram_profile(parsed.root, p, q))


def structural_similarity(
    document_1: LayoutInput, document_2: LayoutInput, algorithm: str = "indel"
) -> float:
    """Return the structural similarity of two documents in [0, 1].

    ``indel``: 1 - Indel distance / total length of the tag sequences; ``difflib``: the same
    matching-blocks ratio from ``difflib`` (without autojunk); ``pq_gram``: Dice coefficient of
    the pq-gram bags (Augsten et al., 2005).
    """
    if algorithm not in STRUCTURAL_ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {STRUCTURAL_ALGORITHMS}, got {algorithm!r}")
    first, second = as_parsed_document(document_1), as_parsed_document(document_2)
    if algorithm == "indel":
        return float(Indel.normalized_similarity(first.tag_string, second.tag_string))
    if algorithm == "difflib":
        matcher = difflib.SequenceMatcher(None, first.tag_string, second.tag_string, False)
        return matcher.ratio()
    return pq_gram_similarity(first, second)


def pq_gram_similarity(first: ParsedDocument, second: ParsedDocument) -> float:
    """Return the Dice coefficient of two pq-gram bags (1 - Augsten's normalised distance)."""
    total = first.pq_gram_count + second.pq_gram_count
    if total == 0:
        return 1.0
    small, large = sorted((first.pq_grams, second.pq_grams), key=len)
    common = sum(min(count, large.get(gram, 0)) for gram, count in small.items())
    return 2 * common / total


def style_similarity(document_1: LayoutInput, document_2: LayoutInput) -> float:
    """Return the Jaccard similarity of the CSS class sets (Gowda and Mattmann, 2016)."""
    return jaccard_similarity(
        as_parsed_document(document_1).classes, as_parsed_document(document_2).classes
    )


def similarity(
    document_1: LayoutInput, document_2: LayoutInput, k: float = 0.5, algorithm: str = "indel"
) -> float:
    """Return the joint similarity k * structural + (1 - k) * style (Gowda and Mattmann, 2016)."""
    if not 0.0 <= k <= 1.0:
        raise ConfigError(f"k must be in [0, 1], got {k!r}")
    first, second = as_parsed_document(document_1), as_parsed_document(document_2)
    structural = structural_similarity(first, second, algorithm)
    return k * structural + (1 - k) * style_similarity(first, second)
