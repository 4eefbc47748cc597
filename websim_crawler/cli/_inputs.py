"""Every ``websim`` command's inputs, recognised by their content: one reader behind them all.

A source is an http(s) URL, a folder, a glob pattern or a file; a file is told by its first bytes
(after gzip), never by its name: a WARC (``WARC/1.x``), a WACZ (a zip holding ``archive/*.warc``),
a JSON Lines feed (a crawl's feed or ``websim extract`` output: ``{``) or an HTML page. Folders
and patterns give their files of these kinds (sorted, at most ``WEBSIM_MAX_INPUT_FILES``).
``InputReader`` yields every input as records (iterated: cluster, similar, neardup, index,
match; a saved page's screenshot is the PNG of the same name beside it) or as pages to analyse
(``pages``, for extract); archives are read by ``core.archive.reading``, feeds by
``FeedReader`` and pages by ``read_page``, each with its bounds; every record left out is counted
by reason and told in one summary line.
"""

from __future__ import annotations

import glob
import os
import sys
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from websim_crawler.cli._sources import (
    FeedReader,
    PageSource,
    count_line,
    feed_problem,
    is_url,
    location_url,
    read_page,
)
from websim_crawler.config import WebsimConfig
from websim_crawler.core.archive.reading import (
    ArchivedPage,
    ArchiveReport,
    archive_kind,
    iter_archive_pages,
    looks_like_html,
    record_html,
    resolve_engine,
)
from websim_crawler.core.io import ReadReport
from websim_crawler.errors import InputFormatError, MissingExtraError, NothingUsableError, PageError
from websim_crawler.workers.tasks import PageOutcome

_SNIFF_BYTES = 4096
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_GZIP_BYTES = 64 << 10  # compressed bytes read to inflate the first _SNIFF_BYTES
_GLOB_CHARACTERS = frozenset("*?[")
KINDS = ("url", "html", "feed", "warc", "wacz")
_EXPECTED_SKIPS = frozenset({"duplicate_url", "cut_last_line"})
_PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz", ".xhtml.gz")


def screenshot_beside(location: str) -> Path | None:
    """Return the PNG of the same name beside a saved page (``a.html`` -> ``a.png``), if any."""
    if is_url(location):
        return None
    lowered = location.lower()
    for suffix in _PAGE_SUFFIXES:
        if lowered.endswith(suffix):
            candidate = Path(location[: -len(suffix)] + ".png")
            return candidate if candidate.is_file() else None
    return None


def sniff(path: str) -> str | None:
    """Return the kind of a file by its first bytes (gzip opened): warc, wacz, feed or html."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            if head.startswith(_GZIP_MAGIC):  # inflated leniently: a file cut by a kill or still
                handle.seek(0)  # being written (NAME.warc.gz.open) is told by what it holds
                inflater = zlib.decompressobj(wbits=31)
                head = inflater.decompress(handle.read(_SNIFF_GZIP_BYTES), _SNIFF_BYTES)
    except (OSError, zlib.error):
        return None
    return content_kind(head)


def content_kind(head: bytes) -> str | None:
    """Return the kind of input the first bytes (inflated) show: warc, wacz, feed or html."""
    kind = archive_kind(head)
    if kind is not None:
        return "wacz" if kind == "zip" else kind
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return "feed"
    if text.startswith(b"<") or looks_like_html(text):
        return "html"
    return None


@dataclass
class Inputs:
    """The sources a command reads, each with its kind, after folders and patterns expanded."""

    sources: list[tuple[str, str]] = field(default_factory=list)  # (location, kind)
    left_out: int = 0  # files beyond WEBSIM_MAX_INPUT_FILES
    not_inputs: int = 0  # files in folders that are no page, feed or archive
    not_regular: int = 0  # FIFOs, sockets and devices in folders, not read

    def of_kind(self, *kinds: str) -> list[str]:
        """Return the locations of the given kinds, in order."""
        return [location for location, kind in self.sources if kind in kinds]


def read_pages(
    sources: str | Sequence[str], settings: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield one ``dict`` per page of ``sources`` (as ``InputReader`` does), each URL once.

    Takes ``sources``: a path or URL, or a sequence of them (HTML pages, crawl feeds,
    WARC/WACZ, folders, glob patterns, http(s) URLs), told by content; ``settings``:
    ``WEBSIM_*`` values (the input bounds), validated as a crawl's. Yields ``dict`` records with
    ``url`` and ``html`` (``str`` when a header declared its charset, else ``bytes`` that
    ``analyse_page`` decodes); raises
    ``InputFormatError`` when nothing is readable.
    """
    config = WebsimConfig.from_settings(dict(settings or {}))
    yield from InputReader([sources] if isinstance(sources, str) else list(sources), config)


