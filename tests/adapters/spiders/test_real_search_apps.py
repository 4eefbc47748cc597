"""The gallery: deepweb crawls of search applications written by others (support/real_apps.py).

The lighter applications (server-rendered tables) run here; ``benchmarks/real_sites.py`` runs
them all, the JavaScript searches included. Records the application lists for the queries are
read from its own result pages; coverage is records reached / records listed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.real_apps import (
    CHROMIUM,
    AppMissing,
    DjangoAdmin,
    FlaskAdmin,
    GalleryCrawl,
    MkDocsSearch,
    SqlAdmin,
    corpus,
    crawl_app,
)


def run(launcher: type, folder: Path, queries: tuple[str, ...] = ()) -> GalleryCrawl:
    """Start the application with the corpus and crawl it (skip when it is not installed)."""
    try:
        with launcher(corpus(), folder / "app") as app:
            return crawl_app(app, folder, queries)
    except AppMissing as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def django_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GalleryCrawl]:
    yield run(DjangoAdmin, tmp_path_factory.mktemp("django"))


@pytest.fixture(scope="module")
def mkdocs_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GalleryCrawl]:
    # One query (13 pages listed): each record of a rendered search is rendered too.
    yield run(MkDocsSearch, tmp_path_factory.mktemp("mkdocs"), queries=("thread",))


@pytest.mark.slow
def test_flask_admin_list_view_records_are_all_reached(tmp_path: Path) -> None:
    crawl = run(FlaskAdmin, tmp_path)
    assert crawl.form_found
    assert len(crawl.listed) >= 30  # the queries list records on several result pages
    assert crawl.coverage >= 0.95 and crawl.chrome_records == []


@pytest.mark.slow
def test_sqladmin_list_view_records_are_all_reached_by_query_template(tmp_path: Path) -> None:
    crawl = run(SqlAdmin, tmp_path)
    assert not crawl.form_found  # its search box is a script: the crawl is given the template
    assert len(crawl.listed) >= 30
    assert crawl.coverage >= 0.95 and crawl.chrome_records == []


@pytest.mark.slow
def test_django_admin_change_list_search_form_is_found(django_crawl: GalleryCrawl) -> None:
    assert django_crawl.form_found and len(django_crawl.listed) >= 30


@pytest.mark.slow
def test_django_admin_rows_linked_by_their_numbers_are_reached(django_crawl: GalleryCrawl) -> None:
    assert django_crawl.coverage >= 0.95 and django_crawl.chrome_records == []


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_mkdocs_search_is_rendered_and_its_form_found(mkdocs_crawl: GalleryCrawl) -> None:
    assert mkdocs_crawl.form_found and len(mkdocs_crawl.listed) >= 10
    assert mkdocs_crawl.chrome_records == []


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_mkdocs_search_results_are_reached(mkdocs_crawl: GalleryCrawl) -> None:
    assert mkdocs_crawl.coverage >= 0.95
