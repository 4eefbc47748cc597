"""Search applications written by others, started on 127.0.0.1 with data the caller knows.

Each launcher is a context manager that starts one application on a free loopback port with a
corpus it loads itself (:func:`corpus`: documents of the Python documentation, Debian's
``python3.11-doc``, labelled by their section), and knows which records the application lists
for a query (:meth:`listed`, read from the application's own result pages, or from its own
rendered search for the JavaScript ones). ``tests/test_real_apps.py`` and
``benchmarks/real_sites.py`` share them. A launcher whose application is not installed raises
:class:`AppMissing` with the reason (the tests skip on it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import html
import importlib.util
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")  # Debian: apt-get install python3.11-doc
CHROMIUM = os.environ.get("WEBSIM_CHROMIUM_PATH", "/usr/bin/chromium")
_SECTIONS = ("c-api", "library", "reference", "tutorial", "howto", "using", "faq", "whatsnew")
QUERIES = ("thread", "unicode", "exception")  # each lists 10 to 40 records of the corpus


class AppMissing(Exception):
    """The application (or what it needs) is not installed; the message says what to install."""


@dataclass(frozen=True)
class Record:
    """One document of the corpus: its number (1-based), title, text and label (doc section)."""

    number: int
    title: str
    text: str
    label: str


def corpus(per_section: int = 40, max_chars: int = 1500) -> list[Record]:
    """Return documents of Debian's Python documentation, ``per_section`` from each section.

    Sources are read in sorted order, so the corpus is the same on every machine with the
    package; its text is the reStructuredText source, tags and markup left as they are.
    """
    sources = PYTHON_DOCS / "_sources"
    if not sources.is_dir():
        raise AppMissing("needs Debian's python3.11-doc (apt-get install python3.11-doc)")
    records: list[Record] = []
    for section in _SECTIONS:
        files = sorted((sources / section).rglob("*.rst.txt"))[:per_section]
        for path in files:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            title = _rst_title(lines) or path.name
            body = " ".join(" ".join(lines).split())[:max_chars]
            records.append(Record(len(records) + 1, title, body, section))
    return records


def _rst_title(lines: list[str]) -> str | None:
    """Return the first reStructuredText section title (a line over an underline)."""
    for line, under in itertools.pairwise(lines):
        if re.fullmatch(r"([=*#~^-])\1{2,}", under.strip()) and re.search(r"\w", line):
            return re.sub(r":\w+:`([^`]*)`", r"\1", line.strip())[:120]
    return None


def free_port() -> int:
    """Return a free TCP port on 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def fetch_text(url: str, timeout: float = 30.0) -> str:
    """GET ``url`` (loopback only) and return its text."""
    assert urlsplit(url).hostname == "127.0.0.1", url
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode("utf-8", errors="replace"))


def wait_until_up(url: str, process: subprocess.Popen[bytes] | None, seconds: float = 60) -> None:
    """Wait until ``url`` answers; raise ``AppMissing`` when the server process died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            error = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
            raise AppMissing(f"the server exited ({process.returncode}): {error}")
        try:
            fetch_text(url, timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise AppMissing(f"{url} did not answer in {seconds:g} s")


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serve files; a script's ``fetch`` (``Sec-Fetch-Dest: empty``) waits ``fetch_delay``."""

    fetch_delay = 0.0
    fetches = 0
    bytes_served = 0
    fetch_times: list[float] = []  # noqa: RUF012 (each site's handler type gets its own)
    lock = threading.Lock()

    def do_GET(self) -> None:
        fetched = self.headers.get("Sec-Fetch-Dest") == "empty"
        if fetched and self.fetch_delay:
            time.sleep(self.fetch_delay)
        path = Path(self.translate_path(self.path))
        with self.lock:
            if fetched:
                type(self).fetch_times.append(time.monotonic())
            type(self).fetches += fetched
            type(self).bytes_served += path.stat().st_size if path.is_file() else 0
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        return


