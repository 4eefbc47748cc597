"""The manual from the code: ``websim settings``, docs/settings.md and docs/stats.md are current."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from websim_crawler.cli import main
from websim_crawler.cli._settings import known_settings
from websim_crawler.config.reference import generated_pages, matching, setting_docs
from websim_crawler.config.reference import main as reference_main
from websim_crawler.config.stats import STATS

ROOT = Path(__file__).resolve().parents[2]
STAT_KEY = re.compile(r"websim/[a-z_/]+")


def stats_in_code() -> set[str]:
    """Return each ``websim/...`` stats key of the package, cut at its first placeholder."""
    keys = set()
    for path in (ROOT / "websim_crawler").rglob("*.py"):
        if path.name == "stats.py" and path.parent.name == "config":
            continue  # the declarations themselves
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                first = node.values[0] if node.values else None
                if isinstance(first, ast.Constant) and str(first.value).startswith("websim/"):
                    keys.add(str(first.value))  # f"websim/pages/{kind}" -> "websim/pages/"
            elif isinstance(node, ast.Constant) and STAT_KEY.fullmatch(str(node.value)):
                keys.add(str(node.value))
    return keys


def covers(documented: str, counted: str) -> bool:
    """Tell whether a declared key (``websim/pages/dropped/<reason>``) covers a key in code."""
    if counted.endswith("/"):  # an f-string's constant head
        return documented.startswith(counted)
    head, placeholder, _ = documented.partition("<")
    return counted.startswith(head) if placeholder else documented == counted


def test_the_generated_pages_are_current() -> None:
    """Regenerate with ``python -m websim_crawler.config.reference --write``."""
    assert reference_main(["--check", "--docs", str(ROOT / "docs")]) == 0


def test_the_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    for path in generated_pages(ROOT / "docs"):
        shutil.copy(path, tmp_path / path.name)
    assert reference_main(["--check", "--docs", str(tmp_path)]) == 0
    page = tmp_path / "settings.md"
    page.write_text(page.read_text().replace("WEBSIM_MAX_ELEMENTS", "WEBSIM_MAX_ELEMENT"))
    assert reference_main(["--check", "--docs", str(tmp_path)]) == 1
    assert reference_main(["--write", "--docs", str(tmp_path)]) == 0
    assert reference_main(["--check", "--docs", str(tmp_path)]) == 0


def test_every_setting_is_in_the_reference_once_with_its_declaration() -> None:
    docs = setting_docs()
    names = [doc.name for doc in docs]
    assert len(names) == len(set(names)) >= 150
    assert set(names) == set(known_settings())  # what the commands and the crawl accept
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in page for name in names)
    elements = next(doc for doc in docs if doc.name == "WEBSIM_MAX_ELEMENTS")
    assert (elements.section, elements.default_text, elements.bounds_text) == (
        "analysis",
        "200000",
        ">= 1",
    )


def test_every_stat_the_code_counts_is_declared() -> None:
    declared = [key for stat in STATS for key in stat.keys]
    counted = stats_in_code()
    assert len(counted) >= 20
    missing = sorted(key for key in counted if not any(covers(doc, key) for doc in declared))
    assert missing == []
    page = (ROOT / "docs" / "stats.md").read_text(encoding="utf-8")
    assert all(f"`{key}`" in page for key in declared)


def test_the_checks_can_fail() -> None:
    assert covers("websim/pages/dropped/<reason>", "websim/pages/dropped/empty")
    assert covers("websim/chunks/kept", "websim/chunks/")
    assert not covers("websim/pages/seen", "websim/pages/seen/x")
    assert not covers("websim/cluster/n_iter", "websim/pages/")


def test_a_pattern_picks_settings_by_glob_part_or_section() -> None:
    docs = setting_docs()
    assert [doc.name for doc in matching(docs, "websim_render_time*")] == ["WEBSIM_RENDER_TIMEOUT"]
    similarity = [doc for doc in docs if doc.section == "similarity"]
    assert similarity and all(doc in matching(docs, "similarity") for doc in similarity)
    assert all("TIMEOUT" in doc.name for doc in matching(docs, "timeout"))
    assert len(matching(docs, None)) == len(docs)


def test_websim_settings_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["settings"]) == 0
    listed = capsys.readouterr().out
    assert all(f"\n{name} = " in f"\n{listed}" for name in known_settings())
    assert main(["settings", "WEBSIM_MAX_ELEMENTS"]) == 0
    assert capsys.readouterr().out.startswith("WEBSIM_MAX_ELEMENTS = 200000  (>= 1)  [analysis]\n")
    assert main(["settings", "no_such_setting"]) == 1
    assert "no setting matches" in capsys.readouterr().err
