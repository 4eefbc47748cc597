"""A generated family of search sites routed by path, by query string, or both.

:class:`RoutedSite` serves, on 127.0.0.1 port 0, a search site whose shape is drawn from a
:class:`Variant` and a seed: record pages at ``/item/ID`` (path), ``/index.php?id=ID`` (query)
or both (one result list each way), search at ``/search?q=word`` or ``/index.php?q=word``; one
to three result lists on a result page, each under its own heading (title matches, text matches,
tag matches) beside a "did you mean" aside; footer chrome on every page ("Retrieved from" this
page's URL, a permalink, a printable version, language links); record ids with a slash (one
more path segment than their siblings) and with encoded characters; a "next" link past the last
page onto an empty "No results" page. The records are documents of the gallery's corpus
(:func:`support.real_apps.corpus`, labelled by section). Each record is listed by exactly one
query, in exactly one list, on exactly one result page, so a list the crawl drops is visible.

The site knows its ground truth: what each query lists (:meth:`RoutedSite.listed`), the record
at a URL (:meth:`RoutedSite.record_number`, :meth:`RoutedSite.label_of`), the lists of every
result page it served (:attr:`RoutedSite.served_lists`) and the empty result pages it served
(:attr:`RoutedSite.served_empty`). It has the launcher interface of ``real_apps`` (a context
manager with ``name``, ``url``, ``start_path``, ``queries``, ``rendered``), so ``crawl_app``
crawls it.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

from support.real_apps import Record, corpus

QUERIES = ("thread", "unicode", "exception")
LIST_HEADINGS = ("Title matches", "Text matches", "Tag matches")
PER_PAGE = 10  # records a list shows on one result page: no query needs more than 4 pages
_LANGUAGES = (("de", "Deutsch"), ("fr", "Français"), ("ja", "日本語"))


@dataclass(frozen=True)
class Variant:
    """The shape of one generated site."""

    routing: str  # "path", "query" or "both"
    lists: int  # result lists on a result page (1 to 3)
    footer: bool = True  # "Retrieved from", permalink, printable version, language links
    odd_ids: bool = True  # ids with a slash (one more segment) and with encoded characters
    past_end: bool = True  # "next" on the last result page, onto an empty "No results" page
    seed: int = 0

    @property
    def name(self) -> str:
        flags = "".join(
            flag
            for flag, on in (("f", self.footer), ("s", self.odd_ids), ("e", self.past_end))
            if on
        )
        return f"routed-{self.routing}-{self.lists}lists-{flags or 'plain'}-{self.seed}"


# The variants the tests and the benchmark crawl.
VARIANTS = (
    Variant("query", 1),
    Variant("query", 2),
    Variant("query", 3, seed=1),
    Variant("path", 2, seed=2),
    Variant("path", 3, seed=3),
    Variant("both", 2, seed=4),
    Variant("query", 2, footer=False, odd_ids=False, past_end=False, seed=5),
)


def small_corpus() -> list[Record]:
    """Return the corpus the generated sites serve: no query of theirs runs past the crawl's
    five result pages."""
    return corpus(per_section=12)


def routed_launcher(variant: Variant) -> Callable[[list[Record], Path], RoutedSite]:
    """Return a gallery launcher of ``variant`` (it serves :func:`small_corpus`, whatever
    corpus it is given)."""

    def launch(records: list[Record], workdir: Path) -> RoutedSite:
        return RoutedSite(small_corpus(), variant)

    return launch


def record_id(record: Record, variant: Variant) -> str:
    """Return the id of ``record`` on the site: every fourth has a slash, every seventh an
    accented letter and a space (when the variant has odd ids)."""
    if variant.odd_ids and record.number % 4 == 0:
        return f"doc-{record.number}/notes"
    if variant.odd_ids and record.number % 7 == 0:
        return f"doc-{record.number} café"
    return f"doc-{record.number}"


class RoutedSite:
    """One generated site of the family (see the module's docstring)."""

    rendered = False

    def __init__(self, records: list[Record], variant: Variant) -> None:
        if not 1 <= variant.lists <= 3 or variant.routing not in ("path", "query", "both"):
            raise ValueError(f"no such variant: {variant}")
        self.variant = variant
        self.name = variant.name
        self.queries = QUERIES
        self.records = {record.number: record for record in records}
        self.ids = {record.number: record_id(record, variant) for record in records}
        self.numbers = {record_id: number for number, record_id in self.ids.items()}
        self.start_path = "index.php" if variant.routing != "path" else ""
        self.search_path = "/search" if variant.routing == "path" else "/index.php"
        # Each record is listed by one query, in one list: drawn from the seed.
        draw = random.Random(variant.seed)
        self.lists: dict[str, list[list[int]]] = {
            query: [[] for _ in range(variant.lists)] for query in QUERIES
        }
        for number in sorted(self.records):
            self.lists[draw.choice(QUERIES)][draw.randrange(variant.lists)].append(number)
        self.served_lists: dict[str, list[set[int]]] = {}
        self.served_empty: set[str] = set()
        self.lock = threading.Lock()

    # Ground truth -------------------------------------------------------------------------

    def record_url(self, number: int, list_number: int = 0) -> str:
        """Return the URL of a record as list ``list_number`` links it."""
        by_path = self.variant.routing == "path" or (
            self.variant.routing == "both" and list_number == 0
        )
        record_id = self.ids[number]
        if by_path:
            return f"{self.url}item/{quote(record_id, safe='/')}"
        return f"{self.url}index.php?id={quote_plus(record_id, safe='/')}"

    def listed(self, query: str) -> set[str]:
        """Return the record URLs ``query`` lists (on all its result pages)."""
        return {
            self.record_url(number, list_number)
            for list_number, numbers in enumerate(self.lists[query])
            for number in numbers
        }

    def record_number(self, url: str) -> int | None:
        """Return the number of the record at ``url``, or ``None``."""
        return self.numbers.get(self._record_id(urlsplit(url).path, urlsplit(url).query) or "")

    def label_of(self, url: str) -> str | None:
        """Return the corpus label of the record at ``url`` (``None``: not a record)."""
        number = self.record_number(url)
        return self.records[number].label if number is not None else None

    def _record_id(self, path: str, query: str) -> str | None:
        fields = parse_qs(query)
        if path.startswith("/item/") and not fields:
            return unquote(path.removeprefix("/item/"))
        if path == "/index.php" and set(fields) == {"id"}:
            return fields["id"][0]
        return None

    # Serving ------------------------------------------------------------------------------

    def __enter__(self) -> RoutedSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = site.answer(self.path)
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, target: str) -> tuple[int, str]:
        """Return the status and page for a request target (path and query)."""
        parts = urlsplit(target)
        fields = {name: values[0] for name, values in parse_qs(parts.query).items()}
        this_url = self.url.rstrip("/") + target
        if parts.path == self.search_path and "q" in fields:
            plain = set(fields) <= {"q", "page"}  # not a permalink, print or language copy
            return 200, self.result_page(fields["q"], fields.get("page", "1"), this_url, plain)
        record_id = self._record_id(parts.path, parts.query)
        if record_id is not None and record_id in self.numbers:
            return 200, self.record_page(self.records[self.numbers[record_id]], this_url)
        if parts.path in ("/", "/index.php") and not fields:
            return 200, self.page(
                "Welcome", "<p>Search the documents of the archive.</p>", this_url
            )
        if parts.path in ("/", "/index.php", "/search", "/about", "/help"):  # chrome variants
            return 200, self.page(
                "Archive", "<p>About the archive and how to search it.</p>", this_url
            )
        return 404, self.page("Not found", "<p>No such page.</p>", this_url)

    def result_page(self, query: str, page_text: str, this_url: str, counted: bool) -> str:
        """Return result page ``page`` of ``query``; count what it lists when ``counted``."""
        lists = self.lists.get(query.strip().lower())
        page = int(page_text) if page_text.isdigit() and int(page_text) >= 1 else 1
        if lists is None:
            lists = [[] for _ in range(self.variant.lists)]
        start = (page - 1) * PER_PAGE
        shown = [numbers[start : start + PER_PAGE] for numbers in lists]
        more = any(len(numbers) > start + PER_PAGE for numbers in lists)
        blocks = []
        for list_number, numbers in enumerate(shown):
            if not numbers:
                continue
            heading = LIST_HEADINGS[list_number] if self.variant.lists > 1 else "Results"
            items = "".join(
                f'<li><a href="{escape(self.record_url(number, list_number))}">'
                f"{escape(self.records[number].title)}</a>"
                f"<p>{escape(self.records[number].text[:160])}</p></li>"
                for number in numbers
            )
            blocks.append(f'<h2>{heading}</h2>\n<ul class="results">{items}</ul>')
        empty = not blocks
        with self.lock:
            if not counted:
                pass
            elif empty:
                self.served_empty.add(this_url)
            else:
                self.served_lists[this_url] = [set(numbers) for numbers in shown if numbers]
        body = (
            "\n".join(blocks) if blocks else '<p class="nothing">No results match your search.</p>'
        )
        suggestion = next(word for word in QUERIES if word != query)
        aside = (
            f'<aside class="suggest"><h3>Did you mean</h3><a href="{self.search_link(suggestion)}">'
            f"{escape(suggestion)}</a></aside>"
            if self.variant.lists == 3
            else ""
        )
        pager = []
        if page > 1:
            pager.append(f'<a href="{self.search_link(query, page - 1)}">previous</a>')
        if more or (self.variant.past_end and not empty):
            pager.append(
                f'<a class="next" href="{self.search_link(query, page + 1)}">next {PER_PAGE}</a>'
            )
        content = (
            f"<h1>Search results</h1><p>Results for <b>{escape(query)}</b>, page {page}</p>\n"
            f'{body}\n{aside}<div class="pager">{" | ".join(pager)}</div>'
        )
        return self.page(f"Search results for {query}", content, this_url)

    def search_link(self, query: str, page: int = 1) -> str:
        """Return the (escaped) URL of a result page."""
        tail = f"&amp;page={page}" if page > 1 else ""
        return f"{self.search_path}?q={quote_plus(query)}{tail}"

    def record_page(self, record: Record, this_url: str) -> str:
        """Return a record's page."""
        return self.page(
            record.title, f"<h1>{escape(record.title)}</h1>\n<p>{escape(record.text)}</p>", this_url
        )

    def page(self, title: str, content: str, this_url: str) -> str:
        """Return a page of the site: header with the search form, content, footer chrome."""
        home = "/index.php" if self.variant.routing != "path" else "/"
        header = (
            f'<div id="header"><a href="{home}">Archive</a> <a href="/about">About</a> '
            f'<a href="/help">Help</a><form action="{self.search_path}" method="get">'
            '<input type="text" name="q"><input type="submit" value="Search"></form></div>'
        )
        footer = ""
        if self.variant.footer:
            joiner = "&amp;" if "?" in this_url else "?"
            shown = escape(this_url)
            languages = " ".join(
                f'<a href="{shown}{joiner}lang={code}" hreflang="{code}">{name}</a>'
                for code, name in _LANGUAGES
            )
            footer = (
                f'<div id="footer"><p>Retrieved from "<a href="{shown}">{shown}</a>"</p>'
                f'<ul><li><a href="{shown}{joiner}permalink=1">Permanent link</a></li>'
                f'<li><a href="{shown}{joiner}printable=yes">Printable version</a></li></ul>'
                f"<p>Languages: {languages}</p></div>"
            )
        return (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)} - Archive'
            f'</title></head><body>{header}<div id="content">{content}</div>{footer}</body></html>'
        )
