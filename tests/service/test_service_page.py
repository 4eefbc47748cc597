"""The service's web page in headless Chromium: a saved page and its screenshot dropped in,
the top matches shown side by side with the stages that decided them."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.imitations import imitate
from support.match_service import running_service

from websim_crawler.config import WebsimConfig
from websim_crawler.core.reference_index import ReferenceIndex
from websim_crawler.core.similarity.comparison import page_features

pytest.importorskip("starlette", reason="needs the serve extra (starlette, uvicorn)")
pytest.importorskip("playwright", reason="needs playwright (the render extra)")

CHROMIUM = os.environ.get("WEBSIM_CHROMIUM_PATH", "/usr/bin/chromium")
SITE = Path(__file__).resolve().parents[1] / "support" / "site"


def shown_matches(url: str, page: Path, screenshot: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = browser.new_page()
            tab.goto(url)
            tab.set_input_files("#page", str(page))
            tab.set_input_files("#screenshot", str(screenshot))
            tab.click("#submit")
            tab.wait_for_selector("body[data-answered=yes]", timeout=60_000)
            return dict(
                tab.evaluate(
                    """() => ({
                        status: document.getElementById("status").textContent,
                        columns: [...document.querySelectorAll(".column")].length,
                        hasScreenshot: !!document.querySelector(".query img"),
                        matches: [...document.querySelectorAll(".match")].map((m) => ({
                            url: m.dataset.url,
                            verdict: m.querySelector(".verdict").textContent,
                            decided: [...m.querySelectorAll("tr.decided")].map(
                                (row) => row.dataset.stage),
                        })),
                    })"""
                )
            )
        finally:
            browser.close()


def test_a_dropped_page_shows_its_matches_and_what_decided(tmp_path: Path) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"needs Chromium at {CHROMIUM} (apt-get install chromium)")
    from PIL import Image

    index = ReferenceIndex()
    for name in ("about.html", "help.html", "index.html", "results.html"):
        url = f"http://protected.example/{name}"
        assert index.add(page_features((SITE / name).read_bytes(), url=url)) is None
    index.save(tmp_path / "refs.idx")
    copy = imitate((SITE / "help.html").read_bytes(), "http://protected.example/help.html", seed=3)
    page = tmp_path / "suspicious.html"
    page.write_text(copy.html, encoding="utf-8")
    screenshot = tmp_path / "suspicious.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(screenshot)
    config = WebsimConfig.from_settings(
        {"WEBSIM_MATCH_INDEX": str(tmp_path / "refs.idx"), "WEBSIM_ANALYSIS_WORKERS": "1"}
    )
    with running_service(config) as url, ThreadPoolExecutor(1) as thread:
        # In a thread of its own: Playwright's sync API refuses one running an asyncio loop.
        shown = thread.submit(shown_matches, f"{url}/", page, screenshot).result()
    assert shown["hasScreenshot"]
    assert shown["columns"] == 1 + len(shown["matches"])  # the page beside its matches
    best = shown["matches"][0]
    assert best["url"] == "http://protected.example/help.html"
    assert best["verdict"] == "similar"
    assert best["decided"] and set(best["decided"]) <= {"layout", "text", "links", "visual"}
    assert "similar" in shown["status"]