def find_inputs(sources: Sequence[str], config: WebsimConfig) -> Inputs:
    """Tell each source's kind by content; expand folders and glob patterns.

    A file given by name that is none of the kinds is an ``InputFormatError`` naming it; in a
    folder it is counted in ``not_inputs``.
    """
    found = Inputs()
    limit = config.inputs.max_files
    empty_folders: list[str] = []
    for source in sources:
        if is_url(source):
            _add(found, source, "url", limit)
        elif Path(source).is_dir():
            before = len(found.sources) + found.left_out
            _add_folder(found, Path(source), limit)
            if len(found.sources) + found.left_out == before:
                empty_folders.append(source)
        elif not Path(source).exists() and _GLOB_CHARACTERS & set(source):
            matches = sorted(glob.glob(source, recursive=True))
            if not matches:
                raise InputFormatError(f"{source}: no file matches this pattern")
            for match in matches:
                if Path(match).is_dir():
                    _add_folder(found, Path(match), limit)
                else:
                    _add_file(found, match, limit, given=False)
        else:
            _add_file(found, source, limit, given=True)
    if not found.sources:
        where = ", ".join(empty_folders) or ", ".join(sources)
        raise InputFormatError(
            f"nothing to read: {where} holds no .html page, crawl feed or WARC/WACZ archive; "
            "give those, folders of them or http(s) URLs"
        )
    return found


def nothing_left(
    work: str, sources: Sequence[str], skipped: Mapping[str, int], fix: str
) -> InputFormatError:
    """Return the error of a run that kept no page to ``work`` on, raised before its output is
    written (an empty report would read as a negative answer; the old one stays as it was).

    ``NothingUsableError`` (exit 1, inputs that failed) when pages failed their analysis, else
    ``InputFormatError`` (exit 2: no usable input), naming the pages left out by reason.
    """
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()) if count)
    error = (
        NothingUsableError if any(r.startswith("analysis_") for r in skipped) else InputFormatError
    )
    return error(
        f"no page to {work} in {', '.join(sources)} (left out: {reasons or 'none read'}); {fix}"
    )


def _add(found: Inputs, location: str, kind: str, limit: int) -> None:
    if len(found.sources) < limit:
        found.sources.append((location, kind))
    else:
        found.left_out += 1


def _add_file(found: Inputs, path: str, limit: int, *, given: bool) -> None:
    if not Path(path).is_file():  # never opened: a FIFO would block the read forever
        if given:  # missing or not a file: reading it says why (a page counted as unreadable)
            _add(found, path, "html", limit)
        else:
            found.not_regular += 1
        return
    kind: str | None = sniff(path)
    if kind is None:
        if not given:
            found.not_inputs += 1
            return
        # Given by name: text is read as a feed, whose reader says what its lines are.
        feed_issue = feed_problem(path)
        if feed_issue is not None:
            raise InputFormatError(feed_issue)
        kind = "feed"
    _add(found, path, kind, limit)


def _add_folder(found: Inputs, folder: Path, limit: int) -> None:
    for directory, subfolders, files in os.walk(folder):
        subfolders.sort()
        for name in sorted(files):
            _add_file(found, str(Path(directory) / name), limit, given=False)


@dataclass(frozen=True)
class PageInput:
    """One page for ``websim extract``: what to analyse (or why not) and fields to keep."""

    location: str
    work: tuple[bytes | str, str | None, str | None] | PageOutcome
    fields: dict[str, Any]  # url and, from an archive, the record it came from


