"""The bundled demo search site: a small "deep web" archive served on 127.0.0.1.

It has what real query-result sites have: a GET search form on the home page (next to a login
form and a newsletter form), a POST advanced-search form, paginated result pages, record pages
on five topics, and boilerplate around all of them (navigation, sidebars, ads, footer). Under
``/js/`` the same archive has a JavaScript search whose results scripts add late, one by one
(:mod:`websim_crawler.demo.scripted`), for rendered crawls.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from functools import cached_property
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit

from websim_crawler.demo import scripted

logger = logging.getLogger(__name__)

RESULTS_PER_PAGE = 5
SITE_NAME = "Field Notes Archive"
_WORD = re.compile(r"\w+")
_MAX_FORM_BYTES = 64 * 1024


@dataclass(frozen=True)
class Record:
    """One record of the demo archive."""

    number: int
    topic: str
    title: str
    paragraphs: tuple[str, ...]

    @cached_property
    def words(self) -> tuple[frozenset[str], dict[str, int]]:
        """Return the title's words and the counts of every word (title, body, topic)."""
        title_words = frozenset(_WORD.findall(self.title.lower()))
        counts: dict[str, int] = {}
        for word in _WORD.findall(" ".join((self.topic, self.title, *self.paragraphs)).lower()):
            counts[word] = counts.get(word, 0) + 1
        return title_words, counts

    def score(self, query_words: list[str]) -> int:
        """Return how well the record matches: occurrences, title words three times."""
        title_words, counts = self.words
        return sum(counts.get(word, 0) + 2 * (word in title_words) for word in query_words)


class Archive:
    """The demo records and the search over them."""

    def __init__(self, topics: dict[str, str], records: list[Record]) -> None:
        self.topics = topics
        self.records = records

    @classmethod
    def bundled(cls) -> Archive:
        """Load the records shipped with the package (``records.json``)."""
        data = json.loads(files("websim_crawler.demo").joinpath("records.json").read_text("utf-8"))
        records = [
            Record(number, entry["topic"], entry["title"], tuple(entry["paragraphs"]))
            for number, entry in enumerate(data["records"], start=1)
        ]
        return cls(dict(data["topics"]), records)

    def search(self, query: str, topic: str = "") -> list[Record]:
        """Return the records matching any query word, best first (ties: archive order)."""
        query_words = _WORD.findall(query.lower())
        scored = [
            (record.score(query_words), record)
            for record in self.records
            if not topic or record.topic == topic
        ]
        return [record for score, record in sorted(scored, key=lambda pair: -pair[0]) if score > 0]

    def record(self, number: int) -> Record | None:
        """Return record ``number`` (1-based) or ``None``."""
        return self.records[number - 1] if 1 <= number <= len(self.records) else None


def _page(
    title: str, main: str, *, sidebar: str = "", query: str = "", search: str = "/search"
) -> str:
    """Wrap a page's main content in the site template (header, navigation, ads, footer)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{escape(title)} - {SITE_NAME}</title>
<style>
body {{ font-family: sans-serif; margin: 0; }}
header, footer {{ background: #234; color: #fff; padding: 1em; }}
header a, footer a {{ color: #cde; }}
.layout {{ display: flex; gap: 2em; padding: 1em; }}
main {{ flex: 3; }} aside {{ flex: 1; font-size: 90%; }}
.ad {{ border: 1px dashed #999; padding: .5em; margin-bottom: 1em; }}
</style></head>
<body>
<header>
  <div class="logo"><a href="/">{SITE_NAME}</a> &mdash; notes from the field since 1998</div>
  <form class="login" action="/login" method="post">
    <input type="text" name="username" placeholder="User name">
    <input type="password" name="password" placeholder="Password">
    <button type="submit">Log in</button>
  </form>
  <nav><a href="/">Home</a> | <a href="/topics">Topics</a> |
    <a href="/advanced">Advanced search</a> | <a href="/about">About</a> |
    <a href="/contact">Contact</a></nav>
  <form class="quick-search" action="{search}" method="get" role="search">
    <input type="search" name="q" value="{escape(query)}" placeholder="Search the archive">
    <button type="submit">Search</button>
  </form>
</header>
<div class="layout">
<main>
{main}
</main>
<aside class="sidebar">
{sidebar}
<div class="ad">Sponsored: <a href="http://ads.example.net/click?id=31">Cheap flights to
anywhere, book today and save big on your next holiday</a></div>
<div class="ad">Advertisement: <a href="http://ads.example.net/click?id=7">Top rated
insurance deals, compare quotes in two minutes</a></div>
</aside>
</div>
<footer>
  <form class="newsletter" action="/newsletter" method="post">
    Newsletter: <input type="email" name="email" placeholder="you@example.org">
    <button type="submit">Subscribe</button>
  </form>
  <p>&copy; 1998-2025 {SITE_NAME}. <a href="/about">About us</a> | <a href="/privacy">Privacy
  policy</a> | <a href="/terms">Terms of use</a> |
  <a href="mailto:editors@example.org">Contact</a></p>
  <p>All notes are written by volunteers. Follow us on
  <a href="http://social.example.com/fieldnotes">social media</a>.</p>
</footer>
</body>
</html>
"""


