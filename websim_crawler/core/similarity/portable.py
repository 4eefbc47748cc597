"""A page's similarity features as JSON-safe data: sent back by a worker, kept in JOBDIR.

A worker process parses the page (``page_features``) and returns ``features_to_dict``; the
collecting process rebuilds it with ``features_from_dict`` without parsing the HTML again. The
layout features travel as what the measures read (node labels, CSS classes, the pq-gram bag and
the vertex tree), never as lxml elements; labels are encoded to characters again in the
receiving process (``encode_labels`` codes are per process).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from websim_crawler.core.html import outgoing_links
from websim_crawler.core.similarity.brand import BrandIdentity
from websim_crawler.core.similarity.comparison import PageFeatures
from websim_crawler.core.similarity.documents import ParsedDocument, VertexTree
from websim_crawler.core.similarity.visual import ColourSignature
from websim_crawler.core.urls import page_key
from websim_crawler.errors import InputFormatError


class PortableDocument(ParsedDocument):
    """A ``ParsedDocument`` rebuilt from its layout features, without its element tree."""

    def __init__(
        self,
        labels: list[str],
        classes: frozenset[str],
        pq_grams: Counter[tuple[str, ...]],
        vertices: VertexTree,
    ) -> None:
        # The cached features are set directly: there is no tree to compute them from.
        self._labels = labels
        self.__dict__.update(
            classes=classes,
            pq_grams=pq_grams,
            pq_gram_count=sum(pq_grams.values()),
            vertices=vertices,
        )


def features_to_dict(features: PageFeatures) -> dict[str, Any]:
    """Return the features as JSON-safe data (the absolute links are derived now, once)."""
    document = features.document
    absolute_links = features.absolute_links
    if absolute_links is None and features.links_resolved and document is not None:
        absolute_links = frozenset(map(page_key, outgoing_links(document.root, None)))
    return {
        "url": features.url,
        "document": None if document is None else _document_to_dict(document),
        "keywords": features.keywords,
        "links": sorted(features.links),
        "signature": None if features.signature is None else _signature_to_dict(features.signature),
        "problems": list(features.problems),
        "links_resolved": features.links_resolved,
        "absolute_links": None if absolute_links is None else sorted(absolute_links),
        "identity": None if features.identity is None else features.identity.to_dict(),
    }


def features_from_dict(data: Mapping[str, Any]) -> PageFeatures:
    """Rebuild features saved with ``features_to_dict``; ``InputFormatError`` if malformed."""
    try:
        document = data["document"]
        signature = data["signature"]
        absolute_links = data["absolute_links"]
        identity = data.get("identity")  # absent from features saved before brand identity
        return PageFeatures(
            url=None if data["url"] is None else str(data["url"]),
            document=None if document is None else _document_from_dict(document),
            keywords={str(term): int(count) for term, count in data["keywords"].items()},
            links=frozenset(map(str, data["links"])),
            signature=None if signature is None else _signature_from_dict(signature),
            problems=[str(problem) for problem in data["problems"]],
            links_resolved=bool(data["links_resolved"]),
            absolute_links=None if absolute_links is None else frozenset(map(str, absolute_links)),
            identity=None if identity is None else BrandIdentity.from_dict(identity),
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise InputFormatError(f"not saved similarity features: {exc!r}") from exc


def _document_to_dict(document: ParsedDocument) -> dict[str, Any]:
    vertices = document.vertices
    return {
        "labels": document.tags,
        "classes": sorted(document.classes),
        "pq_grams": [[list(gram), count] for gram, count in document.pq_grams.items()],
        "vertices": {
            "tags": list(vertices.tags),
            "attributes": [sorted(names) for names in vertices.attributes],
            "children": [list(children) for children in vertices.children],
        },
    }


def _document_from_dict(data: Mapping[str, Any]) -> PortableDocument:
    vertices = data["vertices"]
    return PortableDocument(
        labels=[str(label) for label in data["labels"]],
        classes=frozenset(map(str, data["classes"])),
        pq_grams=Counter({tuple(map(str, gram)): int(count) for gram, count in data["pq_grams"]}),
        vertices=VertexTree(
            tuple(map(str, vertices["tags"])),
            _attribute_sets(vertices["attributes"]),
            tuple(tuple(map(int, kids)) for kids in vertices["children"]),
        ),
    )


def _attribute_sets(names_per_vertex: list[list[str]]) -> tuple[frozenset[str], ...]:
    """Each vertex's attribute names as a set, one set object for equal names (a page repeats
    a few: equal sets hash once)."""
    sets: dict[tuple[str, ...], frozenset[str]] = {}
    built = []
    for names in names_per_vertex:
        key = tuple(map(str, names))
        known = sets.get(key)
        if known is None:
            known = sets[key] = frozenset(key)
        built.append(known)
    return tuple(built)


def _signature_to_dict(signature: ColourSignature) -> dict[str, Any]:
    return {  # full precision: a signature read back compares as the one computed
        "colours": signature.colours.tolist(),
        "centroids": signature.centroids.tolist(),
        "weights": signature.weights.tolist(),
        "width": signature.width,
        "height": signature.height,
        "degrading_factor": signature.degrading_factor,
    }


def _signature_from_dict(data: Mapping[str, Any]) -> ColourSignature:
    return ColourSignature(
        colours=np.asarray(data["colours"], dtype=np.int64).reshape(-1, 4),
        centroids=np.asarray(data["centroids"], dtype=np.float64).reshape(-1, 2),
        weights=np.asarray(data["weights"], dtype=np.float64),
        width=int(data["width"]),
        height=int(data["height"]),
        degrading_factor=int(data["degrading_factor"]),
    )
