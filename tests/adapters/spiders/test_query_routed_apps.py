"""Deepweb crawls of sites routed by their query string (issue 33), real and generated.

Real: Debian's MediaWiki served as behind CGI (``/index.php?title=Page``, search on the same
path) and with path-style URLs, and Debian's DokuWiki (``/doku.php?id=ns:page``), each with two
result lists on a result page (page-name and full-text matches) and footer chrome
(``support/php_apps.py``). Generated: the routed site family (``support/routed_site.py``) over
routing (path, query string, both), one to three result lists, footer chrome, ids with a slash
or encoded characters, and "next" past the last page onto an empty page.

For each: records reached / records the application lists >= 0.95, no chrome (permalinks, the
search page, this page) stored as a record, the empty result pages counted as empty (and not as
pages whose records were missed), and on pages with several lists, no list dropped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from support.php_apps import NO_MATCH, DokuWiki, MediaWiki, MediaWikiPaths, PhpApp
from support.real_apps import AppMissing, GalleryCrawl, corpus, crawl_app, fetch_text
from support.result_pages import ResultPageAccount, result_page_account
from support.routed_site import VARIANTS, RoutedSite, Variant, small_corpus

EMPTY = "websim/diagnosis/result_pages_empty"
WITHOUT_RECORDS = "websim/diagnosis/result_pages_without_records"


@dataclass
class Outcome:
    """A crawl, the site's account of its result pages, whether the site serves empty ones."""

    crawl: GalleryCrawl
    account: ResultPageAccount
    empty_expected: bool  # a query matches nothing, or "next" is offered past the last page
    several_expected: bool  # result pages show more than one list


def php_outcome(launcher: type[PhpApp], folder: Path) -> Outcome:
    """Start a PHP application with the corpus and crawl it (skip when it is not installed)."""
    try:
        with launcher(corpus(), folder / "app") as app:
            crawl = crawl_app(app, folder)
    except AppMissing as missing:
        pytest.skip(str(missing))
    account = result_page_account(app, crawl)
    assert account is not None
    return Outcome(crawl, account, NO_MATCH in app.queries, several_expected=True)


def generated_outcome(variant: Variant, folder: Path) -> Outcome:
    """Serve a generated routed site and crawl it (skip without the corpus's python3.11-doc)."""
    try:
        records = small_corpus()
    except AppMissing as missing:
        pytest.skip(str(missing))
    with RoutedSite(records, variant) as site:
        crawl = crawl_app(site, folder)
    account = result_page_account(site, crawl)
    assert account is not None
    return Outcome(crawl, account, variant.past_end, several_expected=variant.lists > 1)


@pytest.fixture(scope="module", params=[MediaWiki, MediaWikiPaths, DokuWiki], ids=lambda a: a.name)
def php_app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Outcome]:
    launcher = request.param
    yield php_outcome(launcher, tmp_path_factory.mktemp(launcher.name))


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda variant: variant.name)
def generated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Outcome]:
    yield generated_outcome(request.param, tmp_path_factory.mktemp("routed"))


@pytest.mark.slow
def test_query_routed_real_app_records_are_reached_and_no_chrome_stored(php_app: Outcome) -> None:
    crawl = php_app.crawl
    assert crawl.form_found and len(crawl.listed) >= 30
    assert crawl.chrome_records == []
    assert crawl.coverage >= 0.95


@pytest.mark.slow
def test_query_routed_real_app_empty_result_pages_are_counted_apart(php_app: Outcome) -> None:
    stats = php_app.crawl.stats
    assert php_app.account.empty_pages >= 1  # the query that matches nothing
    assert stats.get(EMPTY, 0) == php_app.account.empty_pages
    assert stats.get(WITHOUT_RECORDS, 0) == 0


@pytest.mark.slow
def test_query_routed_real_app_keeps_every_result_list(php_app: Outcome) -> None:
    assert bool(php_app.account.several_lists) == php_app.several_expected
    assert php_app.account.dropped_lists(php_app.crawl) == []


@pytest.mark.slow
def test_generated_routed_site_records_are_reached_and_no_chrome_stored(generated: Outcome) -> None:
    crawl = generated.crawl
    assert crawl.form_found and len(crawl.listed) >= 80
    assert crawl.chrome_records == []
    assert crawl.coverage >= 0.95


@pytest.mark.slow
def test_generated_routed_site_empty_result_pages_are_counted_apart(generated: Outcome) -> None:
    stats = generated.crawl.stats
    assert (generated.account.empty_pages > 0) == generated.empty_expected  # past the end
    assert stats.get(EMPTY, 0) == generated.account.empty_pages
    assert stats.get(WITHOUT_RECORDS, 0) == 0


@pytest.mark.slow
def test_generated_routed_site_keeps_every_result_list(generated: Outcome) -> None:
    assert bool(generated.account.several_lists) == generated.several_expected
    assert generated.account.dropped_lists(generated.crawl) == []


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda variant: variant.name)
def test_generated_routed_site_lists_each_record_once_on_one_page(variant: Variant) -> None:
    try:
        records = small_corpus()
    except AppMissing as missing:
        pytest.skip(str(missing))
    with RoutedSite(records, variant) as site:
        listed = [site.record_number(url) for query in site.queries for url in site.listed(query)]
        assert sorted(listed) == sorted(record.number for record in records)  # once each
        paths = {urlsplit(url).path for query in site.queries for url in site.listed(query)}
        segments = {path.count("/") for path in paths if path.startswith("/item/")}
        expected = {2, 3} if variant.odd_ids else {2}  # /item/doc-4/notes: one segment more
        assert segments == (expected if variant.routing != "query" else set())
        pages, url = 0, f"{site.url}{site.search_path.lstrip('/')}?q={site.queries[0]}"
        while url:  # follow "next" as a reader would
            page = fetch_text(url)
            pages += 1
            following = re.search(r'<a class="next" href="([^"]+)"', page)
            url = urljoin(url, html.unescape(following.group(1))) if following else ""
        assert len(site.served_empty) == int(variant.past_end)  # the page past the end
        seen = [set().union(*lists) for lists in site.served_lists.values()]
        assert set().union(*seen) == {site.record_number(u) for u in site.listed(site.queries[0])}
        assert pages == len(site.served_lists) + len(site.served_empty) <= 5  # crawl's max_pages
