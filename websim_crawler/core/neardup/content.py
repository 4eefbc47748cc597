"""The content region of a page (Shibata, Kang and Kurohashi 2010), on the page analysis' chunks.

The analysis' leaf chunks are the DOM blocks. Consecutive leaf chunks with the same parent, depth
and tag (table cells, sibling divs) whose link features fall on the same side of ``link_ratio``
are joined into one block (so a menu div next to an article div stays apart). A block whose
hyperlink percentage is at or above ``link_ratio`` and whose longest sentence has at most
``noncontent_sentence_chars`` characters (menus, link lists, tag clouds) is non-content; the rest
is the content region, whose sentences are compared. Where the page analysis marked its main
chunks (``is_main``), ``region="main"`` narrows the region to them first: the analysis' noise
filter has already set the site furniture (sidebars, footers, adverts) aside.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.neardup.sentences import normalize_sentence, split_sentences
from websim_crawler.core.page import CONTAINER, Chunk, hyperlink_percentage


@dataclass(frozen=True)
class Block:
    """Joined same-depth, same-tag sibling chunks with their summed link features."""

    parent_id: str | None
    depth: int
    tag: str
    text: str
    n_keywords: int
    n_link_keywords: int

    @property
    def hyperlink_percentage(self) -> float:
        """Return the block's share of link keywords (the analysis' HLp on the joined block)."""
        return hyperlink_percentage(self.n_link_keywords, self.n_keywords)

    @property
    def longest_sentence_chars(self) -> int:
        """Return the length of the block's longest normalised sentence."""
        return max((len(normalize_sentence(s)) for s in split_sentences(self.text)), default=0)


def join_blocks(chunks: Iterable[Chunk | Mapping[str, Any]], params: NeardupParams) -> list[Block]:
    """Join consecutive leaf chunks with the same parent, depth, tag and link side into blocks."""
    blocks: list[Block] = []
    for chunk in chunks:
        fields: Mapping[str, Any] = chunk if isinstance(chunk, Mapping) else vars(chunk)
        text = fields.get("text")
        if fields.get("fate") == CONTAINER or not text:
            continue
        block = Block(
            parent_id=fields.get("parent_id"),
            depth=int(fields.get("depth", 0)),
            tag=str(fields.get("tag", "")),
            text=str(text),
            n_keywords=int(fields.get("n_keywords", 0)),
            n_link_keywords=int(fields.get("n_link_keywords", 0)),
        )
        last = blocks[-1] if blocks else None
        if last is not None and _joinable(last, block, params.link_ratio):
            blocks[-1] = Block(
                last.parent_id,
                last.depth,
                last.tag,
                text=f"{last.text}\n{block.text}",
                n_keywords=last.n_keywords + block.n_keywords,
                n_link_keywords=last.n_link_keywords + block.n_link_keywords,
            )
        else:
            blocks.append(block)
    return blocks


def _joinable(first: Block, second: Block, link_ratio: float) -> bool:
    same_place = (first.parent_id, first.depth, first.tag) == (
        second.parent_id,
        second.depth,
        second.tag,
    )
    same_side = (first.hyperlink_percentage >= link_ratio) == (
        second.hyperlink_percentage >= link_ratio
    )
    return same_place and same_side


def is_content_block(block: Block, params: NeardupParams) -> bool:
    """Apply the rule: link-heavy blocks made of short sentences only are non-content."""
    return not (
        block.hyperlink_percentage >= params.link_ratio
        and block.longest_sentence_chars <= params.noncontent_sentence_chars
    )


def main_chunks(chunks: Sequence[Chunk | Mapping[str, Any]]) -> list[Chunk | Mapping[str, Any]]:
    """Return the leaf chunks the page analysis chose as the main content (empty: none marked)."""
    return [
        chunk
        for chunk in chunks
        if (chunk if isinstance(chunk, Mapping) else vars(chunk)).get("is_main") is True
    ]


def content_texts(chunks: Sequence[Chunk | Mapping[str, Any]], params: NeardupParams) -> list[str]:
    """Return the texts of the content blocks of a page's chunks, in document order."""
    blocks = join_blocks(chunks, params)
    return [block.text for block in blocks if is_content_block(block, params)]