def _popular_searches(archive: Archive) -> str:
    links = " ".join(
        f'<li><a href="/search?q={quote_plus(slug)}">{escape(name)}</a></li>'
        for slug, name in archive.topics.items()
    )
    return f"<h3>Popular searches</h3><ul>{links}</ul>"


def home_page(archive: Archive) -> str:
    """Render the home page: welcome text and the list of topics."""
    topics = "".join(
        f'<li><a href="/topic/{slug}">{escape(name)}</a></li>'
        for slug, name in archive.topics.items()
    )
    main = f"""<h1>Welcome to the {SITE_NAME}</h1>
<p>The archive collects {len(archive.records)} practical notes written by hobbyists. Type a
word in the search box above, or use the <a href="/advanced">advanced search</a>.</p>
<h2>Browse by topic</h2><ul>{topics}</ul>"""
    return _page("Home", main, sidebar=_popular_searches(archive))


def results_page(
    archive: Archive, query: str, topic: str, page_number: int, results: list[Record]
) -> str:
    """Render one page of search results with numbered pagination and a "Next" link."""
    page_count = max(1, math.ceil(len(results) / RESULTS_PER_PAGE))
    first = (page_number - 1) * RESULTS_PER_PAGE
    shown = results[first : first + RESULTS_PER_PAGE]
    items = "".join(
        f"""<li class="result"><h3><a href="/record/{record.number}">{escape(record.title)}</a>
</h3><p>{escape(" ".join(record.paragraphs[0].split()[:24]))} ...</p>
<p class="result-meta">Filed under <a href="/topic/{record.topic}">
{escape(archive.topics[record.topic])}</a></p></li>"""
        for record in shown
    )

    def page_link(number: int, label: str) -> str:
        parameters = {"q": query, "page": str(number)} | ({"topic": topic} if topic else {})
        return f'<a href="/search?{urlencode(parameters)}">{label}</a>'

    pager = [page_link(page_number - 1, "&lsaquo; Previous")] if page_number > 1 else []
    pager += [
        f"<strong>{number}</strong>" if number == page_number else page_link(number, str(number))
        for number in range(1, page_count + 1)
    ]
    if page_number < page_count:
        pager.append(page_link(page_number + 1, "Next &rsaquo;"))
    if shown:
        summary = (
            f"Results {first + 1}-{first + len(shown)} of {len(results)} for "
            f"<em>{escape(query)}</em>"
        )
    else:
        summary = f"No records match <em>{escape(query)}</em>."
    refine = "".join(
        f'<li><a href="/search?{urlencode({"q": query, "topic": slug})}">{escape(name)}</a></li>'
        for slug, name in archive.topics.items()
    )
    main = f"""<h1>Search results</h1><p class="summary">{summary}</p>
<ol class="results">{items}</ol>
<nav class="pagination" aria-label="Result pages">{" ".join(pager)}</nav>"""
    sidebar = f"<h3>Refine by topic</h3><ul>{refine}</ul>{_popular_searches(archive)}"
    return _page(f"Search: {query}", main, sidebar=sidebar, query=query)


def record_page(archive: Archive, record: Record) -> str:
    """Render a record with its topic, a breadcrumb and links to related records."""
    body = "".join(f"<p>{escape(paragraph)}</p>" for paragraph in record.paragraphs)
    related = [
        other for other in archive.records if other.topic == record.topic and other is not record
    ][:3]
    related_links = "".join(
        f'<li><a href="/record/{other.number}">{escape(other.title)}</a></li>' for other in related
    )
    topic_name = escape(archive.topics[record.topic])
    main = f"""<div class="breadcrumb"><a href="/">Home</a> &rsaquo;
<a href="/topic/{record.topic}">{topic_name}</a></div>
<article><h1>{escape(record.title)}</h1>
<p class="byline">Note {record.number} &middot; filed under {topic_name}</p>
{body}</article>"""
    sidebar = f"<h3>More on this topic</h3><ul>{related_links}</ul>"
    return _page(record.title, main, sidebar=sidebar)


def topic_page(archive: Archive, slug: str) -> str:
    """Render the list of every record of one topic."""
    items = "".join(
        f'<li><a href="/record/{record.number}">{escape(record.title)}</a></li>'
        for record in archive.records
        if record.topic == slug
    )
    main = f"<h1>{escape(archive.topics[slug])}</h1><ul>{items}</ul>"
    return _page(archive.topics[slug], main, sidebar=_popular_searches(archive))