class _QuietServer(ThreadingHTTPServer):
    """A threaded server that lets a browser close a connection mid-file without a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipe, ConnectionReset
            super().handle_error(request, client_address)


class StaticSite:
    """A static site served by a threaded ``http.server``; scripts' fetches may be delayed."""

    def __init__(self, root: Path, fetch_delay: float = 0.0) -> None:
        handler_type = type(
            "Handler",
            (_QuietHandler,),
            {"fetch_delay": fetch_delay, "lock": threading.Lock(), "fetch_times": []},
        )
        self.handler_type = handler_type
        handler = functools.partial(handler_type, directory=str(root))
        self.server = _QuietServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def fetches(self) -> int:
        """Requests made by the pages' scripts (``fetch``) so far."""
        return int(self.handler_type.fetches)

    @property
    def fetch_seconds(self) -> float:
        """Seconds from the pages' first script fetch to their last."""
        times = self.handler_type.fetch_times
        return float(times[-1] - times[0]) if times else 0.0

    @property
    def bytes_served(self) -> int:
        """Bytes of the files served so far."""
        return int(self.handler_type.bytes_served)

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def rendered_search(url: str, ready_script: str, links_script: str, seconds: float) -> list[str]:
    """Render ``url`` in Chromium until ``ready_script`` is true; return ``links_script``'s URLs.

    The oracle of the JavaScript searches: what the application lists once it has finished.
    """
    if not os.access(CHROMIUM, os.X_OK):
        raise AppMissing("needs Chromium (apt-get install chromium)")
    # In a thread of its own: Playwright's sync API refuses a thread running an asyncio loop
    # (pytest's reactor runs one).
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(_rendered_links, url, ready_script, links_script, seconds).result()


def _rendered_links(url: str, ready_script: str, links_script: str, seconds: float) -> list[str]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_function(ready_script, timeout=seconds * 1000)
            return [urljoin(page.url, href) for href in page.evaluate(links_script)]
        finally:
            browser.close()


class SphinxDocs:
    """Debian's Python 3.11 documentation (Sphinx): its JavaScript search page.

    ``search.html?q=...`` loads the 3.6 MB ``searchindex.js``, lists the matching pages, then
    fetches each listed page to show its summary (the fetches wait ``fetch_delay`` seconds).
    Records are the documentation pages, labelled by their section.
    """

    name = "sphinx-search"
    rendered = True
    queries = ("zoneinfo",)  # records are rendered too: a query that lists few pages
    start_path = "index.html"

    def __init__(self, fetch_delay: float = 0.0) -> None:
        if not (PYTHON_DOCS / "searchindex.js").is_file():
            raise AppMissing("needs Debian's python3.11-doc (apt-get install python3.11-doc)")
        self.fetch_delay = fetch_delay

    def __enter__(self) -> SphinxDocs:
        self.site = StaticSite(PYTHON_DOCS, self.fetch_delay)
        self.url = self.site.url
        return self

    def __exit__(self, *exc: object) -> None:
        self.site.close()

    def listed(self, query: str) -> set[str]:
        """Return the pages the search lists for ``query`` once it has finished."""
        ready = "() => /Search finished|did not match/.test(document.body.innerText)"
        links = "() => [...document.querySelectorAll('ul.search li > a')].map(a => a.href)"
        url = f"{self.url}search.html?q={urllib.parse.quote_plus(query)}"
        return {_page_of(link) for link in rendered_search(url, ready, links, 120)}

    def result_lists(self, page_html: str, url: str) -> list[set[str]]:
        """Return the pages a rendered result page lists (not the page's navigation)."""
        return _rendered_list(page_html, url, "//ul[@class='search']/li/a/@href")

    def is_empty(self, page_html: str) -> bool:
        """Return whether a rendered result page says the search found nothing."""
        return "did not match any documents" in page_html

    def records_loaded(self) -> int:
        """Return how many records the search can list: the indexed pages in a section."""
        index = (PYTHON_DOCS / "searchindex.js").read_text(encoding="utf-8")
        found = re.search(r'"docnames":\s*(\[[^\]]*\])', index)
        assert found is not None, "searchindex.js lists no docnames"
        return sum("/" in name for name in json.loads(found.group(1)))

    def label_of(self, url: str) -> str | None:
        """Return the section of a documentation page (its first folder)."""
        path = urlsplit(url).path.lstrip("/")
        return path.split("/", 1)[0] if "/" in path and path.endswith(".html") else None

    def record_number(self, url: str) -> str | None:
        """Return the page's path: the documentation's records have no numbers."""
        return urlsplit(url).path if self.label_of(url) else None


