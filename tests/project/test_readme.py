"""The README stays true: the settings it names exist, it links the references, quick start first.

Every setting and stat is documented in docs/settings.md and docs/stats.md, generated from the
declarations (``tests/project/test_reference.py`` checks they are current).
"""

from __future__ import annotations

import re
from pathlib import Path

from websim_crawler.cli._settings import known_settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Named on purpose though not settings: a placeholder and the misspelling the README shows.
NOT_SETTINGS = {"WEBSIM_NAME", "WEBSIM_CLUSTER_OUTPUT"}


def test_quick_start_shows_the_two_commands_first() -> None:
    quick_start = README.split("## Quick start", 1)[1]
    first_block = quick_start.split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line]
    assert commands == ["make demo", "make test"]


def test_readme_is_a_manual_of_at_most_550_lines() -> None:
    assert len(README.splitlines()) <= 550


def test_every_setting_the_readme_names_exists_and_it_links_the_references() -> None:
    named = set(re.findall(r"\bWEBSIM_[A-Z0-9_]*[A-Z0-9]\b", README))
    assert len(named) >= 20
    assert sorted(named - set(known_settings()) - NOT_SETTINGS) == []
    assert "](docs/settings.md" in README and "](docs/stats.md" in README


def test_linked_files_exist() -> None:
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]*)", README)
    assert len(links) >= 4
    assert [link for link in links if not (ROOT / link).exists()] == []
