"""The data region of a result page: the repeated items that link to the records.

The idea comes from data-record mining: MDR (Liu, Grossman & Zhai 2003, "Mining data records in
Web pages") finds records as runs of similar sibling subtrees under one parent; DEPTA (Zhai & Liu
2005) aligns them; ViNTs (Zhao, Meng, Wu, Raghavan & Yu 2005) compares the result pages of several
queries, where the records change and the page around them stays. Here a region is the children
of one parent that share a tag (table rows, list items, cards, definition terms) and each carry a
link; their record links share a URL pattern (``url_shape``) and differ from item to item. What
the labels say does not matter: a record may be labelled by a number, a date, an id, an image or
nothing. The work is linear in the page's elements: each link is charged to at most
``_MAX_ITEM_DEPTH`` ancestors, and at most ``max_elements`` elements are looked at.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from lxml import etree

from websim_crawler.core.crawling.labels import (
    PAGER_LABEL_CAP,
    page_label_words,
    pager_label_kind,
)
from websim_crawler.core.crawling.shapes import coarse_url_shape, shapes_nest, url_shape

_MIN_MIXED_ITEMS = 4  # a list of results under several URL patterns has at least this many
_MAX_ITEM_DEPTH = 12  # how far above a link its item may be (a card's link sits a few levels in)
# Containers whose children are items by HTML's own meaning: one child is already a list.
_LIST_CONTAINERS = frozenset({"tbody", "table", "ol", "ul", "dl"})
_ITEM_TEXT_CAP = 2000  # characters of an item's text that count for its region's weight
_ITEM_ELEMENT_CAP = 200  # elements of an item read for its text
_LOCATION_DEPTH = 12  # tags of a region's location (its parent's path, nearest first)


@dataclass(frozen=True)
class DataRegion:
    """The record items of a result page found under one parent.

    ``location`` is the parent's tag path from the root and the items' tag (``html/body/table/
    tbody>tr``), the same on every result page of a site; ``shape`` the record links' pattern;
    ``links`` the record links in document order; ``items`` how many items carry one.
    """

    location: str
    shape: str
    links: tuple[str, ...]
    items: int
    weight: int  # the items' text length (each capped): how much of the page the region is


def find_data_regions(
    root: etree._Element,
    anchors: Mapping[etree._Element, str],
    *,
    known_locations: Iterable[str] = (),
    max_elements: int = 50_000,
) -> tuple[list[DataRegion], bool]:
    """Return the page's data regions, heaviest first, and whether ``max_elements`` was hit.

    ``anchors`` maps the page's candidate record anchors to their absolute URLs (template, pager
    and same-list links already left out). A region needs two items whose record links differ,
    or one item when its parent is a list by HTML's meaning (``tbody``, ``ul``, ``ol``, ``dl``)
    or sits where a region was found on another result page of the site (``known_locations``):
    a result page that shows one record.
    """
    links_by_item: dict[etree._Element, list[str]] = {}
    for anchor, url in anchors.items():
        element: etree._Element | None = anchor
        for _ in range(_MAX_ITEM_DEPTH):
            if element is None:
                break
            links_by_item.setdefault(element, []).append(url)
            element = element.getparent()
    known = frozenset(known_locations)
    parents: dict[etree._Element, None] = {}
    for item in links_by_item:
        parent = item.getparent()
        if parent is not None:
            parents.setdefault(parent, None)
    looked_at = 0
    truncated = False
    found: list[tuple[DataRegion, etree._Element, list[etree._Element]]] = []
    for parent in parents:
        looked_at += len(parent)
        if looked_at > max_elements:
            truncated = True
            break
        by_tag: dict[str, list[etree._Element]] = {}
        for child in parent:
            if isinstance(child.tag, str) and child in links_by_item:
                by_tag.setdefault(child.tag, []).append(child)
        for tag, items in by_tag.items():
            location = f"{_tag_path(parent)}>{tag}"
            links = [links_by_item[item] for item in items]
            region = _region(location, links, one_record_allowed=location in known)
            single_allowed = parent.tag in _LIST_CONTAINERS or location in known
            if region is None or (region.items < 2 and not single_allowed):
                continue
            texts = [_item_text(item) for item in items]
            if not _is_pager(texts):
                weight = sum(len(text) for text in texts)
                found.append((dataclasses.replace(region, weight=weight), parent, items))
    # Lists under headings ("title matches", "text matches") are found twice: as lists of
    # items, and as one region whose items are the lists. The lists are the result lists.
    list_parents = {parent for region, parent, _ in found if region.items >= 2}
    regions = [
        region
        for region, _, items in found
        if not any(item.tag in _LIST_CONTAINERS and item in list_parents for item in items)
    ]
    regions.sort(key=lambda region: (-region.weight, -region.items, region.location))
    return regions, truncated


def _region(
    location: str, item_links: list[list[str]], *, one_record_allowed: bool = False
) -> DataRegion | None:
    """Return the region of items with these links: the pattern most items share, or ``None``.

    Items that all link one page are a control ("details"), not records, except where the
    site's result lists were found before (``one_record_allowed``): an answer of one record
    that the site lists once per matching section (MkDocs' search).

    When the region is a list (at least ``_MIN_MIXED_ITEMS`` items) whose items carry one link
    each and one outline of path (``coarse_url_shape``: the number of segments, every name left
    open) is in four fifths of them and in more items than any pattern, the outline is the
    pattern: a documentation search lists pages of several sections (``/library/77/``,
    ``/howto/12/``, ``/c-api/4/``), one link a result, however many of them one section holds.
    """
    chosen = _common_shape(item_links, url_shape)
    if chosen is not None and chosen[1] < len(item_links):
        coarse = _common_shape(item_links, coarse_url_shape)
        one_link_each = len(item_links) >= _MIN_MIXED_ITEMS and all(
            len(links) == 1 for links in item_links
        )
        if (
            coarse is not None
            and coarse[1] > chosen[1]
            and coarse[1] * 5 >= len(item_links) * 4
            and one_link_each
        ):
            chosen = coarse
    if chosen is None:
        return None
    shape, items, urls = _with_longer_ids(item_links, *chosen)
    if items >= 2 and len(urls) < 2 and not one_record_allowed:
        return None  # every item links to one page: a "more" or "details" control, not records
    if len(urls) > 2 * items:
        return None  # items holding several records each: a region's ancestor, not its items
    return DataRegion(location, shape, urls, items, 0)


def _common_shape(
    item_links: list[list[str]], shape_of: Callable[[str], str]
) -> tuple[str, int, tuple[str, ...]] | None:
    """Return the pattern in most items (``shape_of`` each link), their count and its URLs."""
    shape_items: Counter[str] = Counter()
    shape_urls: dict[str, dict[str, None]] = {}
    for links in item_links:
        shapes: dict[str, None] = {}
        for url in links:
            shape = shape_of(url)
            shapes[shape] = None
            shape_urls.setdefault(shape, {})[url] = None
        shape_items.update(list(shapes))
    if not shape_items:
        return None
    # The pattern in most items; on a tie the one whose URLs differ most (the record, not a
    # "Filed under" topic link that each item also carries), then the first by name.
    shape = min(shape_items, key=lambda s: (-shape_items[s], -len(shape_urls[s]), s))
    return shape, shape_items[shape], tuple(shape_urls[shape])


def _with_longer_ids(
    item_links: list[list[str]], shape: str, items: int, urls: tuple[str, ...]
) -> tuple[str, int, tuple[str, ...]]:
    """Add to a region the items whose record's id holds more or fewer path segments than its
    siblings' (a title with "/" in it: ``/wiki/A/B`` among ``/wiki/*``, or the few without
    among many with): an item without a link of ``shape`` whose link's pattern nests with it
    (``shapes_nest``: the same fixed segments and query keys)."""
    chosen = set(urls)
    ordered: dict[str, None] = {}
    for links in item_links:
        own = [url for url in links if url in chosen]
        if not own:
            own = [url for url in links if shapes_nest(url_shape(url), shape)][:1]
            items += bool(own)
        ordered.update(dict.fromkeys(own))
    return shape, items, tuple(ordered)


def _is_pager(texts: list[str]) -> bool:
    """Tell whether items (by their texts) are a pager's: each only a page number or a
    next/previous control, the numbers close together (pages 1 2 3 ... 9, not 17 203 388)."""
    numbers: list[int] = []
    for text in texts:
        label = " ".join(text.split()).lower()
        kind = pager_label_kind(label) if len(label) <= PAGER_LABEL_CAP else None
        if kind is None:
            return False
        if kind == "number":
            numbers.append(int(page_label_words(label)))
    return not numbers or max(numbers) - min(numbers) < 2 * len(numbers) + 2


def _item_text(item: etree._Element) -> str:
    """Return an item's text, read up to ``_ITEM_TEXT_CAP`` characters or ``_ITEM_ELEMENT_CAP``
    elements (nested items would otherwise be read once per level)."""
    pieces: list[str] = []
    length = 0
    for visited, element in enumerate(item.iter()):
        if visited >= _ITEM_ELEMENT_CAP or length >= _ITEM_TEXT_CAP:
            break
        own = [element.text] if isinstance(element.tag, str) else []
        if element is not item:
            own.append(element.tail)
        for piece in own:
            if piece and piece.strip():
                pieces.append(piece.strip())
                length += len(pieces[-1])
    return " ".join(pieces)[:_ITEM_TEXT_CAP]


def _tag_path(element: etree._Element) -> str:
    """Return the tags of an element and its ancestors, up to ``_LOCATION_DEPTH`` of them."""
    tags = [element.tag if isinstance(element.tag, str) else "?"]
    for ancestor in element.iterancestors():
        if len(tags) >= _LOCATION_DEPTH:
            break
        tags.append(ancestor.tag if isinstance(ancestor.tag, str) else "?")
    return "/".join(reversed(tags))
