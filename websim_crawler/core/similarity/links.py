"""Link similarity: Jaccard of predecessors (pages linking to both) and of successors.

Each score comes with its support, the size of the union it is measured on: a score on a support
of 0 says nothing and the comparison skips the stage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from websim_crawler.core.urls import page_key


@dataclass(frozen=True)
class SetSimilarity:
    """A Jaccard score with its support (the size of the union)."""

    score: float
    support: int


def jaccard_with_support(first: Iterable[str], second: Iterable[str]) -> SetSimilarity:
    """Return |A & B| / |A | B| with the support |A | B| (score 0.0 on an empty union)."""
    set_a, set_b = set(first), set(second)
    union = len(set_a | set_b)
    if not union:
        return SetSimilarity(0.0, 0)
    return SetSimilarity(len(set_a & set_b) / union, union)


class LinkGraph:
    """The link graph of a crawl: every page's normalised outgoing links and their inverse."""

    def __init__(self, outgoing: Mapping[str, Iterable[str]]) -> None:
        self.successors: dict[str, frozenset[str]] = {}
        predecessors: dict[str, set[str]] = defaultdict(set)
        for page, links in outgoing.items():
            source = page_key(page)
            targets = frozenset(page_key(link) for link in links) - {source}
            self.successors[source] = self.successors.get(source, frozenset()) | targets
            for target in targets:
                predecessors[target].add(source)
        self.predecessors: dict[str, frozenset[str]] = {
            page: frozenset(sources) for page, sources in predecessors.items()
        }

    def successors_of(self, pages: Iterable[str]) -> set[str]:
        """Return the union of the pages' successors."""
        found: set[str] = set()
        for page in pages:
            found |= self.successors.get(page_key(page), frozenset())
        return found

    def predecessors_of(self, pages: Iterable[str]) -> set[str]:
        """Return the union of the pages' predecessors."""
        found: set[str] = set()
        for page in pages:
            found |= self.predecessors.get(page_key(page), frozenset())
        return found


def successor_similarity(graph: LinkGraph, page_1: str, page_2: str) -> SetSimilarity:
    """Return |suc(x) & suc(y)| / |suc(x) | suc(y)| with its support."""
    return group_successor_similarity(graph, [page_1], [page_2])


def predecessor_similarity(graph: LinkGraph, page_1: str, page_2: str) -> SetSimilarity:
    """Return |prd(x) & prd(y)| / |prd(x) | prd(y)| with its support."""
    return group_predecessor_similarity(graph, [page_1], [page_2])


def group_successor_similarity(
    graph: LinkGraph, group_1: Iterable[str], group_2: Iterable[str]
) -> SetSimilarity:
    """Return the successor Jaccard of two groups of pages (each group's successors united)."""
    return jaccard_with_support(graph.successors_of(group_1), graph.successors_of(group_2))


def group_predecessor_similarity(
    graph: LinkGraph, group_1: Iterable[str], group_2: Iterable[str]
) -> SetSimilarity:
    """Return the predecessor Jaccard of two groups of pages (each group's predecessors united)."""
    return jaccard_with_support(graph.predecessors_of(group_1), graph.predecessors_of(group_2))


def link_similarity(
    links_1: Iterable[str],
    links_2: Iterable[str],
    predecessors_1: Iterable[str] = (),
    predecessors_2: Iterable[str] = (),
) -> SetSimilarity:
    """Return the pooled Jaccard of successors and predecessors: (|S&| + |P&|) / (|S|| + |P||)."""
    return keyed_link_similarity(
        {page_key(u) for u in links_1},
        {page_key(u) for u in links_2},
        predecessors_1,
        predecessors_2,
    )


def keyed_link_similarity(
    keys_1: Iterable[str],
    keys_2: Iterable[str],
    predecessors_1: Iterable[str] = (),
    predecessors_2: Iterable[str] = (),
) -> SetSimilarity:
    """Return ``link_similarity`` of links already in ``page_key`` form (``PageFeatures.links``)."""
    successors = jaccard_with_support(keys_1, keys_2)
    predecessors = jaccard_with_support(predecessors_1, predecessors_2)
    support = successors.support + predecessors.support
    if not support:
        return SetSimilarity(0.0, 0)
    common = successors.score * successors.support + predecessors.score * predecessors.support
    return SetSimilarity(common / support, support)
