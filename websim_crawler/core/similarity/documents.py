"""Parse a page once into what every layout measure needs: tags, classes, pq-grams, a vertex tree.

``as_parsed_document`` accepts HTML as ``str`` or ``bytes``, an lxml element or element tree, or an
already built ``ParsedDocument``; comparing one page with many others then parses it only once.
HTML is parsed by the package's one parser (``core.html.parse_plain_tree``) under the limits it
is given (``ParseLimits``, from ``AnalysisParams.parse_limits``), so a page too large for the
analysis is too large for the layout too. The tag labels follow lxml's HTML parser as
html-similarity 0.5.0 sees it; that parser drops comments and processing instructions, so they
are labelled (``comment``, ``processing-instruction``) only in trees built elsewhere.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from hashlib import blake2b
from typing import TypeAlias

import lxml.etree
import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.html import NO_LIMITS, ParseLimits, parse_plain_tree
from websim_crawler.errors import PageError

# Elements that are never rendered: left out of the layout vertex tree ("meta tags excluded").
NON_LAYOUT_TAGS = frozenset(
    {"head", "meta", "link", "script", "style", "noscript", "template", "base", "title"}
)
_STAR = "*"
_FIRST_CODE_POINT = 0x100
_SURROGATES = range(0xD800, 0xE000)


class _TagAlphabet:
    """Map each tag label to one character, so tag sequences compare as plain strings."""

    def __init__(self) -> None:
        self._codes: dict[str, str] = {}

    def encode(self, labels: list[str]) -> str:
        codes = self._codes
        for label in set(labels).difference(codes):
            point = _FIRST_CODE_POINT + len(codes)
            if point >= _SURROGATES.start:
                point += len(_SURROGATES)
            codes[label] = chr(point)
        return "".join(map(codes.__getitem__, labels))


_ALPHABET = _TagAlphabet()
# What ``node.tag`` is for the nodes that are not elements.
_SPECIAL_LABELS = {
    lxml.etree.Comment: "comment",
    lxml.etree.ProcessingInstruction: "processing-instruction",
    lxml.etree.Entity: "entity",
}
# Pages given as text are parsed once and kept for their next comparisons (LRU).
PARSED_TEXT_CACHE_SIZE = 16


def encode_labels(labels: list[str]) -> str:
    """Encode labels as a string, one character per label, the same character for equal labels."""
    return _ALPHABET.encode(labels)


@dataclass(frozen=True)
class VertexTree:
    """The rendered elements of a page in document order, as parallel arrays.

    The derived arrays (tag codes, subtree sizes, child tag strings, attribute-set ids) are
    computed on first use and kept, so a page compared with many others derives them once.
    """

    tags: tuple[str, ...]
    attributes: tuple[frozenset[str], ...]
    children: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.tags)

    def derive_arrays(self) -> VertexTree:
        """Compute every derived array now (when a page is prepared rather than compared)."""
        for name in _DERIVED_ARRAYS:
            getattr(self, name)
        return self

    @cached_property
    def tag_codes(self) -> NDArray[np.int64]:
        """Each vertex's tag as an integer, equal across pages for equal tags."""
        return np.array([ord(code) for code in encode_labels(list(self.tags))], dtype=np.int64)

    @cached_property
    def child_tags(self) -> tuple[str, ...]:
        """Each vertex's child tags as a string, one character per child (``encode_labels``)."""
        codes = encode_labels(list(self.tags))
        return tuple("".join([codes[child] for child in kids]) for kids in self.children)

    @cached_property
    def shape_table(self) -> tuple[tuple[str, str, frozenset[str]], ...]:
        """The distinct shapes of the page's vertices: (a string naming the shape, child tags,
        attribute names); equal names mean equal shapes, on any page.
        """
        return self._shapes[0]

    @cached_property
    def shape_ids(self) -> list[int]:
        """Each vertex's shape, as its index in ``shape_table``."""
        return self._shapes[1]

    @cached_property
    def _shapes(self) -> tuple[tuple[tuple[str, str, frozenset[str]], ...], list[int]]:
        ids: dict[tuple[str, frozenset[str]], int] = {}
        shapes = zip(self.child_tags, self.attributes, strict=True)
        index = [ids.setdefault(shape, len(ids)) for shape in shapes]
        # Child tags are characters of ``encode_labels`` (from U+0100 on), attribute names are
        # NUL-free (lxml), so the NUL separators keep the name unambiguous.
        table = tuple(("\0".join((tags, *sorted(names))), tags, names) for tags, names in ids)
        return table, index

    @cached_property
    def tag_groups(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """The vertices sorted by (tag code, position): positions, tag codes, and the sort keys
        tag code * (len + 1) + position.
        """
        order = np.argsort(self.tag_codes, kind="stable")
        grouped = self.tag_codes[order]
        return order, grouped, grouped * (len(self.tags) + 1) + order

    @cached_property
    def child_counts(self) -> NDArray[np.int64]:
        """The number of children of each vertex."""
        return np.array([len(kids) for kids in self.children], dtype=np.int64)

    @cached_property
    def subtree_sizes(self) -> NDArray[np.int64]:
        """The number of vertices of each vertex's subtree (itself included)."""
        sizes = [1] * len(self.tags)
        children = self.children
        for index in range(len(sizes) - 1, -1, -1):  # preorder: children come after parents
            for child in children[index]:
                sizes[index] += sizes[child]
        return np.array(sizes, dtype=np.int64)

    @cached_property
    def child_tag_masks(self) -> NDArray[np.uint64]:
        """Each vertex's child tags as a 64-bit set (bit = tag code mod 64): two vertices whose
        masks share no bit have no child tag in common.
        """
        masks = np.zeros(len(self.tags), dtype=np.uint64)
        counts = self.child_counts
        if counts.sum():
            children = np.fromiter(
                (child for kids in self.children for child in kids), np.int64, int(counts.sum())
            )
            bits = np.left_shift(np.uint64(1), (self.tag_codes[children] % 64).astype(np.uint64))
            np.bitwise_or.at(masks, np.repeat(np.arange(len(self.tags)), counts), bits)
        return masks

    @cached_property
    def subtree_digests(self) -> tuple[bytes, ...]:
        """A 128-bit BLAKE2 digest of each vertex's subtree (tags, attribute names, shape):
        equal digests mean identical subtrees.
        """
        tags, attributes, children = self.tags, self.attributes, self.children
        digests = [b""] * len(tags)
        labels: dict[tuple[str, frozenset[str]], bytes] = {}  # a page repeats its few labels
        for index in range(len(digests) - 1, -1, -1):
            key = (tags[index], attributes[index])
            label = labels.get(key)
            if label is None:
                label = labels[key] = repr((key[0], sorted(key[1]))).encode()
            digest = blake2b(label, digest_size=16)
            for child in children[index]:
                digest.update(digests[child])
            digests[index] = digest.digest()
        return tuple(digests)

    @cached_property
    def subtree_classes(self) -> NDArray[np.int64]:
        """Each vertex's subtree as a class of the page, numbered from 0: equal classes mean
        identical subtrees (equal ``subtree_digests``).
        """
        classes: dict[bytes, int] = {}
        return np.array(
            [classes.setdefault(digest, len(classes)) for digest in self.subtree_digests],
            dtype=np.int64,
        )

    @cached_property
    def attribute_incidence(
        self,
    ) -> tuple[dict[str, int], NDArray[np.float64], NDArray[np.float64]]:
        """The attribute names of the page (name -> column), which distinct attribute-name set
        (row, as in ``attribute_sets``) holds which name (1.0), and each set's size.
        """
        sets = self.attribute_sets[0]
        columns: dict[str, int] = {}
        flat = [columns.setdefault(name, len(columns)) for names in sets for name in names]
        sizes = np.array([len(names) for names in sets], dtype=np.int64)
        matrix = np.zeros((len(sets), len(columns)))
        matrix[np.repeat(np.arange(len(sets)), sizes), flat] = 1.0
        return columns, matrix, sizes.astype(np.float64)

    @cached_property
    def attribute_sets(self) -> tuple[tuple[frozenset[str], ...], NDArray[np.int64]]:
        """The distinct attribute-name sets of the page and each vertex's index among them."""
        ids: dict[frozenset[str], int] = {}
        index = np.array([ids.setdefault(names, len(ids)) for names in self.attributes])
        return tuple(ids), index.astype(np.int64)


_DERIVED_ARRAYS = (
    "tag_codes",
    "tag_groups",
    "child_tags",
    "child_counts",
    "child_tag_masks",
    "subtree_sizes",
    "subtree_digests",
    "subtree_classes",
    "attribute_sets",
    "attribute_incidence",
    "shape_ids",
    "shape_table",
)


@dataclass(eq=False)
class ParsedDocument:
    """A page parsed once; the features of each layout measure are computed on first use."""

    root: lxml.etree._Element
    _labels: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        special = _SPECIAL_LABELS
        self._labels = [
            tag if tag.__class__ is str else special.get(tag, str(tag))
            for tag in (node.tag for node in self.root.iter())
        ]

    @property
    def tags(self) -> list[str]:
        """The labels of every node in document order (html-similarity's ``get_tags``)."""
        return list(self._labels)

    @cached_property
    def tag_string(self) -> str:
        """The tag sequence as a string, one character per label, for fast sequence measures."""
        return encode_labels(self._labels)

    @cached_property
    def classes(self) -> frozenset[str]:
        """The CSS class names used anywhere in the page."""
        names: set[str] = set()
        for value in self.root.xpath("descendant-or-self::*/@class"):
            names.update(str(value).split())
        return frozenset(names)

    @cached_property
    def pq_grams(self) -> Counter[tuple[str, ...]]:
        """The (p=2, q=3) pq-gram profile of the tree."""
        return pq_gram_profile(self.root, 2, 3)

    @cached_property
    def pq_gram_count(self) -> int:
        """The number of pq-grams in the profile (a bag size)."""
        return sum(self.pq_grams.values())

    @cached_property
    def vertices(self) -> VertexTree:
        """The rendered element tree used by the tag and template comparison algorithms."""
        return build_vertex_tree(self.root)


LayoutInput: TypeAlias = (
    str | bytes | lxml.etree._Element | lxml.etree._ElementTree | ParsedDocument
)


def as_parsed_document(document: LayoutInput, limits: ParseLimits = NO_LIMITS) -> ParsedDocument:
    """Return a ``ParsedDocument``; raise ``PageError`` for empty or unparseable input, or for
    HTML over ``limits`` (the reasons of the page analysis: too_large, too_many_elements)."""
    if isinstance(document, ParsedDocument):
        return document
    if isinstance(document, lxml.etree._ElementTree):
        root = document.getroot()
        if root is None:
            raise PageError("empty", "the document tree has no root element")
        return ParsedDocument(root)
    if isinstance(document, lxml.etree._Element):
        return ParsedDocument(document)
    if isinstance(document, (str, bytes)):
        return _parse_text(document, limits)
    raise TypeError(f"cannot compare a {type(document).__name__} as HTML")


def clear_parsed_text_cache() -> None:
    """Forget the pages parsed from text (to time parsing, or free their memory)."""
    _parse_text.cache_clear()


@lru_cache(maxsize=PARSED_TEXT_CACHE_SIZE)
def _parse_text(document: str | bytes, limits: ParseLimits) -> ParsedDocument:
    """Parse HTML text; the cache spares re-parsing a page compared with several others."""
    return ParsedDocument(parse_plain_tree(document, limits=limits))


def pq_gram_profile(root: lxml.etree._Element, p: int, q: int) -> Counter[tuple[str, ...]]:
    """Return the pq-gram bag of a tree (Augsten, Boehlen and Gamper, "Approximate Matching of
    Hierarchical Data Using pq-Grams", 2005).

    Each gram is ``(node, p-1 ancestors nearest first, q-wide window of child labels)`` with
    ``*`` padding; a leaf has one gram with an all-``*`` window.
    """
    grams: list[tuple[str, ...]] = []
    stars = (_STAR,) * (q - 1)
    leaf_window = (*stars, _STAR)
    special = _SPECIAL_LABELS
    pending: list[tuple[lxml.etree._Element, tuple[str, ...]]] = [(root, (_STAR,) * (p - 1))]
    while pending:
        node, ancestors = pending.pop()
        tag = node.tag
        stem = (tag if tag.__class__ is str else special.get(tag, str(tag)), *ancestors)
        children = list(node)
        if not children:
            grams.append(stem + leaf_window)
            continue
        labels = [
            tag if tag.__class__ is str else special.get(tag, str(tag))
            for tag in (child.tag for child in children)
        ]
        window = (*stars, *labels, *stars)
        grams.extend(stem + window[start : start + q] for start in range(len(children) + q - 1))
        child_ancestors = stem[: p - 1]
        pending.extend((child, child_ancestors) for child in children)
    return Counter(grams)


def build_vertex_tree(root: lxml.etree._Element) -> VertexTree:
    """Flatten the rendered elements (no comments, meta tags or their subtrees) in preorder."""
    tags: list[str] = []
    attributes: list[frozenset[str]] = []
    children: list[list[int]] = []
    pending: list[tuple[lxml.etree._Element, int]] = [(root, -1)]
    while pending:
        element, parent = pending.pop()
        if not isinstance(element.tag, str) or element.tag in NON_LAYOUT_TAGS:
            continue
        index = len(tags)
        tags.append(element.tag)
        attributes.append(frozenset(element.attrib.keys()))
        children.append([])
        if parent >= 0:
            children[parent].append(index)
        pending.extend((child, index) for child in reversed(element))
    return VertexTree(tuple(tags), tuple(attributes), tuple(tuple(c) for c in children))
