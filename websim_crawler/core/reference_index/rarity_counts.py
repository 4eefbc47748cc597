"""What the references share: each one's brand identity, and how many have each feature.

The ``brand`` question weighs a feature by how few references have it (``core.similarity.
rarity``): the brand words and image hashes (``BrandRarity``, with the references having each
word and those named by each, so brand candidates are found without scoring every reference)
and the template features and links (``TemplateRarity``). ``ReferenceRarity`` keeps both as
references are added, writes them into the index file (``brand.json``, ``template-hashes.npy``,
``template-counts.npy``) and reads them back.
"""

from __future__ import annotations

from typing import Any

import orjson

from websim_crawler.core.reference_index.store import IndexFile
from websim_crawler.core.similarity.brand import (
    NAME_RARITY,
    BrandIdentity,
    BrandRarity,
    brand_similarity,
    names,
)
from websim_crawler.core.similarity.comparison import PageFeatures
from websim_crawler.core.similarity.rarity import TemplateRarity
from websim_crawler.errors import InputFormatError

# Brand candidates: references scored per query at most (those sharing its rarest brand words
# first); a query that reaches it is counted (``capped_brand_queries``).
MAX_BRAND_SCORED = 2_000


class ReferenceRarity:
    """The references' brand identities and how many references have each feature."""

    def __init__(self) -> None:
        self.identities: list[BrandIdentity | None] = []
        self.brand = BrandRarity()
        self.template = TemplateRarity()
        self._brand_postings: dict[str, list[int]] = {}
        self._name_postings: dict[str, list[int]] = {}  # the references named by each word
        self.capped_brand_queries = 0

    def _add_identity(self, identity: BrandIdentity | None) -> None:
        number = len(self.identities)
        self.identities.append(identity)
        self.brand.add(identity)
        for word in identity.words if identity is not None else ():
            self._brand_postings.setdefault(word, []).append(number)
        for word in names(identity) if identity is not None else ():
            self._name_postings.setdefault(word, []).append(number)

    def add(self, page: PageFeatures) -> None:
        """Count the next reference's brand identity, template features and links."""
        self._add_identity(page.identity)
        self.template.add(page.document, page.links)

    def brand_scores(self, identity: BrandIdentity | None) -> dict[int, float]:
        """Return the brand score of the references sharing a rare brand word with a page's
        identity (``MAX_BRAND_SCORED`` at most, those of its rarest words first)."""
        if identity is None:
            return {}
        sharing: set[int] = set()
        postings = [self._brand_postings.get(word) for word in identity.words]
        for posting in sorted((p for p in postings if p), key=len):  # rarest words first
            if len(posting) >= self.brand.references > 1:
                break  # a word every reference has weighs 0, and so do the commoner ones
            if len(sharing) + len(posting) > MAX_BRAND_SCORED:
                self.capped_brand_queries += 1
                break
            sharing.update(posting)
        scores = {}
        for number in sharing:
            found = brand_similarity(identity, self.identities[number], self.brand, shown=0)
            if found is not None:
                scores[number] = found.score
        return scores

    def named_references(self, identity: BrandIdentity | None) -> list[int]:
        """Return the references named by a word a page's identity names (``brand.names``) that
        few references are named by (``name_weight`` >= ``NAME_RARITY``: at most the square
        root of the references each), in the order they were added."""
        found: set[int] = set()
        for word in names(identity) if identity is not None else ():
            if self.brand.name_weight(word) >= NAME_RARITY:
                found.update(self._name_postings.get(word, ()))
        return sorted(found)

    def members(self) -> dict[str, Any]:
        """Return the index file's members for them."""
        hashes, counts = self.template.arrays()
        identities = [None if found is None else found.to_dict() for found in self.identities]
        return {
            "brand.json": orjson.dumps(identities),
            "template-hashes.npy": hashes,
            "template-counts.npy": counts,
        }

    @classmethod
    def load(cls, opened: IndexFile, references: int) -> ReferenceRarity:
        """Read them from an index file of ``references`` references (``InputFormatError``
        when damaged)."""
        rarity = cls()
        path = opened.path
        try:
            identities = orjson.loads(opened.member("brand.json"))
            if not isinstance(identities, list) or len(identities) != references:
                raise ValueError(f"{len(identities)} identities for {references} references")
            for identity in identities:
                rarity._add_identity(
                    None if identity is None else BrandIdentity.from_dict(identity)
                )
        except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputFormatError(f"{path}: brand.json is damaged: {exc}") from exc
        rarity.template = TemplateRarity(
            references,
            opened.array("template-hashes.npy"),
            opened.array("template-counts.npy"),
        )
        rarity.template.check(str(path))
        return rarity
