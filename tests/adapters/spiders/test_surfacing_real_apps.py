"""Surfacing applications written by others (tests/support/real_apps.py, php_apps.py) with no
queries given: the crawl finds its own way through Django's admin, Flask-Admin, SQLAdmin (by its
query template), MediaWiki and DokuWiki, and says how much it reached."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.php_apps import DokuWiki, MediaWiki
from support.real_apps import AppMissing, DjangoAdmin, FlaskAdmin, SqlAdmin, corpus, surface_app

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "launcher",
    [DjangoAdmin, FlaskAdmin, SqlAdmin, MediaWiki, DokuWiki],
    ids=["django", "flask-admin", "sqladmin", "mediawiki", "dokuwiki"],
)
def test_surfacing_reaches_nearly_every_record_of_real_applications(
    launcher: type, tmp_path: Path
) -> None:
    records = corpus()
    try:
        with launcher(records, tmp_path / "app") as app:
            surfaced = surface_app(app, tmp_path, max_queries=100)
    except AppMissing as missing:
        pytest.skip(str(missing))
    assert surfaced.exit_code == 0, surfaced.log[-3000:]
    stats = surfaced.stats
    assert stats["websim/surfacing/queries"] <= 100
    assert len(surfaced.reached) >= 0.95 * len(records), stats["websim/surfacing/stopped"]
    assert abs(stats["websim/surfacing/estimate"] - len(records)) <= 0.2 * len(records)