def _page_of(url: str) -> str:
    """Return ``url`` without its fragment and query."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _rendered_list(page_html: str, url: str, links_xpath: str) -> list[set[str]]:
    """Return the pages a rendered result page lists (``links_xpath``: its result links'
    ``href``s), as the one result list of the page (none when it lists nothing)."""
    hrefs = lxml.html.document_fromstring(page_html).xpath(links_xpath)
    return [{_page_of(urljoin(url, href)) for href in hrefs}] if hrefs else []


class ServerApp:
    """An application run as a server process on a free port, with the corpus loaded.

    Subclasses write their project into ``workdir`` (:meth:`prepare`), name the command that
    serves it (:meth:`command`), and read what it lists for a query (:meth:`listed`).
    """

    name = ""
    module = ""  # the Python package the application is installed as
    queries = QUERIES
    rendered = False
    start_path = ""
    ready_path = ""
    quiet_stderr = False  # a server that logs every request must not fill an unread pipe

    def __init__(self, records: list[Record], workdir: Path) -> None:
        reason = self.missing()
        if reason is not None:
            raise AppMissing(reason)
        self.records = records
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ServerApp:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        self.process = subprocess.Popen(
            self.command(),
            cwd=self.workdir,
            env=self.environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL if self.quiet_stderr else subprocess.PIPE,
            start_new_session=True,  # its own process group: the server's workers end with it
        )
        try:
            wait_until_up(self.url + self.ready_path, self.process)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        # The whole group: PHP's built-in server leaves its PHP_CLI_SERVER_WORKERS running
        # when only the process that forked them is stopped.
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever of the group is left
        self.process.wait()

    def missing(self) -> str | None:
        """Return why the application cannot run here (``None``: it can)."""
        if importlib.util.find_spec(self.module) is None:
            return f"{self.name} is not installed (pip install websim-crawler[gallery])"
        return None

    def environment(self) -> dict[str, str] | None:
        """Return the server's environment (``None``: this process's)."""
        return None

    def prepare(self) -> None:
        """Write the project and load the corpus."""
        raise NotImplementedError

    def command(self) -> list[str]:
        """Return the command that serves the project on ``self.port``."""
        raise NotImplementedError

    def listed(self, query: str) -> set[str]:
        """Return the record URLs the application lists for ``query``."""
        raise NotImplementedError

    def records_loaded(self) -> int:
        """Return how many records the application holds: the corpus it loaded."""
        return len(self.records)

    def label_of(self, url: str) -> str | None:
        """Return the corpus label of the record at ``url`` (``None``: not a record)."""
        number = self.record_number(url)
        if number is None or not 1 <= number <= len(self.records):
            return None
        return self.records[number - 1].label

    def record_number(self, url: str) -> int | None:
        """Return the number of the record at ``url``, or ``None``."""
        raise NotImplementedError

    def collect(self, first_url: str, record_href: str, next_href: str) -> set[str]:
        """Walk result pages from ``first_url`` by the ``next_href`` pattern (regex, group 1 is
        the URL); return the URLs matching ``record_href`` (regex, group 1) on them."""
        found: set[str] = set()
        url: str | None = first_url
        seen: set[str] = set()
        while url is not None and url not in seen:
            seen.add(url)
            text = fetch_text(url)
            found.update(urljoin(url, html.unescape(m)) for m in re.findall(record_href, text))
            following = re.search(next_href, text)
            url = urljoin(url, html.unescape(following.group(1))) if following else None
        return found


_DJANGO_SETTINGS = """
SECRET_KEY = "gallery-test-only"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "gallery.urls"
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles", "docs",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "gallery.urls.LogInTheReader",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "gallery.sqlite3"}}
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
"""
_DJANGO_URLS = """
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import path


class LogInTheReader:
    \"\"\"Test project only: every request is the reader's (a staff user who may view).\"\"\"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.user = User.objects.get(username="reader")
        return self.get_response(request)


urlpatterns = [path("admin/", admin.site.urls)]
"""
_DJANGO_MODELS = """
from django.db import models


class Document(models.Model):
    title = models.CharField(max_length=200)
    text = models.TextField()
    section = models.CharField(max_length=40)

    def __str__(self):
        return self.title
"""
_DJANGO_ADMIN = """
from django.contrib import admin

