"""PHP applications of the gallery, routed by their query string: Debian's MediaWiki and DokuWiki.

Both run from Debian's packages (``apt-get install mediawiki dokuwiki php-cli php-sqlite3``)
under PHP's built-in server on a free loopback port, with the corpus loaded into a throw-away
folder: nothing is written outside ``workdir``. MediaWiki is served as it is behind CGI
(``/index.php?title=Page``, search ``/index.php?search=word&title=Special:Search``) or with
path-style URLs (``/index.php/Page``); DokuWiki as it is by default (``/doku.php?id=ns:page``,
search ``/doku.php?do=search&q=word``). Each lists page-name matches and full-text matches on
one result page, in two lists. What an application lists for a query, and which of its result
pages are empty, is read from its own result pages.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from support.real_apps import Record, ServerApp, fetch_text

MEDIAWIKI = Path("/usr/share/mediawiki")
DOKUWIKI = Path("/usr/share/dokuwiki")
_PHP_MODULES = ("pdo_sqlite", "intl", "mbstring", "dom")  # php-sqlite3, php-intl, ...
NO_MATCH = "zeppelin"  # a query no document of the corpus matches: an empty result page
_SUBPAGE_EVERY = 5  # every fifth record is a subpage: its title (and id) has one more "/"


def php_missing(root: Path, package: str, modules: tuple[str, ...]) -> str | None:
    """Return why ``php`` cannot serve the application at ``root`` (``None``: it can)."""
    if shutil.which("php") is None:
        return "needs PHP (apt-get install php-cli)"
    if not root.is_dir():
        return f"needs Debian's {package} (apt-get install {package})"
    loaded = subprocess.run(["php", "-m"], capture_output=True, text=True).stdout.lower()
    absent = [module for module in modules if module not in loaded.split()]
    if absent:
        return f"needs the PHP modules {', '.join(absent)} (apt-get install php-sqlite3 ...)"
    return None


class PhpApp(ServerApp):
    """An application served by ``php -S`` (four workers) from ``docroot``."""

    package = ""
    docroot = Path()
    modules: tuple[str, ...] = ()
    quiet_stderr = True  # PHP's server logs every request on stderr

    def missing(self) -> str | None:
        return php_missing(self.docroot, self.package, self.modules)

    def environment(self) -> dict[str, str] | None:
        return dict(os.environ, PHP_CLI_SERVER_WORKERS="4")

    def command(self) -> list[str]:
        return ["php", "-S", f"127.0.0.1:{self.port}", "-t", str(self.docroot)]

    def php(self, *arguments: str) -> None:
        """Run a PHP maintenance script of the application (raise on failure, with its output)."""
        done = subprocess.run(
            ["php", *arguments], cwd=self.docroot, env=self.environment(), capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"php {' '.join(arguments)}: {(done.stdout + done.stderr)[-2000:]}")

    def is_empty(self, page_html: str) -> bool:
        """Return whether a result page says it has no results."""
        raise NotImplementedError

    def result_lists(self, page_html: str, url: str) -> list[set[str]]:
        """Return the record URLs of each result list of a result page."""
        raise NotImplementedError


def _wiki_title(record: Record, taken: set[str]) -> str:
    """Return a MediaWiki title for ``record``: its own title without the characters titles
    refuse, first letter upper-case, unique; every fifth record is a subpage (``Notes/...``)."""
    title = " ".join(re.sub(r"[#<>\[\]|{}_]", " ", record.title).split()).strip(" ./:")
    title = title or f"Record {record.number}"
    if record.number % _SUBPAGE_EVERY == 0:
        title = f"Notes/{title}"
    title = title[0].upper() + title[1:]
    if title in taken:
        title = f"{title} ({record.label} {record.number})"
    taken.add(title)
    return title


_MEDIAWIKI_PAGE = (
    "<page><title>{}</title><ns>0</ns><revision><timestamp>2026-01-01T00:00:00Z</timestamp>"
    "<contributor><username>Admin</username></contributor><model>wikitext</model>"
    '<format>text/x-wiki</format><text xml:space="preserve">{}</text></revision></page>\n'
)


def _mediawiki_dump(records: list[Record], titles: dict[int, str]) -> str:
    """Return the corpus as a MediaWiki XML export (one revision a page, text in ``nowiki``)."""
    pages = "".join(
        _MEDIAWIKI_PAGE.format(
            html.escape(titles[record.number]),
            html.escape(f"<nowiki>{record.text.replace('</nowiki>', '')}</nowiki>"),
        )
        for record in records
    )
    return (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" '
        f'xml:lang="en">\n{pages}</mediawiki>\n'
    )


class MediaWiki(PhpApp):
    """Debian's MediaWiki 1.39 on SQLite, its pages at ``/index.php?title=Page`` (as behind
    CGI, ``$wgUsePathInfo = false``); records are the corpus pages, every fifth a subpage."""

    name = "mediawiki-query"
    package = "mediawiki"
    docroot = MEDIAWIKI
    modules = _PHP_MODULES
    article_path = "/index.php?title=$1"
    use_path_info = "false"
    # 20 results a page: each query lists several pages; the last one matches nothing.
    queries = ("module", "example", "string", NO_MATCH)

    def environment(self) -> dict[str, str] | None:
        return dict(os.environ, PHP_CLI_SERVER_WORKERS="4", MW_CONFIG_FILE=str(self.settings))

    @property
    def settings(self) -> Path:
        return self.workdir / "LocalSettings.php"

    def prepare(self) -> None:
        taken: set[str] = set()
        self.titles = {record.number: _wiki_title(record, taken) for record in self.records}
        self.numbers = {title: number for number, title in self.titles.items()}
        self.php(
            "maintenance/install.php", "--dbtype", "sqlite", "--dbpath", str(self.workdir / "db"),
            "--dbname", "gallery", "--confpath", str(self.workdir), "--server",
            self.url.rstrip("/"), "--scriptpath", "", "--skins", "Vector",
            "--pass", "gallery-test-only", "Gallery", "Admin",
        )  # fmt: skip
        with self.settings.open("a", encoding="utf-8") as settings:
            settings.write(
                f'\n$wgArticlePath = "{self.article_path}";\n'
                f"$wgUsePathInfo = {self.use_path_info};\n"
                f'$wgCacheDirectory = "{self.workdir / "cache"}";\n'
                '$wgUploadDirectory = "' + str(self.workdir / "images") + '";\n'
                "$wgEnableUploads = false;\n$wgJobRunRate = 0;\n"
            )
        dump = self.workdir / "corpus.xml"
        dump.write_text(_mediawiki_dump(self.records, self.titles), encoding="utf-8")
        self.php("maintenance/importDump.php", "--no-updates", str(dump))
        self.php("maintenance/rebuildtextindex.php")

    def search_url(self, query: str, offset: int = 0) -> str:
        """Return the URL of a full-text result page of ``query``."""
        quoted = urllib.parse.quote_plus(query)
        tail = f"&offset={offset}" if offset else ""
        return f"{self.url}index.php?search={quoted}&title=Special:Search&fulltext=1{tail}"

    def listed(self, query: str) -> set[str]:
        return self.collect(
            self.search_url(query),
            r'<div class="mw-search-result-heading"><a href="([^"]+)"',
            r'<a href="([^"]+)"[^>]*class="mw-nextlink"',
        )

    def record_number(self, url: str) -> int | None:
        parts = urlsplit(url)
        if parts.path.startswith("/index.php/"):
            title = urllib.parse.unquote(parts.path.removeprefix("/index.php/"))
        else:
            title = parse_qs(parts.query).get("title", [""])[0]
        return self.numbers.get(title.replace("_", " "))

    def is_empty(self, page_html: str) -> bool:
        return 'class="mw-search-nonefound"' in page_html

    def result_lists(self, page_html: str, url: str) -> list[set[str]]:
        lists = re.findall(
            r'<ul class=[\'"]mw-search-results[\'"][^>]*>(.*?)</ul>', page_html, re.S
        )
        return [
            {
                urllib.parse.urljoin(url, html.unescape(href))
                for href in re.findall(
                    r'<div class="mw-search-result-heading"><a href="([^"]+)"', block
                )
            }
            for block in lists
        ]


class MediaWikiPaths(MediaWiki):
    """The same MediaWiki with path-style URLs: ``/index.php/Page``, subpages one segment more."""

    name = "mediawiki-path"
    article_path = "/index.php/$1"
    use_path_info = "true"


def _dokuwiki_id(record: Record, taken: set[str]) -> str:
    """Return a DokuWiki page id for ``record``: ``<section>:<name>``, every fifth record one
    namespace deeper (``<section>:notes:<name>``), unique."""
    name = re.sub(r"[^a-z0-9]+", "_", record.title.lower()).strip("_")[:60] or "record"
    section = re.sub(r"[^a-z0-9]+", "_", record.label.lower())
    page = f"{section}:notes:{name}" if record.number % _SUBPAGE_EVERY == 0 else f"{section}:{name}"
    if page in taken:
        page = f"{page}_{record.number}"
    taken.add(page)
    return page


_DOKUWIKI_DATA = (
    "attic", "cache", "index", "locks", "log", "media", "media_attic", "media_meta", "meta",
    "pages", "tmp",
)  # fmt: skip


class DokuWiki(PhpApp):
    """Debian's DokuWiki (files, no database) copied into ``workdir`` with its own
    configuration: pages at ``/doku.php?id=section:page`` (its default routing), search at
    ``/doku.php?do=search&id=start&q=word``, page-name matches and full-text matches listed on
    one page (no pager); every fifth record one namespace deeper."""

    name = "dokuwiki"
    package = "dokuwiki"
    modules = ("mbstring", "xml")
    start_path = "doku.php"
    ready_path = "doku.php"
    queries = ("thread", "unicode", "exception", NO_MATCH)

    @property
    def docroot(self) -> Path:  # type: ignore[override]
        return self.workdir / "dokuwiki"

    def missing(self) -> str | None:
        return php_missing(DOKUWIKI, self.package, self.modules)

    def prepare(self) -> None:
        root = self.docroot
        shutil.copytree(DOKUWIKI, root, symlinks=False)
        shutil.copytree("/etc/dokuwiki", root / "conf", symlinks=False, dirs_exist_ok=True)
        (root / "inc" / "preload.php").write_text(
            "<?php\ndefine('DOKU_CONF', __DIR__ . '/../conf/');\n", encoding="utf-8"
        )
        data = self.workdir / "data"
        for folder in _DOKUWIKI_DATA:
            (data / folder).mkdir(parents=True, exist_ok=True)
        (root / "conf" / "local.php").write_text(
            "<?php\n"
            f"$conf['savedir'] = '{data}';\n"
            "$conf['title'] = 'Gallery';\n$conf['useacl'] = 0;\n$conf['updatecheck'] = 0;\n",
            encoding="utf-8",
        )
        taken: set[str] = set()
        self.ids = {record.number: _dokuwiki_id(record, taken) for record in self.records}
        self.numbers = {page: number for number, page in self.ids.items()}
        for record in self.records:
            path = data / "pages" / (self.ids[record.number].replace(":", "/") + ".txt")
            path.parent.mkdir(parents=True, exist_ok=True)
            text = record.text.replace("</nowiki>", "")
            path.write_text(f"====== {record.title} ======\n\n<nowiki>{text}</nowiki>\n")
        (data / "pages" / "start.txt").write_text("====== Gallery ======\n\nThe corpus.\n")
        self.php("bin/indexer.php", "--quiet")

    def search_url(self, query: str) -> str:
        """Return the URL of the result page of ``query``."""
        return f"{self.url}doku.php?do=search&id=start&q={urllib.parse.quote_plus(query)}"

    def listed(self, query: str) -> set[str]:
        page_html = fetch_text(self.search_url(query))
        return set().union(*self.result_lists(page_html, self.search_url(query)))

    def record_number(self, url: str) -> int | None:
        parts = urlsplit(url)
        if parts.path != "/doku.php":
            return None
        fields = parse_qs(parts.query)
        if set(fields) - {"id", "s[]", "s"}:  # another action on the page (edit, revisions...)
            return None
        return self.numbers.get(fields.get("id", [""])[0])

    def is_empty(self, page_html: str) -> bool:
        return '<div class="nothing">' in page_html

    def result_lists(self, page_html: str, url: str) -> list[set[str]]:
        blocks = [
            *re.findall(r'<ul class="search_quickhits">(.*?)</ul>', page_html, re.S),
            *re.findall(r'<dl class="search_results">(.*?)</dl>', page_html, re.S),
        ]
        return [
            {
                urllib.parse.urljoin(url, html.unescape(href))
                for href in re.findall(r'<a href="([^"]+)" class="wikilink1"', block)
            }
            for block in blocks
        ]
