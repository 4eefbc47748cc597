"""The README stays true: every setting is documented, the quick start comes first."""

from __future__ import annotations

from pathlib import Path

from websim_crawler.cli._settings import known_settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_websim_setting_is_in_the_readme() -> None:
    names = known_settings()
    assert len(names) >= 20
    missing = [name for name in names if f"`{name}`" not in README]
    assert missing == []


def test_quick_start_shows_the_two_commands_first() -> None:
    quick_start = README.split("## Quick start", 1)[1]
    first_block = quick_start.split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line]
    assert commands == ["make demo", "make test"]