from docs.models import Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "section")
    list_display_links = ("id",)
    search_fields = ("title", "text")
    list_per_page = 10
    list_max_show_all = 1000

    def has_view_permission(self, request, obj=None):
        return True

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
"""
_DJANGO_LOAD = """
import json, sys
import django
django.setup()
from django.contrib.auth.models import User
from docs.models import Document
User.objects.create_user("reader", is_staff=True)
records = json.load(open(sys.argv[1]))
Document.objects.bulk_create([
    Document(id=r["number"], title=r["title"], text=r["text"], section=r["label"])
    for r in records
])
"""


def _write_records(records: list[Record], path: Path) -> None:
    path.write_text(
        json.dumps([dataclasses.asdict(record) for record in records]), encoding="utf-8"
    )


class DjangoAdmin(ServerApp):
    """Django's admin change list with ``search_fields``; rows linked by their numbers.

    The test project logs every request in as a staff user who may view the documents; records
    are the view pages ``/admin/docs/document/17/change/``, linked from the change list by the
    number in the table's first column, 10 rows a page.
    """

    name = "django-admin"
    module = "django"
    start_path = "admin/docs/document/"
    ready_path = "admin/docs/document/"

    def prepare(self) -> None:
        files = {
            "gallery/__init__.py": "",
            "gallery/settings.py": _DJANGO_SETTINGS,
            "gallery/urls.py": _DJANGO_URLS,
            "docs/__init__.py": "",
            "docs/models.py": _DJANGO_MODELS,
            "docs/admin.py": _DJANGO_ADMIN,
            "docs/migrations/__init__.py": "",
            "load.py": _DJANGO_LOAD,
        }
        for name, text in files.items():
            (self.workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (self.workdir / name).write_text(textwrap.dedent(text), encoding="utf-8")
        _write_records(self.records, self.workdir / "records.json")
        environment = dict(os.environ, DJANGO_SETTINGS_MODULE="gallery.settings", PYTHONPATH=".")
        for step in (
            ["-m", "django", "makemigrations", "docs", "-v", "0"],
            ["-m", "django", "migrate", "-v", "0"],
            ["load.py", "records.json"],
        ):
            subprocess.run(
                [sys.executable, *step], cwd=self.workdir, env=environment, check=True,
                capture_output=True,
            )  # fmt: skip

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "django", "runserver", f"127.0.0.1:{self.port}", "--noreload",
            "--settings=gallery.settings", "--pythonpath=.",
        ]  # fmt: skip

    def listed(self, query: str) -> set[str]:
        every = f"{self.url}admin/docs/document/?q={urllib.parse.quote_plus(query)}&all="
        return self.collect(every, r'<th class="field-id"><a href="([^"]+)"', r"(?!)")

    def record_number(self, url: str) -> int | None:
        match = re.search(r"/admin/docs/document/(\d+)/change/", url)
        return int(match.group(1)) if match else None


_FLASK_ADMIN_APP = """
import json, sys
from flask import Flask
from flask_admin import Admin
from flask_admin.contrib.sqla import ModelView
from flask_sqlalchemy import SQLAlchemy

app = Flask(__name__)
app.config["SQLALCHEMY_DATABASE_URI"] = "sqlite:///gallery.sqlite3"
app.config["SECRET_KEY"] = "gallery-test-only"
db = SQLAlchemy(app)


class Document(db.Model):
    id = db.Column(db.Integer, primary_key=True)
    title = db.Column(db.String(200))
    text = db.Column(db.Text)
    section = db.Column(db.String(40))


class DocumentView(ModelView):
    can_create = can_edit = can_delete = False
    can_view_details = True
    column_list = ("id", "title", "section")
    column_searchable_list = ("title", "text")
    page_size = 10


Admin(app, name="gallery").add_view(DocumentView(Document, db.session))
with app.app_context():
    db.create_all()
    for record in json.load(open("records.json")):
        db.session.add(Document(
            id=record["number"], title=record["title"], text=record["text"],
            section=record["label"],
        ))
    db.session.commit()