class InputReader:
    """Read every source a command is given as records or pages, counting what is left out.

    Takes ``sources``: paths (HTML pages, crawl feeds, WARC/WACZ archives, folders, glob
    patterns) and http(s) URLs, told by content; ``config``: a ``WebsimConfig`` (its bounds).
    Iterating yields one ``dict`` per page (``url``, ``html`` as ``str`` or ``bytes``, and an
    archive's ``warc_*`` fields; a feed's lines as they are); ``skipped`` counts what was left out.
    """

    def __init__(
        self,
        sources: Sequence[str],
        config: WebsimConfig,
        html_field: str = "html",
        *,
        screenshots: bool = False,
    ) -> None:
        self.config = config
        self.html_field = html_field
        self.screenshots = screenshots  # records of saved pages carry the PNG beside them
        # Pages rendered before reading (websim index/match --render): location -> (HTML, PNG).
        self.rendered: dict[str, tuple[str, bytes]] = {}
        self.inputs = find_inputs(sources, config)
        self.archives = ArchiveReport()
        self.skipped: dict[str, int] = {}  # records of pages and archives left out, by reason
        self.failed: list[str] = []
        self.page_sources = 0
        self.records_read = 0
        self.screenshots_read = 0  # PNGs beside saved pages, read with them
        feeds = self.inputs.of_kind("feed")
        self.feeds = FeedReader(feeds, config.inputs, html_field) if feeds else None
        self.engine = ""
        if self.inputs.of_kind("warc", "wacz"):
            try:
                self.engine = resolve_engine(config.inputs.warc_reader)
            except ImportError as exc:
                raise MissingExtraError(
                    f"reading WARC needs fastwarc or warcio ({exc}): pip install "
                    "'websim-crawler[warc]'"
                ) from exc
        self._seen: set[str] = set()

    @property
    def paths(self) -> list[str]:
        """Return the feed files among the inputs (the Dask paths read them by path)."""
        return self.feeds.paths if self.feeds is not None else []

    @property
    def report(self) -> ReadReport:
        """Return the feeds' read report (an empty one when no feed was given)."""
        return self.feeds.report if self.feeds is not None else ReadReport()

    def skip(self, reason: str) -> None:
        """Count one record left out before a command saw it."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _first(self, url: str) -> bool:
        if url in self._seen:
            self.skip("duplicate_url")
            return False
        self._seen.add(url)
        return True

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Yield a record per page of every source (feeds as they are), each URL once."""
        for location, kind in self.inputs.sources:
            if kind == "feed":
                continue  # read together below: the feed reader counts a URL once among feeds
            if kind in ("warc", "wacz"):
                for page in self._archive_pages(location):
                    if self._first(page.url):
                        self.records_read += 1
                        yield self._archive_record(page)
            elif location in self.rendered:
                html, shot = self.rendered[location]
                self.page_sources += 1
                if self._first(location_url(location)):
                    self.records_read += 1
                    yield {
                        "url": location_url(location),
                        self.html_field: html,
                        "screenshot": shot or None,
                    }
            else:
                try:
                    source = read_page(location, self.config)
                    png = self._screenshot(location)
                except PageError as exc:
                    self.skip(exc.reason)
                    self.failed.append(str(exc))
                    continue
                self.page_sources += 1
                if self._first(source.url):
                    self.records_read += 1
                    yield self._page_record(source, png)
        if self.feeds is not None:
            for record in self.feeds:
                url = record.get("url")
                if isinstance(url, str) and url in self._seen:
                    self.skip("duplicate_url")
                    continue
                if isinstance(url, str):
                    self._seen.add(url)
                self.records_read += 1
                yield cast(dict[str, Any], record)  # a feed line: a page record like the others

    def _screenshot(self, location: str) -> bytes | None:
        """Return the PNG beside a saved page when screenshots are asked for (bounded)."""
        beside = screenshot_beside(location) if self.screenshots else None
        if beside is None:
            return None
        png = read_page(str(beside), self.config).body
        self.screenshots_read += 1
        return png

    def _page_record(self, source: PageSource, png: bytes | None) -> dict[str, Any]:
        """Return a page read alone as a record; bytes that do not decode give no HTML."""
        try:  # a fetched page's header may declare its charset, as an archive's
            html: str | bytes = record_html(source.body, source.content_type)
        except PageError as exc:
            self.skip(f"undecodable_{exc.reason}")
            html = b""
        record: dict[str, Any] = {"url": source.url, self.html_field: html}
        if self.screenshots:
            record["screenshot"] = png
        return record

    def pages(self) -> Iterator[PageInput]:
        """Yield each page to analyse, with the fields its output keeps (``websim extract``)."""
        for location, kind in self.inputs.sources:
            if kind in ("warc", "wacz"):
                for page in self._archive_pages(location):
                    if self._first(page.url):
                        self.records_read += 1
                        yield PageInput(
                            location,
                            (page.body, page.url, page.content_type),
                            {"url": page.url, **page.provenance()},
                        )
            elif kind == "feed":
                yield from self._feed_pages(location)
            else:
                try:
                    source = read_page(location, self.config)
                except PageError as exc:
                    self.skip(exc.reason)
                    yield PageInput(location, PageOutcome(dropped=exc.reason, message=str(exc)), {})
                    continue
                self.page_sources += 1
                if self._first(source.url):
                    self.records_read += 1
                    yield PageInput(location, (source.body, source.url, source.content_type), {})

    def _feed_pages(self, location: str) -> Iterator[PageInput]:
        """Yield the pages of one feed: records with HTML; those without are counted."""
        reader = FeedReader([location], self.config.inputs, self.html_field)
        for record in reader:
            url = record.get("url")
            html = record.get(self.html_field)
            if not isinstance(url, str) or not url:
                self.skip("no_url")
            elif not isinstance(html, (str, bytes)) or not html:
                self.skip("no_html")
            elif self._first(url):
                self.records_read += 1
                yield PageInput(location, (html, url, None), {"url": url})
        for reason, count in reader.report.skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.failed.extend(reader.failed)

    def _archive_pages(self, location: str) -> Iterator[ArchivedPage]:
        try:
            yield from iter_archive_pages(
                location,
                self.archives,
                max_page_bytes=self.config.analysis.max_page_bytes,
                engine=self.engine,
            )
        except OSError as exc:
            self.archives.failed.append(f"cannot read {location}: {exc.strerror or exc}")

    def _archive_record(self, page: ArchivedPage) -> dict[str, Any]:
        """Return a page of an archive as a feed record (bytes that do not decode: no HTML)."""
        try:
            return page.as_record(self.html_field)
        except PageError as exc:
            self.skip(f"undecodable_{exc.reason}")
            return {"url": page.url, self.html_field: b"", **page.provenance()}

    @property
    def archives_read_in_vain(self) -> bool:
        """True when no page was read although archives were: their records (or their damage)
        were met and each was skipped and counted, so the inputs failed rather than being
        unreadable (exit code 1, not 2)."""
        met = self.archives.records or self.archives.failed
        return not self.records_read and bool(met)

    def check_read(self) -> None:
        """Raise ``InputFormatError`` when no source gave a single record (``NothingUsableError``
        when archives were read but none of their records was a page)."""
        if self.records_read:
            return
        lines = [line for line in (self.summary(), *self.problems()) if line]
        if self.feeds is not None and not self.inputs.of_kind("warc", "wacz", "html", "url"):
            self.feeds.check_read()
        error = NothingUsableError if self.archives_read_in_vain else InputFormatError
        raise error(
            "no page to work on in "
            + ", ".join(location for location, _kind in self.inputs.sources[:5])
            + (f" ({'; '.join(lines)})" if lines else "")
        )

    def summary(self) -> str:
        """Return the one count line: pages read, pages left out by reason, and what the
        archives held when there were any."""
        skipped = Counter(self.skipped) + Counter(self.report.skipped)
        skipped += Counter(self.archives.skipped)
        parts = [count_line(self.records_read, skipped)]
        if self.archives.records or self.archives.failed:
            parts.append(self.archives.summary(skips=False))
        return "; ".join(parts)

    def print_summary(self, command: str) -> None:
        """Print the count line on stderr (every command that reads pages prints it)."""
        print(f"websim {command}: {self.summary()}", file=sys.stderr)

    def problems(self) -> list[str]:
        """Return one line per source that could not be read and per kind of bad feed line."""
        lines = list(self.failed) + list(self.archives.failed)
        if self.feeds is not None:
            lines.extend(self.feeds.problems())
        if self.inputs.left_out:
            lines.append(
                f"{self.inputs.left_out} file(s) left out over WEBSIM_MAX_INPUT_FILES="
                f"{self.config.inputs.max_files}"
            )
        return lines
