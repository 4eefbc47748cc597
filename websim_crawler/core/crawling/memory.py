"""What the result pages of one crawl have in common: their chrome and where their records are.

After ViNTs (Zhao, Meng, Wu, Raghavan & Yu 2005), which compares the result pages of several
queries: the records change from query to query while the page around them stays. A link pattern
found outside the data region on every result page seen (export, "view as SQL", login) is chrome;
the place of a data region found with several items tells where a page showing one record has it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from websim_crawler.core.crawling.regions import DataRegion


class ResultListMemory:
    """Count, over a crawl's result pages, the link patterns outside their data regions.

    A pattern seen on every one of at least ``min_pages`` result pages, and never as the pattern
    of a data region, is chrome. At most ``max_shapes`` patterns and ``max_locations`` region
    places are kept; what a full memory cannot take is counted in ``dropped``.
    """

    def __init__(self, min_pages: int = 3, max_shapes: int = 10_000, max_locations: int = 100):
        self.min_pages = min_pages
        self.max_shapes = max_shapes
        self.max_locations = max_locations
        self.pages = 0
        self.dropped = 0
        self._shape_pages: Counter[str] = Counter()
        self._region_shapes: set[str] = set()
        self._locations: dict[str, None] = {}

    def observe(self, other_shapes: Iterable[str], regions: Iterable[DataRegion] = ()) -> None:
        """Record a result page: its candidate link patterns outside its result lists, and the
        lists (data regions: pattern, place, items) it has."""
        self.pages += 1
        for shape in sorted(set(other_shapes)):
            if shape in self._shape_pages or len(self._shape_pages) < self.max_shapes:
                self._shape_pages[shape] += 1
            else:
                self.dropped += 1
        for region in regions:
            if region.shape in self._region_shapes or len(self._region_shapes) < self.max_shapes:
                self._region_shapes.add(region.shape)
            else:
                self.dropped += 1
            if region.items < 2:
                continue
            if region.location in self._locations or len(self._locations) < self.max_locations:
                self._locations[region.location] = None
            else:
                self.dropped += 1

    def chrome_shapes(self) -> frozenset[str]:
        """Return the patterns found outside the data region on every result page seen."""
        if self.pages < self.min_pages:
            return frozenset()
        return frozenset(
            shape
            for shape, pages in self._shape_pages.items()
            if pages >= self.pages and shape not in self._region_shapes
        )

    def known_locations(self) -> frozenset[str]:
        """Return the places where data regions of several items were found."""
        return frozenset(self._locations)
