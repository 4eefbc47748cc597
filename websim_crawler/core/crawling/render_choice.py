"""Adaptive rendering: which kinds of pages of a site need a browser, learnt while crawling.

With ``render=auto`` a page is rendered only when its plain HTML lacks what the rendered page
shows. Pages are grouped by kind (start, results, record, page) and URL shape
(:func:`~websim_crawler.core.crawling.records.url_shape`): ``/js/search?page&q`` result pages,
``/record/*`` records. The first ``samples`` pages of a group are fetched both ways and compared
(:func:`rendering_adds`); one sample that shows more rendered decides "render" for the group (a
record lost costs more than a browser), ``samples`` that show nothing more decide "plain". While a
group's samples are in flight its other pages wait for the decision. Past ``max_groups`` groups
(a site of endless URL shapes) new groups are rendered.

The decision is kept under watch: a page of a "plain" group that yields far less than the
group's samples did (no records where they had some, a fraction of their text) is fetched again
rendered, and if rendering adds to it the group switches to "render" from then on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Literal

from lxml import etree

from websim_crawler.core.crawling.shapes import url_shape
from websim_crawler.core.html.links import outgoing_links

Plan = Literal["sample", "render", "plain", "wait"]

# Rendering "adds" when it shows this much more than the plain HTML (ratio and absolute floor,
# so a clock or a cookie banner drawn by a script does not count).
_TEXT_RATIO, _TEXT_FLOOR = 1.25, 200
_LINK_RATIO, _LINK_FLOOR = 1.25, 5
# A plain page "fails" against its group's samples below these fractions of their median.
_FAILING_TEXT_FRACTION = 0.25


@dataclass(frozen=True)
class PageYield:
    """What one fetch of a page showed: record links, visible text characters, links."""

    records: int
    text_chars: int
    links: int


# Elements whose text a reader does not see.
_UNSEEN_TAGS = frozenset({"script", "style", "noscript", "template", "head"})


def page_yield(root: etree._Element, url: str, records: int) -> PageYield:
    """Measure a parsed page: its ``records`` (found by the caller), text characters, links."""
    text_chars = 0
    for element in root.iter():
        if element.text and isinstance(element.tag, str) and element.tag not in _UNSEEN_TAGS:
            text_chars += len(element.text.strip())
        if element.tail:
            text_chars += len(element.tail.strip())
    return PageYield(records, text_chars, len(outgoing_links(root, url)))


def rendering_adds(plain: PageYield, rendered: PageYield) -> bool:
    """Tell whether the rendered page shows what the plain HTML lacks."""
    return (
        rendered.records > plain.records
        or rendered.text_chars > _TEXT_RATIO * plain.text_chars + _TEXT_FLOOR
        or rendered.links > _LINK_RATIO * plain.links + _LINK_FLOOR
    )


@dataclass
class _Group:
    decision: Plan = "sample"
    sampling: int = 0  # samples handed out and not yet answered
    plain_yields: list[PageYield] = field(default_factory=list)
    plain_pages: int = 0


@dataclass
class RenderChoices:
    """The render-or-not decision of each group of pages of a crawl."""

    samples: int = 2
    recheck_every: int = 10
    max_groups: int = 1_000
    groups: dict[tuple[str, str], _Group] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples!r}")
        if self.recheck_every < 1:
            raise ValueError(f"recheck_every must be >= 1, got {self.recheck_every!r}")

    @staticmethod
    def group_of(kind: str, url: str) -> tuple[str, str]:
        """Return the group of a page: its kind and URL shape."""
        return kind, url_shape(url)

    def plan(self, group: tuple[str, str]) -> Plan:
        """Return how to fetch the next page of ``group``: sample both ways, render, or plain."""
        state = self.groups.get(group)
        if state is None:
            if len(self.groups) >= self.max_groups:  # a site of endless URL shapes: render
                return "render"
            state = self.groups[group] = _Group()
        if state.decision != "sample":
            return state.decision
        if state.sampling + len(state.plain_yields) < self.samples:
            state.sampling += 1
            return "sample"
        return "wait"  # samples in flight: ask again once one is answered

    def sampled(self, group: tuple[str, str], plain: PageYield, rendered: PageYield) -> bool:
        """Take one page fetched both ways; return whether rendering added to it.

        A sample that rendering adds to decides "render"; ``samples`` that it does not add to
        decide "plain". A page of a "plain" group fetched again (``needs_recheck``) is taken
        here too, and switches the group to "render" when rendering adds to it.
        """
        state = self.groups.get(group)
        if state is None:
            return rendering_adds(plain, rendered)
        state.sampling = max(0, state.sampling - 1)
        adds = rendering_adds(plain, rendered)
        if adds:
            state.decision = "render"
        elif state.decision == "sample":
            state.plain_yields.append(plain)
            if len(state.plain_yields) >= self.samples:
                state.decision = "plain"
        return adds

    def answered_plain(self, group: tuple[str, str], plain: PageYield) -> bool:
        """Tell whether a plain sample answers without a rendered copy: a start page whose
        search form is in its HTML (``records``, for a start page, counts search forms)."""
        if group[0] != "start" or plain.records == 0:
            return False
        self.sampled(group, plain, plain)
        return True

    def unanswered(self, group: tuple[str, str]) -> None:
        """Give back a sample whose second fetch failed (another page will be sampled)."""
        state = self.groups.get(group)
        if state is not None:
            state.sampling = max(0, state.sampling - 1)

    def needs_recheck(self, group: tuple[str, str], plain: PageYield | None = None) -> bool:
        """Tell whether a plain page of a "plain" group should be fetched again rendered.

        Pages whose yield is known (``plain``: result and start pages, parsed anyway) are
        checked each; the others every ``recheck_every``-th page of the group.
        """
        state = self.groups.get(group)
        if state is None or state.decision != "plain" or not state.plain_yields:
            return False
        state.plain_pages += 1
        if plain is None:
            return state.plain_pages % self.recheck_every == 0
        return self.falls_short(group, plain)

    def falls_short(self, group: tuple[str, str], plain: PageYield) -> bool:
        """Tell whether a plain page yields far less than its group's samples did."""
        samples = self.groups[group].plain_yields
        if plain.records == 0 and min(sample.records for sample in samples) > 0:
            return True
        typical = median(sample.text_chars for sample in samples)
        return plain.text_chars < _FAILING_TEXT_FRACTION * typical

    def decisions(self) -> dict[str, int]:
        """Return how many groups are rendered, plain, or still being sampled."""
        counts = {"render": 0, "plain": 0, "sample": 0, "wait": 0}
        for state in self.groups.values():
            counts[state.decision] += 1
        return counts
