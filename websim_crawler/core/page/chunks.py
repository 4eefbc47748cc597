"""Chunks: the working leaves and tree of one analysis, and the chunk records it returns."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from websim_crawler.core.page.segment import Segment

if TYPE_CHECKING:
    from websim_crawler.core.html import HtmlTree

KEPT, NOISE, DUPLICATE, CONTAINER = "kept", "noise", "duplicate", "container"
# Which chunk records an analysis builds and a record holds (``WEBSIM_CHUNK_DETAIL``).
CHUNK_DETAILS = ("full", "main", "none")


@dataclass(frozen=True)
class Chunk:
    """One chunk of a page with its features and its fate (kept, noise, duplicate, container)."""

    chunk_id: str
    parent_id: str | None
    rule: str
    tag: str
    depth: int
    order: int
    text: str
    n_keywords: int
    n_link_keywords: int
    n_images: int
    hyperlink_percentage: float
    noise_score: float
    title_keywords: dict[str, int]
    title_word_relevancy: float
    keyword_frequency: float
    position_ratio: float
    position_feature: int
    weight: float
    fate: str
    reason: str
    is_main: bool


_CHUNK_FIELDS = tuple(field.name for field in dataclasses.fields(Chunk))


def chunk_dict(chunk: Chunk) -> dict[str, Any]:
    """Return one chunk as JSON-safe data, its fields in declaration order."""
    data = {name: getattr(chunk, name) for name in _CHUNK_FIELDS}
    data["title_keywords"] = dict(chunk.title_keywords)
    return data


class AnalysisRecord(TypedDict):
    """A page's analysis as JSON-safe data (``PageAnalysis.to_dict``): the line ``websim
    extract`` writes and the fields the analysis pipeline writes into the item."""

    url: str | None
    title: str
    language: str
    chunks: NotRequired[tuple[dict[str, Any], ...]]  # ``chunk_dict`` of each chunk kept
    main_chunk_ids: tuple[str, ...]
    main_text: str
    keywords: dict[str, int]
    keyword_stems: dict[str, int]
    links: tuple[str, ...]
    encoding: str | None
    encoding_confidence: str | None


@dataclass(frozen=True)
class PageAnalysis:
    """The analysis of one page: its chunks with their fate, main text and keywords."""

    url: str | None
    title: str
    language: str
    chunks: tuple[Chunk, ...]
    main_chunk_ids: tuple[str, ...]
    main_text: str
    keywords: dict[str, int]  # {word: count}: each stem named by its commonest form on the page
    links: tuple[str, ...]
    # How the page's bytes were decoded (``core.html.decode_page``); None for text given
    # already decoded, whose confidence is ``doubtful`` only when it holds many U+FFFD.
    encoding: str | None = None
    encoding_confidence: str | None = None
    # Which records ``chunks`` holds (``CHUNK_DETAILS``: every chunk, the main-content chunks or
    # none), as ``analyse_page`` was asked, and the leaf chunks of the page by fate (all of them).
    chunk_detail: str = "full"
    fates: dict[str, int] = dataclasses.field(default_factory=dict)
    # {stem: count} of the main content: the features of the keyword vectors (clustering,
    # similarity); ``keywords`` holds the same counts under words a person reads.
    keyword_stems: dict[str, int] = dataclasses.field(default_factory=dict)
    # The page's tree as the parser gave it (``analyse_page(keep_tree=True)``), for the features
    # derived from the same parse (the similarity's layout); not part of the record.
    tree: HtmlTree | None = dataclasses.field(default=None, repr=False, compare=False)

    def to_dict(self, chunk_detail: str = "full") -> AnalysisRecord:
        """Return the record as JSON-safe data (what ``dataclasses.asdict`` gives, built directly:
        its recursive deep copy took a third of ``websim extract``'s time), with every chunk
        (``full``), the main-content chunks (``main``) or none (``none``: no ``chunks`` key), as
        ``WEBSIM_CHUNK_DETAIL`` says; the analysis must have built at least those chunks."""
        if CHUNK_DETAILS.index(chunk_detail) < CHUNK_DETAILS.index(self.chunk_detail):
            raise ValueError(
                f"chunk detail {chunk_detail!r} asked of an analysis that built "
                f"{self.chunk_detail!r} chunk records"
            )
        record: AnalysisRecord = {
            "url": self.url,
            "title": self.title,
            "language": self.language,
            "chunks": tuple(
                chunk_dict(chunk)
                for chunk in self.chunks
                if chunk_detail == "full" or (chunk_detail == "main" and chunk.is_main)
            ),
            "main_chunk_ids": self.main_chunk_ids,
            "main_text": self.main_text,
            "keywords": dict(self.keywords),
            "keyword_stems": dict(self.keyword_stems),
            "links": self.links,
            "encoding": self.encoding,
            "encoding_confidence": self.encoding_confidence,
        }
        if chunk_detail == "none":
            del record["chunks"]
        return record

    def counts(self) -> Counter[str]:
        """Count the leaf chunks by fate (for stats)."""
        return Counter(self.fates)


@dataclass(slots=True)
class LeafChunk:
    """A leaf chunk while its page is analysed: its text span, features and fate."""

    segment: Segment
    index: int  # position in the page's node list (document order)
    text: str
    start: int
    end: int
    keywords: Counter[str] = dataclasses.field(init=False)  # set with the features
    n_keywords: int = 0
    n_link_keywords: int = 0
    title_counts: dict[str, int] = dataclasses.field(init=False)
    fate: str = KEPT
    reason: str = ""
    hyperlink_percentage: float = 0.0
    noise_score: float = 0.0
    relevancy: float = 0.0
    frequency: float = 0.0
    position_ratio: float = 0.0
    position: int = 0
    weight: float = 0.0


class ChunkTree:
    """The chunk tree flattened in document (pre-)order, with each node's parent index."""

    def __init__(self, root: Segment) -> None:
        self.nodes: list[Segment] = []
        self.parents: list[int] = []
        stack: list[tuple[Segment, int]] = [(root, -1)]
        while stack:  # no recursion: 5,000-deep pages
            node, parent = stack.pop()
            index = len(self.nodes)
            self.nodes.append(node)
            self.parents.append(parent)
            if node.children:
                stack.extend([(child, index) for child in reversed(node.children)])
        self.ends = [index + size for index, size in enumerate(self.totals([1] * len(self.nodes)))]

    def totals(self, own: list[float] | list[int]) -> list[float]:
        """Sum a per-node value over each node's subtree."""
        total = [float(value) for value in own]
        parents = self.parents
        for index in range(len(total) - 1, 0, -1):
            total[parents[index]] += total[index]
        return total


_new_object = object.__new__
_CONTAINER_FIELDS: dict[str, Any] = {
    "text": "",
    "n_keywords": 0,
    "n_link_keywords": 0,
    "n_images": 0,
    "hyperlink_percentage": 0.0,
    "noise_score": 0.0,
    "title_keywords": {},
    "title_word_relevancy": 0.0,
    "keyword_frequency": 0.0,
    "position_ratio": 0.0,
    "position_feature": 0,
    "fate": CONTAINER,
    "reason": "",
    "is_main": False,
}


def _rounded(value: float) -> float:
    """Round a feature to 6 decimals for its record; 0 and 1, the most common, need no rounding."""
    return value if value == 0.0 or value == 1.0 else round(value, 6)


def chunk_records(
    tree: ChunkTree, leaves: list[LeafChunk], main: set[int], chunk_detail: str = "full"
) -> tuple[Chunk, ...]:
    """Build the ``Chunk`` records of every chunk (``full``) or of the main-content chunks
    (``main``), each from all its fields at once (no frozen per-field setattr)."""
    if chunk_detail == "none":
        return ()
    by_index: list[LeafChunk | None] = [None] * len(tree.nodes)
    for chunk_leaf in leaves:
        by_index[chunk_leaf.index] = chunk_leaf
    if chunk_detail == "main":  # leaves only: no container weightage to sum
        orders: Iterable[int] = sorted(main)
        weightage: list[float] = []
    else:
        orders = range(len(tree.nodes))
        kept = [0.0] * len(tree.nodes)
        for chunk_leaf in leaves:
            if chunk_leaf.fate == KEPT:
                kept[chunk_leaf.index] = chunk_leaf.weight
        weightage = tree.totals(kept)
    records: list[Chunk] = []
    for order in orders:
        node, leaf = tree.nodes[order], by_index[order]
        if leaf is None and not node.children:
            continue
        fields: dict[str, Any] = {
            "chunk_id": node.chunk_id,
            "parent_id": node.parent_id,
            "rule": node.rule,
            "tag": node.tag,
            "depth": node.depth,
            "order": order,
        }
        if leaf is not None:
            fields.update(
                text=leaf.text,
                n_keywords=leaf.n_keywords,
                n_link_keywords=leaf.n_link_keywords,
                n_images=node.n_images,
                hyperlink_percentage=_rounded(leaf.hyperlink_percentage),
                noise_score=_rounded(leaf.noise_score),
                title_keywords=leaf.title_counts,
                title_word_relevancy=_rounded(leaf.relevancy),
                keyword_frequency=_rounded(leaf.frequency),
                position_ratio=_rounded(leaf.position_ratio),
                position_feature=leaf.position,
                weight=_rounded(leaf.weight),
                fate=leaf.fate,
                reason=leaf.reason,
                is_main=order in main,
            )
        else:
            fields.update(_CONTAINER_FIELDS)
            fields["title_keywords"] = {}
            fields["weight"] = _rounded(weightage[order])
        chunk: Chunk = _new_object(Chunk)
        chunk.__dict__.update(fields)
        records.append(chunk)
    return tuple(records)