app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True)
"""


class FlaskAdmin(ServerApp):
    """flask-admin's list view (a table) with ``column_searchable_list``; records are the
    details pages ``/admin/document/details/?id=17``, linked by an eye icon (no label)."""

    name = "flask-admin"
    module = "flask_admin"
    start_path = "admin/document/"
    ready_path = "admin/document/"

    def prepare(self) -> None:
        _write_records(self.records, self.workdir / "records.json")
        (self.workdir / "app.py").write_text(_FLASK_ADMIN_APP, encoding="utf-8")

    def command(self) -> list[str]:
        return [sys.executable, "app.py", str(self.port)]

    def listed(self, query: str) -> set[str]:
        first = f"{self.url}admin/document/?search={urllib.parse.quote_plus(query)}"
        return self.collect(
            first,
            r'href="(/admin/document/details/\?id=\d+[^"]*)"',
            r'<a class="page-link" href="(/[^"]+)">&gt;</a>',
        )

    def record_number(self, url: str) -> int | None:
        match = re.search(r"/admin/document/details/\?id=(\d+)", url)
        return int(match.group(1)) if match else None


_SQLADMIN_APP = """
import json, sys
import uvicorn
from sqladmin import Admin, ModelView
from sqlalchemy import Column, Integer, String, Text, create_engine
from sqlalchemy.orm import Session, declarative_base
from starlette.applications import Starlette

Base = declarative_base()


class Document(Base):
    __tablename__ = "documents"
    id = Column(Integer, primary_key=True)
    title = Column(String(200))
    text = Column(Text)
    section = Column(String(40))


class DocumentAdmin(ModelView, model=Document):
    can_create = can_edit = can_delete = can_export = False
    column_list = [Document.id, Document.title, Document.section]
    column_searchable_list = [Document.title, Document.text]
    page_size = 10


engine = create_engine("sqlite:///gallery.sqlite3")
Base.metadata.create_all(engine)
with Session(engine) as session:
    for record in json.load(open("records.json")):
        session.add(Document(
            id=record["number"], title=record["title"], text=record["text"],
            section=record["label"],
        ))
    session.commit()
app = Starlette()
Admin(app, engine).add_view(DocumentAdmin)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


class SqlAdmin(ServerApp):
    """sqladmin's list view (a table) for Starlette; its search box is a script, not a form, so
    the crawl is given the query template; records are ``/admin/document/details/17``."""

    name = "sqladmin"
    module = "sqladmin"
    start_path = "admin/document/list"
    ready_path = "admin/document/list"
    query_template = "admin/document/list?search={query}"

    def prepare(self) -> None:
        _write_records(self.records, self.workdir / "records.json")
        (self.workdir / "app.py").write_text(_SQLADMIN_APP, encoding="utf-8")

    def command(self) -> list[str]:
        return [sys.executable, "app.py", str(self.port)]

    def listed(self, query: str) -> set[str]:
        first = f"{self.url}admin/document/list?search={urllib.parse.quote_plus(query)}"
        return self.collect(
            first,
            r'href="(http://[^"]*/admin/document/details/\d+)"',
            r'<a class="page-link" href="(http[^"]+)">\s*next',
        )

    def record_number(self, url: str) -> int | None:
        match = re.search(r"/admin/document/details/(\d+)", url)
        return int(match.group(1)) if match else None


