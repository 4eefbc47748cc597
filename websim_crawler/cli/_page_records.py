"""Pages and feed records as records for the end-of-crawl stages: ``websim index`` and ``match``.

Sources are read by the one reader (``cli._sources``): saved pages (a screenshot is the PNG of
the same name beside a page, when there is one), folders, http(s) URLs, and crawl feeds (``.jsonl``,
``.jsonl.gz``); with ``render`` the pages are rendered and screenshotted by the browser module
as ``websim compare --render`` renders them. A page that cannot be read is yielded as its reason.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websim_crawler.cli._settings import progress
from websim_crawler.cli._sources import (
    PAGE_SUFFIXES,
    FeedReader,
    is_url,
    page_locations,
    read_page,
)
from websim_crawler.cli._stages import Stage, take_records
from websim_crawler.config import WebsimConfig
from websim_crawler.core.stages import StagePlan
from websim_crawler.errors import PageError

FEED_SUFFIXES = (".jsonl", ".jsonl.gz")


def is_feed(source: str) -> bool:
    """Tell whether a source is a crawl feed (JSON Lines) rather than pages."""
    return not is_url(source) and source.lower().endswith(FEED_SUFFIXES)


def screenshot_beside(location: str) -> Path | None:
    """Return the PNG of the same name beside a saved page (``a.html`` -> ``a.png``), if any."""
    if is_url(location):
        return None
    lowered = location.lower()
    for suffix in PAGE_SUFFIXES:
        if lowered.endswith(suffix):
            candidate = Path(location[: -len(suffix)] + ".png")
            return candidate if candidate.is_file() else None
    return None


@dataclass
class SourceRecords:
    """The records of a command's sources, and what could not be read (one line each)."""

    sources: Sequence[str]
    config: WebsimConfig
    render: bool = False
    problems: list[str] = field(default_factory=list)
    feeds: FeedReader | None = None

    def __iter__(self) -> Iterator[dict[str, Any] | PageError]:
        """Yield each page's record (``url``, ``html``, ``screenshot``) or why it is unreadable."""
        pages = [source for source in self.sources if not is_feed(source)]
        feeds = [source for source in self.sources if is_feed(source)]
        if pages:
            found = page_locations(pages, self.config.inputs)
            if found.left_out:
                self.problems.append(
                    f"{found.left_out} page file(s) left out (WEBSIM_MAX_INPUT_FILES)"
                )
            yield from self._pages(found.locations)
        if feeds:
            self.feeds = FeedReader(feeds, self.config.inputs, self.config.items.html_field)
            self.problems.extend(self.feeds.failed)
            yield from self.feeds

    def _pages(self, locations: list[str]) -> Iterator[dict[str, Any] | PageError]:
        html_field = self.config.items.html_field
        if self.render:
            from websim_crawler.cli.compare import render_pages

            rendered, _counters = render_pages(locations, self.config)
            for location, (html, screenshot) in zip(locations, rendered, strict=True):
                url = location if is_url(location) else Path(location).resolve().as_uri()
                yield {"url": url, html_field: html, "screenshot": screenshot or None}
            return
        for location in locations:
            try:
                page = read_page(location, self.config)
                beside = screenshot_beside(location)
                png = read_page(str(beside), self.config).body if beside else None
            except PageError as exc:
                self.problems.append(str(exc))
                yield exc
                continue
            yield {"url": page.url, html_field: page.body, "screenshot": png}


def add_page_sources(parser: argparse.ArgumentParser) -> None:
    """Add the pages a command reads (``PATH_OR_URL...``) and ``--render``."""
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="PATH_OR_URL",
        help="HTML files (a PNG of the same name beside one is its screenshot), folders, "
        "http(s) URLs or crawl feeds (.jsonl, .jsonl.gz)",
    )
    parser.add_argument(
        "--render", action="store_true", help="render and screenshot the pages (Chromium)"
    )


def take_pages(stage: Stage, args: argparse.Namespace, config: WebsimConfig) -> list[str]:
    """Prepare every page of ``args.sources`` for the similarity stage in the worker pool and
    give it to ``stage`` (an unreadable page is skipped as ``unreadable_<reason>``); return the
    problems met, one line each."""
    records = SourceRecords(args.sources, config, render=args.render)

    def readable() -> Iterator[dict[str, Any]]:
        for record in records:
            if isinstance(record, PageError):
                stage.skip(f"unreadable_{record.reason}")
            else:
                yield record

    plan = StagePlan(
        config.analysis, html_field=config.items.html_field, similarity=config.similarity
    )
    take_records(stage, progress(readable(), args, desc="pages", unit="page"), config, plan)
    if records.feeds is not None:
        records.problems.extend(records.feeds.problems())
    return records.problems