def topics_page(archive: Archive) -> str:
    """Render the list of topics."""
    items = "".join(
        f'<li><a href="/topic/{slug}">{escape(name)}</a></li>'
        for slug, name in archive.topics.items()
    )
    return _page("Topics", f"<h1>Topics</h1><ul>{items}</ul>")


def advanced_page(archive: Archive) -> str:
    """Render the advanced search form (POST, with a topic filter)."""
    options = "".join(
        f'<option value="{slug}">{escape(name)}</option>' for slug, name in archive.topics.items()
    )
    main = f"""<h1>Advanced search</h1>
<form id="advanced-search" action="/advanced" method="post">
<label>Words <input type="text" name="terms"></label>
<label>Topic <select name="topic"><option value="">Any topic</option>{options}</select></label>
<button type="submit">Search</button>
</form>"""
    return _page("Advanced search", main)


def text_page(title: str, text: str) -> str:
    """Render a plain information page (about, privacy, terms)."""
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(text)}</p>")


CONTACT_FORM = """<h1>Contact</h1><form action="/contact" method="post">
<input type="text" name="name" placeholder="Your name">
<input type="email" name="email" placeholder="Your e-mail">
<textarea name="message"></textarea><button type="submit">Send</button></form>"""
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"
_TEXT_PAGES = {
    "/about": ("About", "The archive is a volunteer project that keeps practical notes."),
    "/privacy": ("Privacy policy", "We store no personal data beyond newsletter addresses."),
    "/terms": ("Terms of use", "Notes may be quoted with a link back to the archive."),
}


def make_handler(archive: Archive) -> type[BaseHTTPRequestHandler]:
    """Build the request handler class serving ``archive``."""

    class DemoHandler(BaseHTTPRequestHandler):
        server_version = "FieldNotes/1.0"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            self.answer(parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()})

        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), _MAX_FORM_BYTES)
            body = self.rfile.read(length).decode("utf-8", "replace")
            fields = {key: values[-1] for key, values in parse_qs(body).items()}
            path = urlsplit(self.path).path
            if path == "/js/patterns/postback":
                self.send_page(
                    200, _page("Postback results", scripted.postback_results(archive, fields))
                )
            elif path == "/advanced":
                self.answer("/search", {"q": fields.get("terms", ""), **fields})
            else:
                self.send_page(200, text_page("Thank you", "Your message was received."))

        def answer(self, path: str, parameters: dict[str, str]) -> None:
            scripted_answer = scripted.answer(archive, _page, path, parameters)
            if scripted_answer is not None:
                time.sleep(scripted_answer.delay)
                self.send_page(
                    scripted_answer.status, scripted_answer.body, scripted_answer.content_type
                )
            elif path == "/robots.txt":
                self.send_page(200, ROBOTS_TXT, "text/plain")
            elif path == "/":
                self.send_page(200, home_page(archive))
            elif path == "/search":
                self.send_results(parameters)
            elif path.startswith("/record/") and path[8:].isdigit():
                record = archive.record(int(path[8:]))
                if record is None:
                    self.send_page(404, text_page("Not found", "No such record."))
                else:
                    self.send_page(200, record_page(archive, record))
            elif path.startswith("/topic/") and path[7:] in archive.topics:
                self.send_page(200, topic_page(archive, path[7:]))
            elif path == "/topics":
                self.send_page(200, topics_page(archive))
            elif path == "/advanced":
                self.send_page(200, advanced_page(archive))
            elif path == "/contact":
                self.send_page(200, _page("Contact", CONTACT_FORM))
            elif path in _TEXT_PAGES:
                self.send_page(200, text_page(*_TEXT_PAGES[path]))
            else:
                self.send_page(404, text_page("Not found", "There is no page at this address."))

        def send_results(self, parameters: dict[str, str]) -> None:
            query = parameters.get("q", "").strip()
            topic = parameters.get("topic", "")
            topic = topic if topic in archive.topics else ""
            page_text = parameters.get("page", "1")
            page_number = int(page_text) if page_text.isdigit() and int(page_text) > 0 else 1
            results = archive.search(query, topic)
            self.send_page(200, results_page(archive, query, topic, page_number, results))

        def send_page(self, status: int, text: str, content_type: str = "text/html") -> None:
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("demo site: " + format, *args)

    return DemoHandler


class DemoSite:
    """Serve the demo archive on ``host:port`` (port 0: a free one) in a background thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = ThreadingHTTPServer((host, port), make_handler(Archive.bundled()))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Return the home page URL."""
        host, port = self.server.server_address[:2]
        host_text = host.decode("ascii") if isinstance(host, bytes) else host
        return f"http://{host_text}:{port}/"

    def start(self) -> DemoSite:
        """Start serving and return ``self``."""
        self.thread.start()
        logger.info("demo site serving at %s", self.url)
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> DemoSite:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
