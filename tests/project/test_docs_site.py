"""The docs site builds from docs/ with MkDocs, without a warning (``mkdocs build --strict``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (extra: gallery)"
)
def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr
    for page in ("index.html", "settings/index.html", "stats/index.html", "readme/index.html"):
        assert (tmp_path / page).is_file()
    assert "WEBSIM_MAX_ELEMENTS" in (tmp_path / "settings" / "index.html").read_text()


def test_every_docs_page_is_in_the_site_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    assert [page for page in pages if f" {page}" not in config] == []
