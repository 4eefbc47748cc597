"""Every ``websim_crawler.x.y`` path the README and docs/ name imports, old paths included."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from websim_crawler._moved import MOVED_MODULES

ROOT = Path(__file__).resolve().parents[2]
MANUALS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOTTED = re.compile(r"\bwebsim_crawler(?:\.\w+)+")


def documented_paths() -> list[str]:
    return sorted({path for manual in MANUALS for path in DOTTED.findall(manual.read_text())})


def resolve(path: str) -> object:
    """Import the longest module prefix of ``path`` and return the object it names."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(path)


def test_the_manuals_name_paths() -> None:
    paths = documented_paths()
    assert "websim_crawler.pipelines.PageAnalysisPipeline" in paths
    assert "websim_crawler.similarity" in paths  # the old path, kept


@pytest.mark.parametrize("path", documented_paths())
def test_a_documented_path_imports(path: str) -> None:
    assert resolve(path) is not None


@pytest.mark.parametrize("old, home", sorted(MOVED_MODULES.items()))
def test_an_old_path_is_the_module_at_its_home(old: str, home: str) -> None:
    script = (
        f"import {old} as old, {home} as home\n"
        "assert old is home and old.__spec__.name == home.__name__ == " + repr(home) + "\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_an_unknown_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("websim_crawler.no_such_room")
    with pytest.raises(AttributeError):
        resolve("websim_crawler.pipelines.NoSuchPipeline")
