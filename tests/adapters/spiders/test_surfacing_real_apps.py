"""Surfacing applications written by others (tests/support/real_apps.py, php_apps.py) with no
queries given: the crawl finds its own way through Django's admin, Flask-Admin, SQLAdmin (by its
query template), MediaWiki, DokuWiki and MkDocs' JavaScript search (rendered), and says how much
it reached."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.php_apps import DokuWiki, MediaWiki
from support.real_apps import (
    CHROMIUM,
    AppMissing,
    DjangoAdmin,
    FlaskAdmin,
    MkDocsSearch,
    Record,
    SqlAdmin,
    SurfacedApp,
    corpus,
    surface_app,
)

pytestmark = pytest.mark.slow


def surfaced(launcher: type, records: list[Record], folder: Path) -> tuple[SurfacedApp, str]:
    """Start the application with ``records`` and surface it with at most 100 queries; return
    what the crawl reached and the application's host:port (skip when it is not installed)."""
    try:
        with launcher(records, folder / "app") as app:
            return surface_app(app, folder, max_queries=100), urlsplit(app.url).netloc
    except AppMissing as missing:
        pytest.skip(str(missing))


def assert_nearly_every_record(run: SurfacedApp, records: list[Record]) -> None:
    assert run.exit_code == 0, run.log[-3000:]
    stats = run.stats
    assert stats["websim/surfacing/queries"] <= 100
    assert len(run.reached) >= 0.95 * len(records), stats["websim/surfacing/stopped"]
    assert abs(stats["websim/surfacing/estimate"] - len(records)) <= 0.2 * len(records)


@pytest.mark.parametrize(
    "launcher",
    [DjangoAdmin, FlaskAdmin, SqlAdmin, MediaWiki, DokuWiki],
    ids=["django", "flask-admin", "sqladmin", "mediawiki", "dokuwiki"],
)
def test_surfacing_reaches_nearly_every_record_of_real_applications(
    launcher: type, tmp_path: Path
) -> None:
    records = corpus()
    run, _ = surfaced(launcher, records, tmp_path)
    assert_nearly_every_record(run, records)


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium is not installed")
def test_surfacing_a_javascript_search_reaches_nearly_every_record_and_stays_on_loopback(
    tmp_path: Path,
) -> None:
    # Every result page is rendered: lunr runs in a web worker over the site's search index.
    # Measured: 166 of 166 records with 25 queries (benchmarks/RESULTS.md, "Surfacing").
    records = corpus()
    run, site = surfaced(MkDocsSearch, records, tmp_path)
    assert_nearly_every_record(run, records)
    # Nothing left 127.0.0.1: every page is the site's, and the browser connected only to it
    # (the theme's CDN script and Chromium's own calls were refused, never connected).
    assert run.urls and {urlsplit(url).netloc for url in run.urls} == {site}
    assert run.stats["websim/render/allowed/own_site"] > 0
    allowed = [key for key in run.stats if key.startswith("websim/render/allowed/")]
    assert allowed == ["websim/render/allowed/own_site"]
