"""A gallery of generated "hidden database" search sites with known ground truth, for surfacing.

Each site (:class:`HiddenDatabaseSite`, configured by a frozen :class:`HiddenDatabase` spec)
serves, on 127.0.0.1 port 0, a catalogue of at least 300 records of real text reachable only
through its search: English records are sections of Debian's Python documentation sources
(``python3.11-doc``), labelled by their doc section; German records are groups of MediaWiki's
interface messages (``mediawiki``'s ``de.json``), labelled by their key prefix. Every record also
has seeded attributes: ``year``, ``kind`` (article/book/video, spread evenly in each category),
``has_image`` (about 40%) and a ``published`` date in its year.

Pages (English wording; German sites say the same in German):

- ``/``: chrome, an introduction naming the categories, and by ``entrance``: the search form
  (``"form"``, plus a newsletter and a log-in form as distractions); only an OpenSearch
  ``<link rel="search">`` and no form (``"opensearch"``: search is ``/?s=word``); a "Search" link
  to ``/search`` that holds the form (``"linked"``).
- ``/search?q=word&page=N``: ``<p class="count">Showing 11-20 of the first 50 of 137 results for
  «word»</p>`` (capped) or ``Showing 1-10 of 37 results for «word»``, then
  ``<ol class="results"><li class="result"><a href="/record/ID">Title</a><p>snippet</p></li>``,
  then ``<nav class="pager">`` with numbered links and "Next". An empty answer says ``No results
  for «word»``; an empty search says ``Please enter a search``. Simple forms list matches in
  record-id order (oldest or, by ``listed``, newest first; ids dense or, by ``ids``, with gaps
  as deletions leave); the advanced form's ``sort`` orders all matches before the cap.
- ``/record/ID``: the record. ``/opensearch.xml``, ``/about``, ``/help``, ``/robots.txt``.

The site knows what it holds: :meth:`HiddenDatabaseSite.matches`, :attr:`~HiddenDatabaseSite.
records`, :meth:`~HiddenDatabaseSite.fewest_result_pages`, and counts what it served
(:attr:`~HiddenDatabaseSite.requests`, :attr:`~HiddenDatabaseSite.queries_seen`).
:func:`gallery` and :func:`failing` list the sites; :func:`generic_queries` and
:func:`random_queries` are the benchmark baselines' query lists (from ``wordfreq``).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import functools
import hashlib
import html
import itertools
import json
import math
import random
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from support.real_apps import PYTHON_DOCS, AppMissing

MEDIAWIKI_GERMAN = Path("/usr/share/mediawiki/languages/i18n/de.json")  # apt-get install mediawiki
KINDS = ("article", "book", "video")
SORTS = ("relevance", "title", "year")
PER_PAGE_CHOICES = (10, 20, 50)
MAX_QUERY_BYTES = 1024
MAX_TEXT_CHARS = 1500
MIN_RECORD_WORDS = 15
SNIPPET_CHARS = 160
CAPTCHA_ANSWER = "7"
# English categories are doc sections; "library" holds 2.5 shares so that it exceeds a cap of 50.
_ENGLISH_SHARES = {
    "library": 2.5,
    "c-api": 1.0,
    "reference": 1.0,
    "tutorial": 1.0,
    "howto": 1.0,
    "using": 1.0,
    "faq": 1.0,
    "whatsnew": 1.0,
}
_FILES_PER_SECTION = 40  # evenly spaced in each section (it starts faster than all 467 files)
# German categories are the message-key prefixes with the most records, one share each, as many
# as ``size`` needs (24 for 360 records); the largest holds 34 records, 12 or fewer per kind.
_FORM_FIELDS = ("q", "category", "kind", "has_image", "year", "since")

_WORDS: dict[str, dict[str, Any]] = {
    "en": {
        "site": "The Reading Room",
        "home": "Home",
        "about": "About",
        "help": "Help",
        "search": "Search",
        "placeholder": "Search the collection…",
        "intro": "This collection holds {size} documents in {count} categories: {categories}. "
        "Readers come here for {words}.",
        "intro2": "Documents are not listed anywhere: use the search to find them.",
        "showing_capped": "Showing {first}-{last} of the first {cap} of {total} results for «{q}»",
        "showing": "Showing {first}-{last} of {total} results for «{q}»",
        "results_for": "Results for «{q}»",
        "no_results": "No results for «{q}»",
        "beyond": "No results on page {page} for «{q}»",
        "please": "Please enter a search.",
        "selection": "your selection",
        "ignored": "Common words were ignored: {words}",
        "rejected": "Your search contains a common word ({words}); please remove it.",
        "failed": "The search failed. Please try again later.",
        "captcha": "What is three plus four?",
        "captcha_wrong": "Wrong or missing answer to the security question.",
        "bad_input": "Invalid search: {what}",
        "not_found": "Page not found.",
        "too_long": "The request is too long.",
        "next": "Next",
        "previous": "Previous",
        "all": "All",
        "any": "Any",
        "category": "Category",
        "kind": "Kind",
        "kinds": {"article": "Article", "book": "Book", "video": "Video"},
        "sort": "Sort by",
        "sorts": {"relevance": "Relevance", "title": "Title", "year": "Year"},
        "per_page": "Results per page",
        "has_image": "With image only",
        "year": "Year",
        "since": "Published since",
        "yes": "yes",
        "no": "no",
        "published": "Published",
        "newsletter": "Subscribe to our newsletter",
        "email": "Your e-mail",
        "subscribe": "Subscribe",
        "login": "Log in",
        "user": "User name",
        "password": "Password",
        "thanks": "Thank you.",
        "help_text": "Type one or more words. Results are listed in catalogue order.",
        "footer": "Texts from the Python documentation (PSF License).",
    },
    "de": {
        "site": "Das Lesezimmer",
        "home": "Startseite",
        "about": "Über uns",
        "help": "Hilfe",
        "search": "Suche",
        "placeholder": "Sammlung durchsuchen…",
        "intro": "Diese Sammlung enthält {size} Einträge in {count} Kategorien: {categories}. "
        "Gesucht wird hier nach {words}.",
        "intro2": "Die Einträge werden nirgends aufgelistet: Bitte benutzen Sie die Suche.",
        "showing_capped": "Treffer {first}-{last} der ersten {cap} von {total} Treffern für «{q}»",
        "showing": "Treffer {first}-{last} von {total} Treffern für «{q}»",
        "results_for": "Treffer für «{q}»",
        "no_results": "Keine Treffer für «{q}»",
        "beyond": "Keine Treffer auf Seite {page} für «{q}»",
        "please": "Bitte geben Sie einen Suchbegriff ein.",
        "selection": "Ihre Auswahl",
        "ignored": "Häufige Wörter wurden ignoriert: {words}",
        "rejected": "Ihre Suche enthält ein häufiges Wort ({words}); bitte entfernen Sie es.",
        "failed": "Die Suche ist fehlgeschlagen. Bitte versuchen Sie es später erneut.",
        "captcha": "Was ist drei plus vier?",
        "captcha_wrong": "Falsche oder fehlende Antwort auf die Sicherheitsfrage.",
        "bad_input": "Ungültige Suche: {what}",
        "not_found": "Seite nicht gefunden.",
        "too_long": "Die Anfrage ist zu lang.",
        "next": "Weiter",
        "previous": "Zurück",
        "all": "Alle",
        "any": "Beliebig",
        "category": "Kategorie",
        "kind": "Art",
        "kinds": {"article": "Artikel", "book": "Buch", "video": "Video"},
        "sort": "Sortieren nach",
        "sorts": {"relevance": "Relevanz", "title": "Titel", "year": "Jahr"},
        "per_page": "Treffer pro Seite",
        "has_image": "Nur mit Bild",
        "year": "Jahr",
        "since": "Erschienen seit",
        "yes": "ja",
        "no": "nein",
        "published": "Erschienen",
        "newsletter": "Newsletter abonnieren",
        "email": "Ihre E-Mail-Adresse",
        "subscribe": "Abonnieren",
        "login": "Anmelden",
        "user": "Benutzername",
        "password": "Passwort",
        "thanks": "Vielen Dank.",
        "help_text": "Geben Sie ein oder mehrere Wörter ein. Treffer erscheinen in Katalogfolge.",
        "footer": "Texte aus den Oberflächenmeldungen von MediaWiki (GPL).",
    },
}


@dataclass(frozen=True)
class HiddenDatabase:
    """The spec of one generated search site (see the module docstring for the pages)."""

    name: str
    language: str = "en"  # "en" | "de"
    size: int = 360  # records
    cap: int | None = 50  # most results one query shows in all (None: every match)
    page_size: int = 10  # results per result page (the advanced form's default per_page)
    semantics: str = "and"  # "and" | "or" for multi-word queries
    stopwords: str = "ignored"  # "ignored" | "matched" (literal) | "rejected" (HTTP 400)
    stemming: bool = False  # match by a crude suffix-stripping stem on both sides
    shows_count: bool = True  # result pages say how many results there are
    entrance: str = "form"  # "form" | "opensearch" | "linked"
    form: str = "simple"  # "simple" (one text box) | "advanced"
    failure: str | None = None  # None | "empty_always" | "errors_on_some" | "captcha"
    held_out: bool = False  # not for tuning surfacing on: only for measuring it
    listed: str = "oldest"  # simple forms list matches by id: "oldest" | "newest" first
    ids: str = "dense"  # record ids "dense" (1, 2, 3...) | "sparse" (steps of 1 to 6: deletions)
    seed: int = 7  # the records' choice, order and attributes

    def __post_init__(self) -> None:
        allowed: dict[str, tuple[Any, ...]] = {
            "language": ("en", "de"),
            "semantics": ("and", "or"),
            "stopwords": ("ignored", "matched", "rejected"),
            "entrance": ("form", "opensearch", "linked"),
            "form": ("simple", "advanced"),
            "failure": (None, "empty_always", "errors_on_some", "captcha"),
            "listed": ("oldest", "newest"),
            "ids": ("dense", "sparse"),
        }
        for field_name, values in allowed.items():
            if getattr(self, field_name) not in values:
                raise ValueError(f"{field_name} must be one of {values}: {self!r}")
        if self.size < 1 or self.page_size < 1 or (self.cap is not None and self.cap < 1):
            raise ValueError(f"size, page_size and cap must be positive: {self!r}")
        if self.form == "advanced" and self.entrance == "opensearch":
            raise ValueError("an OpenSearch entrance has no form to be advanced")


@dataclass(frozen=True)
class DatabaseRecord:
    """One record of a hidden database: its id (``/record/ID``), text and attributes."""

    id: str
    title: str
    text: str
    category: str
    year: int
    kind: str
    has_image: bool
    published: str  # ISO date within ``year``


def gallery() -> list[HiddenDatabase]:
    """Return the working sites; the ``held_out`` ones are for measuring, not for tuning."""
    return [
        HiddenDatabase("en-and-cap50"),
        HiddenDatabase(
            "en-or-cap20-stopwords-matched", cap=20, semantics="or", stopwords="matched"
        ),
        HiddenDatabase(
            "en-and-uncapped-stopwords-rejected", cap=None, page_size=20, stopwords="rejected"
        ),
        HiddenDatabase("de-and-cap50-stemming", language="de", stemming=True),
        HiddenDatabase("en-opensearch-cap50", entrance="opensearch", shows_count=False),
        HiddenDatabase("en-linked-cap20", entrance="linked", cap=20, held_out=True),
        HiddenDatabase(
            "en-newest-sparse-cap20", cap=20, listed="newest", ids="sparse", seed=29, held_out=True
        ),
        HiddenDatabase("en-advanced-cap50", form="advanced"),
        HiddenDatabase("de-advanced-cap20", language="de", form="advanced", cap=20, held_out=True),
    ]


def failing() -> list[HiddenDatabase]:
    """Return sites whose search fails in each way surfacing must notice."""
    return [
        HiddenDatabase(f"en-{failure.replace('_', '-')}", size=300, failure=failure)
        for failure in ("empty_always", "errors_on_some", "captcha")
    ]


# Query lists for the benchmark baselines ---------------------------------------------------


def generic_queries(language: str, n: int) -> list[str]:
    """Return the ``n`` most frequent alphabetic words of ``language`` that are not stop words."""
    import wordfreq

    stops = stop_words_of(language)
    words = [w for w in wordfreq.top_n_list(language, 30000) if w.isalpha() and w not in stops]
    return words[:n]


def random_queries(language: str, n: int, seed: int) -> list[str]:
    """Return ``n`` words drawn uniformly (seeded) from the language's 30,000 most frequent
    alphabetic words that are not stop words."""
    import wordfreq

    stops = stop_words_of(language)
    pool = [w for w in wordfreq.top_n_list(language, 30000) if w.isalpha() and w not in stops]
    return random.Random(seed).sample(pool, n)


@functools.cache
def stop_words_of(language: str) -> frozenset[str]:
    """Return the ``stop-words`` package's list for ``language``, lower-cased."""
    from stop_words import get_stop_words

    return frozenset(word.lower() for word in get_stop_words(language))


