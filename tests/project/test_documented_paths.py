"""Every ``websim_crawler.x.y`` path the README and docs/ name imports; every file named exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANUALS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOTTED = re.compile(r"\bwebsim_crawler(?:\.\w+)+")
# A source file named in backquotes: from the repository root or from the package.
SOURCE_FILE = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.py)`")


def documented_paths() -> list[str]:
    return sorted({path for manual in MANUALS for path in DOTTED.findall(manual.read_text())})


def documented_files() -> list[str]:
    return sorted({path for manual in MANUALS for path in SOURCE_FILE.findall(manual.read_text())})


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
    assert "websim_crawler.core.similarity" in paths
    assert "websim_crawler/workers/pool.py" in documented_files()


@pytest.mark.parametrize("path", documented_paths())
def test_a_documented_path_imports(path: str) -> None:
    assert resolve(path) is not None


@pytest.mark.parametrize("path", documented_files())
def test_a_documented_file_exists(path: str) -> None:
    assert (ROOT / path).is_file() or (ROOT / "websim_crawler" / path).is_file()


def test_an_unknown_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("websim_crawler.no_such_room")
    with pytest.raises(ModuleNotFoundError):  # the 0.1 aliases are gone (CHANGELOG.md)
        importlib.import_module("websim_crawler.similarity")
    with pytest.raises(AttributeError):
        resolve("websim_crawler.pipelines.NoSuchPipeline")