class MkDocsSearch:
    """A site built by MkDocs (readthedocs theme) with its search plugin: ``search.html?q=``
    runs lunr in a web worker over ``search/search_index.json``; records are the corpus pages,
    ``/<section>/<number>/``."""

    name = "mkdocs-search"
    module = "mkdocs"
    rendered = True
    queries = QUERIES
    start_path = ""

    def __init__(self, records: list[Record], workdir: Path) -> None:
        if importlib.util.find_spec(self.module) is None:
            raise AppMissing("mkdocs is not installed (pip install websim-crawler[gallery])")
        self.records = records
        self.workdir = workdir

    def __enter__(self) -> MkDocsSearch:
        docs = self.workdir / "docs"
        for record in self.records:
            page = docs / record.label / f"{record.number}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(f"# {record.title}\n\n{record.text}\n", encoding="utf-8")
        (docs / "index.md").write_text("# Gallery\n\nThe corpus.\n", encoding="utf-8")
        (self.workdir / "mkdocs.yml").write_text(
            "site_name: Gallery\ntheme: readthedocs\nplugins: [search]\n", encoding="utf-8"
        )
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-q", "-d", "site"],
            cwd=self.workdir, check=True, capture_output=True,
        )  # fmt: skip
        self.site = StaticSite(self.workdir / "site")
        self.url = self.site.url
        return self

    def __exit__(self, *exc: object) -> None:
        self.site.close()

    def listed(self, query: str) -> set[str]:
        """Return the pages the search lists for ``query`` once it has run."""
        ready = (
            "() => { const r = document.querySelector('#mkdocs-search-results');"
            " return !!r && (!!r.querySelector('article') || /No results/.test(r.innerText)); }"
        )
        links = (
            "() => [...document.querySelectorAll('#mkdocs-search-results article h3 a')]"
            ".map(a => a.href)"
        )
        url = f"{self.url}search.html?q={urllib.parse.quote_plus(query)}"
        return {_page_of(link) for link in rendered_search(url, ready, links, 60)}

    def record_number(self, url: str) -> int | None:
        """Return the number of the corpus page at ``url``."""
        match = re.fullmatch(r"/[\w-]+/(\d+)/", urlsplit(url).path)
        return int(match.group(1)) if match else None

    def result_lists(self, page_html: str, url: str) -> list[set[str]]:
        """Return the pages a rendered result page lists (its navigation lists every page)."""
        return _rendered_list(page_html, url, "//*[@id='mkdocs-search-results']//h3/a/@href")

    def is_empty(self, page_html: str) -> bool:
        """Return whether a rendered result page says the search found nothing."""
        results = lxml.html.document_fromstring(page_html).get_element_by_id(
            "mkdocs-search-results"
        )
        return results is not None and "No results found" in results.text_content()

    def records_loaded(self) -> int:
        """Return how many records the site holds: the corpus pages it was built with."""
        return len(self.records)

    def label_of(self, url: str) -> str | None:
        """Return the section of the corpus page at ``url``."""
        number = self.record_number(url)
        return self.records[number - 1].label if number else None


App = ServerApp | MkDocsSearch | SphinxDocs
REPO = Path(__file__).resolve().parents[2]  # the project root, where scrapy.cfg is


@dataclass
class GalleryCrawl:
    """What one deepweb crawl of a gallery application reached."""

    form_found: bool
    listed: set[Any]  # record numbers (paths) the application lists for the queries
    reached: set[Any]  # listed records the crawl stored as records
    chrome_records: list[str]  # stored "records" neither of the corpus nor listed
    pages: int
    seconds: float
    records: list[dict[str, Any]]  # the stored record items of the corpus
    result_pages: list[dict[str, Any]]  # the stored result page items
    stats: dict[str, Any]  # the crawl's stats (WEBSIM_STATS_OUTPUT)

    @property
    def coverage(self) -> float:
        """Records reached / records the application lists."""
        return len(self.reached) / len(self.listed) if self.listed else 0.0


def start_arguments(app: Any) -> list[str]:
    """Return the deepweb arguments that start a crawl of ``app``: its query template when its
    search is a script, else its start page."""
    template = getattr(app, "query_template", None)
    if template:
        return ["-a", f"query_template={app.url}{template}"]
    return ["-a", f"start_url={app.url}{app.start_path}"]


def render_arguments(app: Any) -> list[str]:
    """Return the deepweb arguments that render ``app``'s pages (none for a server-rendered one):
    Debian's Chromium, and time for the search's script to list its results."""
    if not app.rendered:
        return ["-a", "render=0"]
    return [
        "-a", "render=1", "-s", f"WEBSIM_CHROMIUM_PATH={CHROMIUM}",
        "-s", "WEBSIM_RENDER_SCRIPT_TIMEOUT=120",
    ]  # fmt: skip


