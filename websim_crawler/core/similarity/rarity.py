"""Rarity across references: what a reference shares with many others tells little about it.

A toolkit that restyles every brand with its own page skeleton makes its pages alike in layout
(the same tags, attribute names, nesting and class names) and in links, whatever brand each one
imitates; a page's brand is in what few references have. ``rarity_weight`` is the weight of a
feature that ``count`` of ``references`` have: log(N / count) / log(N), 1 for a feature of one
reference (or none), 0 for a feature all have (the IDF the brand words are weighed by, too).

``template_features`` are a page's template features: each rendered element's shape (its tag
with its attribute names), each parent-child pair of tags and each class name, with their
counts. ``TemplateRarity`` counts the references having each template feature and each link
(as 64-bit hashes, in sorted arrays an index stores), and ``rare_template_similarity`` and
``rare_link_similarity`` are the layout and links stages with every feature so weighed: the
cosine of the two pages' weighted feature counts (sublinear: 1 + ln(count)), and the Jaccard of
their link sets, each link counting its weight.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.similarity.documents import ParsedDocument
from websim_crawler.core.similarity.links import SetSimilarity
from websim_crawler.errors import InputFormatError

# Shared template features named in a comparison's detail, strongest first.
SHOWN_FEATURES = 3


def rarity_weight(references: int, count: int) -> float:
    """Return log(N/count)/log(N) for a feature ``count`` of ``references`` have: 1 for one
    reference's (or none's), 0 for all's."""
    if references < 2 or count <= 1:
        return 1.0
    return max(0.0, math.log(references / count) / math.log(references))


def feature_hash(feature: str) -> int:
    """Return a feature's 64-bit hash (BLAKE2b), as an index stores it."""
    return int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8", "replace"), digest_size=8).digest()
    )


def template_features(document: ParsedDocument | None) -> Counter[str]:
    """Return a page's template features with their counts: ``tag[attribute names]`` of each
    rendered element, ``parent>child`` of each pair of tags and ``.name`` of each class name."""
    features: Counter[str] = Counter()
    if document is None:
        return features
    vertices = document.vertices
    for tag, names, children in zip(
        vertices.tags, vertices.attributes, vertices.children, strict=True
    ):
        features[f"{tag}[{','.join(sorted(names))}]"] += 1
        for child in children:
            features[f"{tag}>{vertices.tags[child]}"] += 1
    features.update(f".{name}" for name in document.classes)
    return features


def _link_feature(link: str) -> str:
    return f"link {link}"


class TemplateRarity:
    """How many references have each template feature and each link (hashed), so a stage can
    weigh a feature by ``rarity_weight``.

    Kept as sorted hashes with their counts (what an index file stores); the references added
    since are counted aside and merged on the next look-up.
    """

    def __init__(
        self,
        references: int = 0,
        hashes: NDArray[np.uint64] | None = None,
        counts: NDArray[np.int32] | None = None,
    ) -> None:
        self.references = references
        self.hashes: NDArray[np.uint64] = np.zeros(0, np.uint64) if hashes is None else hashes
        self.counts: NDArray[np.int32] = np.zeros(0, np.int32) if counts is None else counts
        self._added: Counter[int] = Counter()

    def add(self, document: ParsedDocument | None, links: Iterable[str]) -> None:
        """Count one reference's template features and links."""
        self.references += 1
        features = [*template_features(document), *map(_link_feature, links)]
        self._added.update(set(map(feature_hash, features)))

    def arrays(self) -> tuple[NDArray[np.uint64], NDArray[np.int32]]:
        """Return the sorted feature hashes and how many references have each."""
        if self._added:
            added = np.fromiter(self._added, np.uint64, len(self._added))
            counts = np.fromiter(self._added.values(), np.int32, len(self._added))
            hashes = np.concatenate([self.hashes, added])
            unique, where = np.unique(hashes, return_inverse=True)
            merged = np.zeros(len(unique), np.int32)
            np.add.at(merged, where, np.concatenate([self.counts, counts]))
            self.hashes, self.counts = unique, merged
            self._added = Counter()
        return self.hashes, self.counts

    def weights(self, features: Iterable[str]) -> dict[str, float]:
        """Return the rarity weight of each feature."""
        names = list(dict.fromkeys(features))
        hashes, counts = self.arrays()
        if not names or not len(hashes):
            return dict.fromkeys(names, 1.0)
        wanted = np.fromiter(map(feature_hash, names), np.uint64, len(names))
        places = np.minimum(np.searchsorted(hashes, wanted), len(hashes) - 1)
        found = np.where(hashes[places] == wanted, counts[places], 0)
        return {
            name: rarity_weight(self.references, int(count))
            for name, count in zip(names, found, strict=True)
        }

    def check(self, source: str) -> None:
        """Raise ``InputFormatError`` unless the arrays are sorted unique hashes with counts of
        at most ``references``."""
        hashes, counts = self.hashes, self.counts
        fits = (
            hashes.dtype == np.uint64
            and counts.dtype == np.int32
            and hashes.shape == counts.shape
            and hashes.ndim == 1
            and not bool((hashes[1:] <= hashes[:-1]).any())
            and (not len(counts) or 1 <= int(counts.min()) <= int(counts.max()) <= self.references)
        )
        if not fits:
            raise InputFormatError(f"{source}: the template feature counts do not fit")


def _weighted(features: Mapping[str, int], weights: Mapping[str, float]) -> dict[str, float]:
    return {name: (1.0 + math.log(count)) * weights[name] for name, count in features.items()}


def rare_template_similarity(
    first: ParsedDocument | None,
    second: ParsedDocument | None,
    rarity: TemplateRarity | None = None,
) -> tuple[float, int, str]:
    """Return the layout stage's (score, support, detail) with each template feature weighed by
    its rarity (every feature alike without ``rarity``): the cosine of the weighted counts."""
    features_1, features_2 = template_features(first), template_features(second)
    support = len(features_1.keys() | features_2.keys())
    if not features_1 or not features_2:
        return 0.0, support, "rare template features: empty page"
    weights = (rarity or TemplateRarity()).weights([*features_1, *features_2])
    vector_1, vector_2 = _weighted(features_1, weights), _weighted(features_2, weights)
    shared = {name: vector_1[name] * vector_2[name] for name in vector_1.keys() & vector_2.keys()}
    norm = math.sqrt(sum(v * v for v in vector_1.values()) * sum(v * v for v in vector_2.values()))
    score = min(1.0, sum(shared.values()) / norm) if norm > 0 else 0.0
    strongest = sorted((n for n in shared if shared[n] > 0), key=lambda n: (-shared[n], n))
    named = ", ".join(strongest[:SHOWN_FEATURES]) or "none"
    return score, support, f"rare template features of {support}; shared most: {named}"


def rare_link_similarity(
    links_1: frozenset[str], links_2: frozenset[str], rarity: TemplateRarity | None = None
) -> SetSimilarity:
    """Return the Jaccard of two link sets with each link counting its rarity weight, with its
    support (the links of either page)."""
    union = links_1 | links_2
    if not union:
        return SetSimilarity(0.0, 0)
    weights = (rarity or TemplateRarity()).weights(map(_link_feature, union))
    total = sum(weights.values())
    common = sum(weights[_link_feature(link)] for link in links_1 & links_2)
    return SetSimilarity(common / total if total > 0 else 0.0, len(union))
