"""The brand benchmark's screenshots: a page that fails to render is counted, not fatal."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

# Last on the path: the benchmarks' own module names (``distributed.py``...) must not shadow
# installed packages for the tests that run after this one in the same process.
sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))

import brand_identification
from similarity_captures import RenderLog

from websim_crawler.browser.page import RenderedPage


class FakeRenders:
    """Stand in for ``render_offline``: every page but ``failing`` renders to its own PNG."""

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.asked: list[list[str]] = []

    def __call__(
        self, folder: Path, names: Sequence[str], conditions: Mapping[str, Any]
    ) -> tuple[dict[str, list[RenderedPage | None]], RenderLog]:
        self.asked.append(list(names))
        pages = [
            None if name in self.failing else RenderedPage(name, "<p>", b"PNG " + name.encode())
            for name in names
        ]
        log = RenderLog(rendered=sum(p is not None for p in pages), failed=pages.count(None))
        return {condition: pages for condition in conditions}, log


def test_a_page_that_fails_to_render_is_counted_and_asked_again_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "kits"
    folder.mkdir()
    for name in ("a.html", "b.html"):
        (folder / name).write_text(f"<title>{name}</title>")
    pages = {"a.html": "file:///a", "b.html": "file:///b"}
    renders = FakeRenders(failing={"b.html"})
    monkeypatch.setattr(brand_identification, "render_offline", renders)

    shots, failed, log = brand_identification.render_screenshots(folder, pages, tmp_path / "c")

    assert shots == {"file:///a": b"PNG a.html"}
    assert failed == ["file:///b"]
    assert log is not None
    renders.failing.clear()
    shots, failed, log = brand_identification.render_screenshots(folder, pages, tmp_path / "c")
    assert renders.asked == [["a.html", "b.html"], ["b.html"]]  # a.html's PNG is cached
    assert shots == {"file:///a": b"PNG a.html", "file:///b": b"PNG b.html"}
    assert failed == []
    shots, failed, log = brand_identification.render_screenshots(folder, pages, tmp_path / "c")
    assert log is None and len(renders.asked) == 2  # all cached: nothing rendered


def test_a_changed_page_is_rendered_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "kits"
    folder.mkdir()
    (folder / "a.html").write_text("<title>one</title>")
    renders = FakeRenders(failing=set())
    monkeypatch.setattr(brand_identification, "render_offline", renders)
    brand_identification.render_screenshots(folder, {"a.html": "file:///a"}, tmp_path / "c")
    (folder / "a.html").write_text("<title>two</title>")
    brand_identification.render_screenshots(folder, {"a.html": "file:///a"}, tmp_path / "c")
    assert renders.asked == [["a.html"], ["a.html"]]