# Words and matching --------------------------------------------------------------------------

_SUFFIXES = {
    "en": (
        "ations",
        "ation",
        "ings",
        "ing",
        "ments",
        "ment",
        "ness",
        "ers",
        "ies",
        "er",
        "es",
        "ed",
        "ly",
        "s",
    ),
    "de": (
        "ungen",
        "heiten",
        "keiten",
        "ung",
        "heit",
        "keit",
        "lich",
        "isch",
        "ern",
        "en",
        "er",
        "es",
        "em",
        "e",
        "n",
        "s",
    ),
}


def words_of(text: str) -> list[str]:
    """Return the lower-cased word tokens (``\\w+``, Unicode) of ``text``."""
    return re.findall(r"\w+", text.lower())


def crude_stem(word: str, language: str) -> str:
    """Strip the longest common suffix that leaves at least three characters."""
    for suffix in _SUFFIXES[language]:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


# The records --------------------------------------------------------------------------------

_UNDERLINE = re.compile(r"([=\-~^*#\"'+`:.])\1{2,}")


def _rst_sections(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """Split reStructuredText lines at section titles (a line over an underline)."""
    sections: list[tuple[str | None, list[str]]] = []
    heading: str | None = None
    body: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        below = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if (
            line
            and not _UNDERLINE.fullmatch(line)
            and _UNDERLINE.fullmatch(below)
            and len(below) >= len(line)
        ):
            if body and _UNDERLINE.fullmatch(body[-1].strip()):
                body.pop()  # an overline
            sections.append((heading, body))
            heading, body = line, []
            index += 2
            continue
        body.append(lines[index])
        index += 1
    sections.append((heading, body))
    return sections


_DIRECTIVE = re.compile(r"\.\.\s+([\w:-]+)::")
_MARKER = re.compile(r"^(\.\.\s+[\w:-]+::|:[\w-]+:)\s*")


def _plain_rst(text: str) -> str:
    """Return reStructuredText as plain words: roles, links, directives' markers dropped."""
    kept = []
    skipping = False
    for line in text.splitlines():
        stripped = line.strip()
        if skipping and line[:1].isspace():
            continue  # the indented entries of an index or author directive
        skipping = False
        if stripped.startswith(".."):
            directive = _DIRECTIVE.match(stripped)
            name = directive.group(1) if directive else ""
            if name in ("", "index") or name.endswith("author"):
                skipping = True  # a comment, label, substitution, index or author
                continue
        if _UNDERLINE.fullmatch(stripped):
            continue  # a transition
        if stripped.startswith(("..", ":")):
            stripped = _MARKER.sub("", stripped)
        kept.append(stripped)
    plain = " ".join(kept)
    plain = re.sub(r":[\w:.-]+:`~?!?([^`<]*?)\s*(?:<[^>]*>)?`", r"\1", plain)
    plain = re.sub(r"`([^`<]*?)\s*<[^>]*>`_+", r"\1", plain)
    plain = re.sub(r"`+([^`]*)`+_?", r"\1", plain)
    plain = re.sub(r"\*\*?([^*\s][^*]*)\*\*?", r"\1", plain)
    return " ".join(plain.split())


def _plain_wikitext(value: str) -> str:
    """Return a MediaWiki message as plain words: templates, parameters, tags, links dropped."""
    text = value
    while True:
        simpler = re.sub(r"\{\{[^{}]*\}\}", " ", text)
        if simpler == text:
            break
        text = simpler
    text = re.sub(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[\S+ ([^\]]*)\]", r"\1", text)
    text = re.sub(r"\[\S+\]", " ", text)
    text = re.sub(r"<[^>]*>", " ", text)
    text = re.sub(r"\$\d+", " ", text)
    text = re.sub(r"'{2,}|__[A-Z]+__|[{}|]|={2,}", " ", text)
    text = re.sub(r"^[*#:;]+", " ", html.unescape(text), flags=re.MULTILINE)
    return " ".join(text.split())


def _shorten(text: str, limit: int) -> str:
    """Cut ``text`` at a word boundary to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0]


@functools.cache
def _english_candidates() -> dict[str, list[tuple[str, str]]]:
    """Return (title, text) of each documentation section with enough words, by doc section."""
    sources = PYTHON_DOCS / "_sources"
    if not sources.is_dir():
        raise AppMissing("needs Debian's python3.11-doc (apt-get install python3.11-doc)")
    candidates: dict[str, list[tuple[str, str]]] = {}
    for section in _ENGLISH_SHARES:
        found = candidates.setdefault(section, [])
        paths = sorted((sources / section).rglob("*.rst.txt"))
        count = min(len(paths), _FILES_PER_SECTION)
        for path in [paths[index * len(paths) // count] for index in range(count)]:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            parts = _rst_sections(lines)
            headings = [_plain_rst(heading) for heading, _ in parts if heading]
            document = headings[0] if headings else path.name.removesuffix(".rst.txt")
            for heading, body in parts:
                source = "\n".join(body)[: 3 * MAX_TEXT_CHARS]  # enough for the text kept
                text = _shorten(_plain_rst(source), MAX_TEXT_CHARS)
                if len(words_of(text)) < MIN_RECORD_WORDS:
                    continue
                name = _plain_rst(heading) if heading else document
                title = document if name == document else f"{document}: {name}"
                found.append((_shorten(title, 120), text))
    return candidates


@functools.cache
def _german_candidates() -> dict[str, list[tuple[str, str]]]:
    """Return (title, text) of runs of messages sharing a key prefix, by prefix."""
    if not MEDIAWIKI_GERMAN.is_file():
        raise AppMissing(
            f"needs Debian's mediawiki ({MEDIAWIKI_GERMAN}; apt-get install mediawiki)"
        )
    messages = json.loads(MEDIAWIKI_GERMAN.read_text(encoding="utf-8"))
    groups: dict[str, list[tuple[str, str]]] = {}
    run: list[str] = []
    run_prefix = ""

    def close_run() -> None:
        text = " ".join(run)
        if run and len(words_of(text)) >= MIN_RECORD_WORDS:
            short = [message for message in run if len(message.split()) <= 10]
            title = short[0] if short else " ".join(run[0].split()[:8])
            groups.setdefault(run_prefix, []).append(
                (_shorten(title, 100), _shorten(text, MAX_TEXT_CHARS))
            )
        run.clear()

    for key, value in messages.items():
        prefix = re.match(r"[a-z]+", key)
        if prefix is None or not isinstance(value, str):
            continue
        message = _plain_wikitext(value)
        if not words_of(message):
            continue
        if prefix.group(0) != run_prefix:
            close_run()
            run_prefix = prefix.group(0)
        run.append(message)
        if len(words_of(" ".join(run))) >= MIN_RECORD_WORDS:
            close_run()
    close_run()
    return groups


@functools.cache
def database_records(language: str, size: int, seed: int) -> tuple[DatabaseRecord, ...]:
    """Return ``size`` records of ``language``, chosen by category shares, in a seeded order."""
    if language == "en":
        candidates, shares = _english_candidates(), _ENGLISH_SHARES
    else:
        groups = _german_candidates()
        largest, held = [], 0
        for prefix in sorted(groups, key=lambda prefix: -len(groups[prefix])):
            if held < size:
                largest.append(prefix)
                held += len(groups[prefix])
        candidates = {prefix: found for prefix, found in groups.items() if prefix in largest}
        shares = dict.fromkeys(candidates, 1.0)
    limits = {category: len(found) for category, found in candidates.items()}
    if size > sum(limits.values()):
        raise ValueError(f"{language} has {sum(limits.values())} records, fewer than {size}")
    taken = dict.fromkeys(candidates, 0)
    order = list(candidates)
    for _ in range(size):
        open_categories = [c for c in order if taken[c] < limits[c]]
        chosen = min(open_categories, key=lambda c: (taken[c] / shares[c], order.index(c)))
        taken[chosen] += 1
    chooser = random.Random(seed)
    chosen_texts = []
    for category in order:
        found, count = candidates[category], taken[category]
        picks = [found[index * len(found) // count] for index in range(count)] if count else []
        kinds = [KINDS[index % len(KINDS)] for index in range(count)]
        chooser.shuffle(kinds)
        chosen_texts += [
            (title, text, category, kind) for (title, text), kind in zip(picks, kinds, strict=True)
        ]
    chooser.shuffle(chosen_texts)
    records = []
    for number, (title, text, category, kind) in enumerate(chosen_texts, start=1):
        year = chooser.randint(2000, 2024)
        day = datetime.date(year, 1, 1) + datetime.timedelta(days=chooser.randrange(365))
        records.append(
            DatabaseRecord(
                str(number),
                title,
                text,
                category,
                year,
                kind,
                chooser.random() < 0.4,
                day.isoformat(),
            )
        )
    return tuple(records)


# The site -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Search:
    """A parsed search request: what it asks for, or why it is answered with an error."""

    query: str
    terms: tuple[str, ...]
    dropped: tuple[str, ...]  # stop words left out ("ignored")
    filters: dict[str, str]
    sort: str
    page_size: int
    page: int


class _SearchRefused(Exception):
    """A search answered with an error page: the status and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class HiddenDatabaseSite:
    """A running hidden-database site: ``with HiddenDatabaseSite(spec) as site: site.url``."""

    def __init__(self, spec: HiddenDatabase) -> None:
        self.spec = spec
        self.words = _WORDS[spec.language]
        self.records: list[DatabaseRecord] = list(
            database_records(spec.language, spec.size, spec.seed)
        )
        if spec.ids == "sparse":
            steps = random.Random(spec.seed).choices(range(1, 7), k=len(self.records))
            self.records = [
                dataclasses.replace(record, id=str(number))
                for record, number in zip(self.records, itertools.accumulate(steps), strict=True)
            ]
        self.by_id = {record.id: record for record in self.records}
        self.categories: list[str] = sorted({record.category for record in self.records})
        self.stops = stop_words_of(spec.language)
        self.term_counts: list[collections.Counter[str]] = []
        self.index: dict[str, list[int]] = collections.defaultdict(list)
        for position, record in enumerate(self.records):
            counts = collections.Counter(
                self._term(word) for word in words_of(f"{record.title} {record.text}")
            )
            self.term_counts.append(counts)
            for term in counts:
                self.index[term].append(position)
        self.requests: collections.Counter[str] = collections.Counter()
        self.queries_seen: list[str] = []
        self.lock = threading.Lock()
        self.url = ""

    # Ground truth ------------------------------------------------------------------------

    def record_id_of(self, url: str) -> str | None:
        """Return the id of the record at ``url`` (``/record/ID``), else None."""
        found = re.fullmatch(r"/record/(\d+)", urlsplit(url).path)
        return found.group(1) if found and found.group(1) in self.by_id else None

    def matches(self, query: str, **fields: str) -> list[str]:
        """Return the ids ``query`` (and the advanced form's ``fields``) matches, in the order
        the site lists them, before the cap; the failure modes are left out (they hide these).

        A query the site refuses (a stop word under ``"rejected"``) or asks again for (empty)
        matches nothing.
        """
        if self.spec.form == "simple" and fields:
            raise ValueError(f"a simple form has no fields: {sorted(fields)}")
        try:
            search = self._parse_search({"q": query, **fields}, query_name="q")
        except _SearchRefused:
            return []
        if search is None:
            return []
        return [self.records[position].id for position in self._ordered(search)]

    def fewest_result_pages(self, page_size: int | None = None) -> int:
        """Return the fewest result pages that reach every record through the form.

        Simple forms: ``ceil(size / page_size)``, a lower bound. Advanced forms: the sum over
        the finest partition the form needs (a category, or a category x kind where a category
        holds more than the cap) of ``ceil(cell / page_size)``; ``page_size`` defaults to the
        largest ``per_page`` the form offers (the spec's ``page_size`` for simple forms).
        """
        if self.spec.form == "simple":
            return math.ceil(len(self.records) / (page_size or self.spec.page_size))
        size = page_size or max(self._per_page_choices())
        cells: collections.Counter[tuple[str, str]] = collections.Counter()
        per_category = collections.Counter(record.category for record in self.records)
        for record in self.records:
            too_big = self.spec.cap is not None and per_category[record.category] > self.spec.cap
            cells[record.category, record.kind if too_big else ""] += 1
        return sum(math.ceil(count / size) for count in cells.values())

    # Serving -----------------------------------------------------------------------------

    def __enter__(self) -> HiddenDatabaseSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._send(*site.answer(self.path))

            def do_POST(self) -> None:  # the newsletter and log-in forms
                length = min(int(self.headers.get("Content-Length") or 0), MAX_QUERY_BYTES)
                self.rfile.read(length)
                site._count("other")
                self._send(200, "text/html", site._page(site.words["thanks"], ""))

            def _send(self, status: int, content_type: str, body: str) -> None:
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", f"{content_type}; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        serve = functools.partial(self.server.serve_forever, poll_interval=0.05)
        threading.Thread(target=serve, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _count(self, kind: str, query: str | None = None) -> None:
        with self.lock:
            self.requests[kind] += 1
            if query is not None:
                self.queries_seen.append(query)

    def answer(self, target: str) -> tuple[int, str, str]:
        """Return the status, content type and body for a request target; count it."""
        parts = urlsplit(target)
        if len(parts.query.encode()) > MAX_QUERY_BYTES:
            self._count("error")
            return 414, "text/html", self._page(self.words["too_long"], "")
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        opensearch = self.spec.entrance == "opensearch"
        query_name = "s" if opensearch else "q"
        search_path = "/" if opensearch else "/search"
        if parts.path == search_path and (
            query_name in params or (self.spec.form == "advanced" and params.keys() & _FORM_FIELDS)
        ):
            status, body = self._search_page(params, query_name, search_path)
            self._count("search" if status == 200 else "error", params.get(query_name, ""))
            return status, "text/html", body
        kind, status, content_type, body = self._other_page(parts.path)
        self._count(kind if status == 200 else "error")
        return status, content_type, body

    def _other_page(self, path: str) -> tuple[str, int, str, str]:
        """Return the kind, status, content type and body of a page other than a search."""
        words = self.words
        if path == "/":
            return "home", 200, "text/html", self._home_page()
        record_id = self.record_id_of(path)
        if record_id is not None:
            return "record", 200, "text/html", self._record_page(self.by_id[record_id])
        if path == "/opensearch.xml" and self.spec.entrance == "opensearch":
            return "opensearch", 200, "application/opensearchdescription+xml", self._opensearch()
        if path == "/search" and self.spec.entrance != "opensearch":
            return "other", 200, "text/html", self._page(words["search"], self._form())
        if path == "/about":
            about = f"<p>{html.escape(words['intro2'])}</p>"
            if self.spec.entrance != "form":
                about += self._distractions()
            return "other", 200, "text/html", self._page(words["about"], about)
        if path == "/help":
            return "other", 200, "text/html", self._page(words["help"], self._help())
        if path == "/robots.txt":
            return "other", 200, "text/plain", "User-agent: *\nAllow: /\n"
        return "error", 404, "text/html", self._page(words["not_found"], "")

    # Searching ---------------------------------------------------------------------------

    def _term(self, word: str) -> str:
        return crude_stem(word, self.spec.language) if self.spec.stemming else word

    def _per_page_choices(self) -> list[int]:
        return sorted({self.spec.page_size, *PER_PAGE_CHOICES})

    def _parse_search(self, params: dict[str, str], query_name: str) -> _Search | None:
        """Return the search ``params`` ask for, None when they ask for nothing (an empty
        search), or raise :class:`_SearchRefused`."""
        words = self.words
        query = params.get(query_name, "").strip()
        query_words = words_of(query)
        stops = [word for word in query_words if word in self.stops]
        if stops and self.spec.stopwords == "rejected":
            raise _SearchRefused(400, words["rejected"].format(words=", ".join(stops)))
        dropped = tuple(stops) if self.spec.stopwords == "ignored" else ()
        terms = tuple(dict.fromkeys(self._term(w) for w in query_words if w not in dropped))
        filters: dict[str, str] = {}
        sort, page_size = "relevance", self.spec.page_size
        if self.spec.form == "advanced":
            filters = {
                name: params[name].strip()
                for name in ("category", "kind", "has_image", "year", "since")
                if params.get(name, "").strip()
            }
            if "year" in filters and not filters["year"].isdigit():
                raise _SearchRefused(400, words["bad_input"].format(what=words["year"]))
            if "since" in filters:
                try:
                    datetime.date.fromisoformat(filters["since"])
                except ValueError as error:
                    message = words["bad_input"].format(what=words["since"])
                    raise _SearchRefused(400, message) from error
            sort = params.get("sort", "relevance")
            sort = sort if sort in SORTS else "relevance"
            per_page = params.get("per_page", "")
            if per_page.isdigit() and int(per_page) in self._per_page_choices():
                page_size = int(per_page)
        if not query_words and not filters:
            return None
        page_text = params.get("page", "1")
        if not page_text.isdigit() or int(page_text) < 1:
            raise _SearchRefused(400, words["bad_input"].format(what="page"))
        return _Search(query, terms, dropped, filters, sort, page_size, int(page_text))

    def _ordered(self, search: _Search) -> list[int]:
        """Return the positions of every record ``search`` matches, in listing order."""
        if search.dropped and not search.terms:  # only stop words, ignored
            return []
        if search.terms:
            postings = [set(self.index.get(term, ())) for term in search.terms]
            if self.spec.semantics == "and":
                found = set.intersection(*postings)
            else:
                found = set.union(*postings)
        else:
            found = set(range(len(self.records)))
        filters = search.filters
        newest_first = self.spec.listed == "newest"
        kept = [
            position
            for position in sorted(found, reverse=newest_first)
            if self._passes(self.records[position], filters)
        ]
        if search.sort == "title":
            kept.sort(key=lambda position: self.records[position].title.casefold())
        elif search.sort == "year":
            kept.sort(key=lambda position: -self.records[position].year)
        elif search.terms and self.spec.form == "advanced":
            counts = self.term_counts
            kept.sort(key=lambda position: -sum(counts[position][t] for t in search.terms))
        return kept

    @staticmethod
    def _passes(record: DatabaseRecord, filters: dict[str, str]) -> bool:
        return (
            filters.get("category", record.category) == record.category
            and filters.get("kind", record.kind) == record.kind
            and (not filters.get("has_image") or record.has_image)
            and filters.get("year", str(record.year)) == str(record.year)
            and filters.get("since", record.published) <= record.published
        )

    def _search_page(
        self, params: dict[str, str], query_name: str, search_path: str
    ) -> tuple[int, str]:
        """Return the status and body of a search request."""
        words = self.words
        form = self._form(params) if self.spec.entrance != "opensearch" else ""
        if self.spec.failure == "captcha" and params.get("captcha", "").strip() != CAPTCHA_ANSWER:
            return 403, self._page(words["search"], form + self._notice(words["captcha_wrong"]))
        if self.spec.failure == "errors_on_some" and any(
            int(hashlib.sha1(word.encode()).hexdigest(), 16) % 5 == 0
            for word in words_of(params.get(query_name, ""))
        ):
            return 500, self._page(words["search"], self._notice(words["failed"]))
        try:
            search = self._parse_search(params, query_name)
        except _SearchRefused as refusal:
            return refusal.status, self._page(words["search"], form + self._notice(refusal.message))
        if search is None:
            return 200, self._page(words["search"], form + self._notice(words["please"]))
        said = search.query or words["selection"]
        ordered = [] if self.spec.failure == "empty_always" else self._ordered(search)
        shown = ordered if self.spec.cap is None else ordered[: self.spec.cap]
        notes = ""
        if search.dropped:
            notes = self._notice(words["ignored"].format(words=", ".join(search.dropped)))
        if not shown:
            body = form + notes + self._notice(words["no_results"].format(q=said))
            return 200, self._page(words["search"], body)
        pages = math.ceil(len(shown) / search.page_size)
        if search.page > pages:
            body = form + self._notice(words["beyond"].format(page=search.page, q=said))
            return 200, self._page(words["search"], body)
        first = (search.page - 1) * search.page_size
        listed = shown[first : first + search.page_size]
        if not self.spec.shows_count:
            count = words["results_for"].format(q=said)
        elif len(shown) < len(ordered):
            count = words["showing_capped"].format(
                first=first + 1,
                last=first + len(listed),
                cap=len(shown),
                total=len(ordered),
                q=said,
            )
        else:
            count = words["showing"].format(
                first=first + 1, last=first + len(listed), total=len(ordered), q=said
            )
        items = "".join(self._result_item(self.records[position]) for position in listed)
        body = (
            f'{form}{notes}<p class="count">{html.escape(count)}</p>'
            f'<ol class="results" start="{first + 1}">{items}</ol>'
            f"{self._pager(params, search_path, search.page, pages)}"
        )
        return 200, self._page(words["search"], body)

    # Pages -------------------------------------------------------------------------------

    def _result_item(self, record: DatabaseRecord) -> str:
        snippet = _shorten(record.text, SNIPPET_CHARS)
        if snippet != record.text:
            snippet += " …"
        return (
            f'<li class="result"><a href="/record/{record.id}">{html.escape(record.title)}</a>'
            f"<p>{html.escape(snippet)}</p></li>"
        )

    def _pager(self, params: dict[str, str], path: str, page: int, pages: int) -> str:
        if pages <= 1:
            return ""
        kept = [(name, value) for name, value in params.items() if name != "page"]

        def link(number: int, label: str, rel: str = "") -> str:
            href = html.escape(f"{path}?{urlencode([*kept, ('page', str(number))])}")
            rel_attribute = f' rel="{rel}"' if rel else ""
            return f'<a href="{href}"{rel_attribute}>{html.escape(label)}</a>'

        parts = [link(page - 1, self.words["previous"], "prev")] if page > 1 else []
        for number in range(1, pages + 1):
            parts.append(
                f'<span class="current">{number}</span>'
                if number == page
                else link(number, str(number))
            )
        if page < pages:
            parts.append(link(page + 1, self.words["next"], "next"))
        return f'<nav class="pager">{" ".join(parts)}</nav>'

    def _notice(self, message: str) -> str:
        return f'<p class="notice">{html.escape(message)}</p>'

    def _form(self, params: dict[str, str] | None = None) -> str:
        """Return the search form (the advanced one with its selects, radios and inputs)."""
        words, values = self.words, params or {}
        query = html.escape(values.get("q", ""))
        fields = [
            f'<label for="q">{words["search"]}</label> <input type="text" id="q" name="q" '
            f'value="{query}" placeholder="{html.escape(words["placeholder"])}">'
        ]
        if self.spec.form == "advanced":

            def select(name: str, label: str, options: Iterable[tuple[str, str]]) -> str:
                chosen = values.get(name, "")
                rendered = "".join(
                    f'<option value="{html.escape(value)}"'
                    f"{' selected' if value == chosen else ''}>{html.escape(text)}</option>"
                    for value, text in options
                )
                return f'<label>{label} <select name="{name}">{rendered}</select></label>'

            kind_chosen = values.get("kind", "")
            radios = "".join(
                f'<label><input type="radio" name="kind" value="{value}"'
                f"{' checked' if value == kind_chosen else ''}> {html.escape(text)}</label> "
                for value, text in [("", words["any"]), *words["kinds"].items()]
            )
            checked = " checked" if values.get("has_image") else ""
            fields += [
                select(
                    "category",
                    words["category"],
                    [("", words["all"]), *((c, c) for c in self.categories)],
                ),
                f"<fieldset><legend>{words['kind']}</legend>{radios}</fieldset>",
                f'<label><input type="checkbox" name="has_image" value="1"{checked}> '
                f"{words['has_image']}</label>",
                f'<label>{words["year"]} <input type="number" name="year" min="2000" '
                f'max="2024" value="{html.escape(values.get("year", ""))}"></label>',
                f'<label>{words["since"]} <input type="date" name="since" '
                f'value="{html.escape(values.get("since", ""))}"></label>',
                select("sort", words["sort"], list(words["sorts"].items())),
                select(
                    "per_page",
                    words["per_page"],
                    [(str(n), str(n)) for n in self._per_page_choices()],
                ),
            ]
        if self.spec.failure == "captcha":
            fields.append(
                f'<label>{words["captcha"]} <input type="text" name="captcha" required '
                f'autocomplete="off"></label>'
            )
        fields.append(f'<button type="submit">{words["search"]}</button>')
        inner = "".join(f"<div>{field}</div>" for field in fields)
        return f'<form class="search" action="/search" method="get" role="search">{inner}</form>'

    def _distractions(self) -> str:
        words = self.words
        return (
            f'<aside class="newsletter"><h2>{words["newsletter"]}</h2>'
            '<form action="/newsletter" method="post">'
            f'<input type="email" name="email" placeholder="{words["email"]}" required> '
            f'<button type="submit">{words["subscribe"]}</button></form></aside>'
            f'<aside class="login"><h2>{words["login"]}</h2><form action="/login" method="post">'
            f'<label>{words["user"]} <input type="text" name="user"></label> '
            f'<label>{words["password"]} <input type="password" name="password"></label> '
            f'<button type="submit">{words["login"]}</button></form></aside>'
        )

    def _home_page(self) -> str:
        words = self.words
        frequent = collections.Counter(
            word
            for record in self.records[:60]
            for word in words_of(record.text)
            if word.isalpha() and len(word) > 4 and word not in self.stops
        )
        intro = words["intro"].format(
            size=len(self.records),
            count=len(self.categories),
            categories=", ".join(self.categories),
            words=", ".join(word for word, _ in frequent.most_common(5)),
        )
        content = f"<p>{html.escape(intro)}</p><p>{html.escape(words['intro2'])}</p>"
        if self.spec.entrance == "form":
            content = self._form() + content + self._distractions()
        elif self.spec.entrance == "linked":
            content += f'<p><a href="/search">{words["search"]}</a></p>'
        return self._page(words["home"], content)

    def _record_page(self, record: DatabaseRecord) -> str:
        words = self.words
        attributes = [
            (words["category"], record.category),
            (words["year"], str(record.year)),
            (words["kind"], words["kinds"][record.kind]),
            (words["has_image"], words["yes"] if record.has_image else words["no"]),
            (words["published"], record.published),
        ]
        listed = "".join(
            f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>"
            for name, value in attributes
        )
        image = '<figure><img src="/images/placeholder.png" alt=""></figure>' * record.has_image
        content = (
            f'<article>{image}<dl class="attributes">'
            f'{listed}</dl><div class="text"><p>{html.escape(record.text)}</p></div></article>'
        )
        return self._page(record.title, content)

    def _help(self) -> str:
        return f"<p>{html.escape(self.words['help_text'])}</p>"

    def _opensearch(self) -> str:
        site = html.escape(self._site_name())
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/">'
            f"<ShortName>{site}</ShortName><Description>{site}</Description>"
            f"<InputEncoding>UTF-8</InputEncoding>"
            f'<Url type="text/html" method="get" template="{self.url}?s={{searchTerms}}"/>'
            "</OpenSearchDescription>\n"
        )

    def _site_name(self) -> str:
        return self.words["site"]

    def _page(self, title: str, content: str) -> str:
        words, site = self.words, html.escape(self._site_name())
        head = ""
        if self.spec.entrance == "opensearch":
            head = (
                '<link rel="search" type="application/opensearchdescription+xml" '
                f'href="/opensearch.xml" title="{site}">'
            )
        search_link = f' <a href="/search">{words["search"]}</a>' * (self.spec.entrance == "linked")
        return (
            f'<!DOCTYPE html><html lang="{self.spec.language}"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)} – {site}</title>{head}</head><body>"
            f'<header class="site-header"><a class="logo" href="/">{site}</a>'
            f'<nav class="main-nav"><a href="/">{words["home"]}</a> '
            f'<a href="/about">{words["about"]}</a> <a href="/help">{words["help"]}</a>'
            f"{search_link}</nav></header><main><h1>{html.escape(title)}</h1>{content}</main>"
            f'<footer class="site-footer"><p>© 2024 {site} · <a href="/about">'
            f'{words["about"]}</a> · <a href="/help">{words["help"]}</a></p>'
            f"<p>{html.escape(words['footer'])}</p></footer></body></html>"
        )
