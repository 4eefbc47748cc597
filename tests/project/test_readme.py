"""The README stays true: every setting and stat is documented, the quick start comes first."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

from websim_crawler.cli._settings import known_settings
from websim_crawler.config import WebsimConfig
from websim_crawler.core.params import declared_settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
STAT_KEY = re.compile(r"websim/[a-z_/]+")
TABLE_ROW = re.compile(r"^\| `(WEBSIM_[A-Z0-9_]+)` \| `([^`]*)` \|", re.MULTILINE)


def documented_defaults() -> dict[str, str]:
    """Return ``{setting: default cell}`` from every settings table of the README."""
    return dict(TABLE_ROW.findall(README))


def declared_defaults() -> dict[str, Any]:
    """Return ``{setting: default}`` for every setting ``WebsimConfig`` declares."""
    hints = typing.get_type_hints(WebsimConfig)
    return {
        name: default
        for section in dataclasses.fields(WebsimConfig)
        for name, default, _help in declared_settings(hints[section.name])
    }


def matches(default: Any, cell: str) -> bool:
    """Tell whether a README default cell shows the declared default."""
    if isinstance(default, str):
        return cell == f'"{default}"'
    if default is None or isinstance(default, bool):
        return cell == repr(default)
    if isinstance(default, tuple):  # a list setting, shown as "1,0.5,1"
        try:
            return tuple(float(part) for part in cell.strip('"').split(",")) == default
        except ValueError:
            return False
    try:
        return float(cell) == default
    except ValueError:
        return False


def stats_table_keys() -> list[str]:
    """Return the backquoted keys of every README table headed ``| key | meaning |``."""
    keys = []
    for table in re.findall(r"^\| key \| meaning \|\n((?:\|.*\n)+)", README, re.MULTILINE):
        for row in table.splitlines()[1:]:
            first_cell = re.split(r"(?<!\\)\|", row)[1]
            keys += re.findall(r"`(websim/[^`]+)`", first_cell)
    return keys


def stats_in_code() -> set[str]:
    """Return each ``websim/...`` stats key of the package, cut at its first placeholder."""
    keys = set()
    for path in (ROOT / "websim_crawler").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                first = node.values[0] if node.values else None
                if isinstance(first, ast.Constant) and str(first.value).startswith("websim/"):
                    keys.add(str(first.value))  # f"websim/pages/{kind}" -> "websim/pages/"
            elif isinstance(node, ast.Constant) and STAT_KEY.fullmatch(str(node.value)):
                keys.add(str(node.value))
    return keys


def covers(documented: str, counted: str) -> bool:
    """Tell whether a README key (``websim/pages/dropped/<reason>``) covers a key in code."""
    if counted.endswith("/"):  # an f-string's constant head
        return documented.startswith(counted)
    head, placeholder, _ = documented.partition("<")
    return counted.startswith(head) if placeholder else documented == counted


def test_every_websim_setting_is_in_the_readme() -> None:
    names = known_settings()
    assert len(names) >= 20
    missing = [name for name in names if f"`{name}`" not in README]
    assert missing == []


def test_every_setting_row_shows_its_declared_default() -> None:
    documented = documented_defaults()
    declared = declared_defaults()
    assert len(declared) >= 20
    absent = sorted(set(declared) - set(documented))
    wrong = {
        name: (documented[name], declared[name])
        for name in declared
        if name in documented and not matches(declared[name], documented[name])
    }
    assert absent == []
    assert wrong == {}


def test_the_checks_can_fail() -> None:
    assert matches(0.5, "0.5") and matches(30.0, "30") and matches("auto", '"auto"')
    assert not matches(0.5, "0.4") and not matches("auto", "auto") and not matches(None, "0")
    assert covers("websim/pages/dropped/<reason>", "websim/pages/dropped/empty")
    assert covers("websim/chunks/kept", "websim/chunks/")
    assert not covers("websim/pages/seen", "websim/pages/seen/x")
    assert not covers("websim/cluster/n_iter", "websim/pages/")


def test_every_stat_the_code_counts_is_in_a_stats_table() -> None:
    documented = stats_table_keys()
    counted = stats_in_code()
    assert len(counted) >= 20
    missing = sorted(key for key in counted if not any(covers(doc, key) for doc in documented))
    assert missing == []


def test_quick_start_shows_the_two_commands_first() -> None:
    quick_start = README.split("## Quick start", 1)[1]
    first_block = quick_start.split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line]
    assert commands == ["make demo", "make test"]


def test_readme_is_a_manual_of_under_a_thousand_lines() -> None:
    assert len(README.splitlines()) < 1000


def test_linked_files_exist() -> None:
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]*)", README)
    assert len(links) >= 4
    assert [link for link in links if not (ROOT / link).exists()] == []