def crawl_app(app: App, folder: Path, queries: tuple[str, ...] = ()) -> GalleryCrawl:
    """Run ``scrapy crawl deepweb -a follow=1`` (``render=1`` for a JavaScript search) on
    ``app`` with ``queries`` (default: the app's); compare what it stored with what the
    application lists."""
    queries = queries or app.queries
    output, stats_file = folder / f"{app.name}.jsonl", folder / f"{app.name}-stats.json"
    start = start_arguments(app)
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-O", str(output), *start,
        "-a", f"queries={','.join(queries)}", "-a", "follow=1", *render_arguments(app),
        "-s", "ROBOTSTXT_OBEY=False", "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", f"WEBSIM_STATS_OUTPUT={stats_file}", "-s", "WEBSIM_CHUNK_DETAIL=none",
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    started = time.monotonic()
    subprocess.run(command, cwd=REPO, env=environment, capture_output=True, timeout=900)
    seconds = time.monotonic() - started
    items = (
        [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
        if output.exists()
        else []
    )
    stats = json.loads(stats_file.read_text(encoding="utf-8")) if stats_file.exists() else {}
    listed_pages = {urldefrag(url).url for query in queries for url in app.listed(query)}
    listed = {app.record_number(url) for url in listed_pages}
    listed.discard(None)
    stored = [item for item in items if item.get("kind") == "record"]
    corpus_records = [item for item in stored if app.label_of(item["url"]) is not None]
    # Chrome: a stored "record" that is no corpus page and that the search does not list (Sphinx
    # also lists pages outside the labelled sections, such as ``contents.html``: records too).
    chrome = [
        item["url"]
        for item in stored
        if app.label_of(item["url"]) is None and urldefrag(item["url"]).url not in listed_pages
    ]
    reached = {app.record_number(item["url"]) for item in corpus_records} & listed
    return GalleryCrawl(
        form_found=getattr(app, "query_template", None) is None
        and "websim/crawl/no_search_form" not in stats,
        listed={number for number in listed if number is not None},
        reached={number for number in reached if number is not None},
        chrome_records=chrome,
        pages=len(items),
        seconds=seconds,
        records=corpus_records,
        result_pages=[item for item in items if item.get("kind") == "results"],
        stats=stats,
    )


def launchers() -> dict[str, Any]:
    """Return the gallery's launchers by name: ``launcher(records, workdir)`` makes the app
    (the generated routed sites serve a smaller corpus of their own)."""
    from support.php_apps import DokuWiki, MediaWiki, MediaWikiPaths
    from support.routed_site import VARIANTS, routed_launcher

    generated = {variant.name: routed_launcher(variant) for variant in VARIANTS}
    return {
        DjangoAdmin.name: DjangoAdmin,
        FlaskAdmin.name: FlaskAdmin,
        SqlAdmin.name: SqlAdmin,
        MkDocsSearch.name: MkDocsSearch,
        SphinxDocs.name: lambda records, workdir: SphinxDocs(),
        MediaWiki.name: MediaWiki,
        MediaWikiPaths.name: MediaWikiPaths,
        DokuWiki.name: DokuWiki,
        **generated,
    }


@dataclass
class SurfacedApp:
    """What a deepweb crawl with no queries (surfacing) reached of a gallery application."""

    exit_code: int
    reached: set[int]  # corpus record numbers its result pages list (else link to)
    urls: list[str]  # the URL of every page it stored
    stats: dict[str, Any]
    log: str
    seconds: float  # the crawl's wall time


def result_links(app: Any, item: dict[str, Any]) -> list[str]:
    """Return the links of a stored result page that lead to what it lists: those of its
    result lists when the application reads them, else all of them."""
    if hasattr(app, "result_lists"):
        return [link for found in app.result_lists(item["html"], item["url"]) for link in found]
    return list(item.get("links") or [])


def surface_app(app: Any, folder: Path, max_queries: int = 100) -> SurfacedApp:
    """Run ``scrapy crawl deepweb`` on ``app`` with no queries (the spider chooses them)."""
    output, stats_file = folder / f"{app.name}.jsonl", folder / f"{app.name}-stats.json"
    start = start_arguments(app)
    command = [
        sys.executable, "-m", "scrapy", "crawl", "deepweb", "-O", str(output), *start,
        "-a", f"max_queries={max_queries}", *render_arguments(app), "-s", "ROBOTSTXT_OBEY=False",
        "-s", "AUTOTHROTTLE_ENABLED=False", "-s", f"WEBSIM_STATS_OUTPUT={stats_file}",
        "-s", "WEBSIM_CHUNK_DETAIL=none", "-s", "WEBSIM_ANALYSIS_WORKERS=0",
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=1800
    )
    seconds = time.monotonic() - started
    reached: set[int] = set()
    lines = output.read_text(encoding="utf-8").splitlines() if output.exists() else []
    urls = []
    for line in lines:
        item = json.loads(line)
        urls.append(item["url"])
        if item["kind"] == "results":
            numbers = (app.record_number(link) for link in result_links(app, item))
            reached.update(number for number in numbers if number is not None)
    stats = json.loads(stats_file.read_text(encoding="utf-8")) if stats_file.exists() else {}
    return SurfacedApp(done.returncode, reached, urls, stats, done.stderr, seconds)
