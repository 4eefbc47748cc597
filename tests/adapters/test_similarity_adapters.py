"""The similarity adapters: ``websim compare``/``websim similar``, the pipeline, the spider."""

from __future__ import annotations

import base64
import functools
import http.server
import io
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import analysed
from PIL import Image
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.core.similarity.questions import QUESTIONS
from websim_crawler.pipelines.similarity import SimilarityPipeline

ROOT = Path(__file__).resolve().parents[2]

LIST_PAGE = (
    "<html><head><title>Apple pie</title></head><body><div id='nav'><a href='/a'>a</a>"
    "<a href='/b'>b</a></div><ul class='r'><li>Apple pie with cinnamon apples</li>"
    "<li>Baked apple pie recipes</li><li>Apple crumble and apple pie</li></ul></body></html>"
)
TABLE_PAGE = (
    "<html><body><table><tr><td>Engine oil prices</td><td>$</td></tr></table>"
    "<form><input name=q></form><p>Motor engine oil for diesel engines</p></body></html>"
)


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (60, 40)) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((size[1], size[0], 3), colour, dtype="uint8")).save(buffer, "PNG")
    return buffer.getvalue()


def test_compare_cli_json_on_saved_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(LIST_PAGE, encoding="utf-8")
    second.write_text(LIST_PAGE.replace("crumble", "tart"), encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["compare", str(first), str(second), "--mode", "full", "-o", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["verdict"] == "similar"
    stages = {stage["stage"]: stage for stage in report["stages"]}
    assert stages["layout"]["score"] == 1.0
    assert stages["text"]["score"] > 0.5
    assert stages["visual"]["verdict"] == "skipped"
    other = tmp_path / "c.html"
    other.write_text(TABLE_PAGE, encoding="utf-8")
    assert main(["compare", str(first), str(other)]) == 1
    printed = json.loads(capsys.readouterr().out)
    # compare asks looks-alike by default: the combined score of its stages judges.
    assert (printed["mode"], printed["question"], printed["stopped_at"]) == (
        "combined",
        "looks-alike",
        None,
    )
    assert printed["combined_score"] < QUESTIONS["looks-alike"].threshold
    assert printed["decided_by"]
    assert printed["stages"][0]["verdict"] == "dissimilar"
    assert main(["compare", str(first), str(other), "--mode", "cascade"]) == 1
    assert json.loads(capsys.readouterr().out)["stopped_at"] == "layout"


def _saved_article(head: str, absolute: str) -> str:
    return (
        f"<html><head>{head}<title>Story</title></head><body><div class='nav'>"
        "<a href='/news'>News</a> <a href='/sport'>Sport</a> <a href='/weather'>Weather</a>"
        f"<a href='{absolute}'>Partner</a></div><p>A story of the day.</p></body></html>"
    )


def test_compare_cli_takes_a_saved_files_url_from_the_page_or_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canonical = "<link rel='canonical' href='https://news.example/2017/story'>"
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(_saved_article(canonical, "https://partner.example/a"), encoding="utf-8")
    second.write_text(_saved_article("", "https://partner.example/b"), encoding="utf-8")

    def links_stage(*extra: str) -> dict[str, Any]:
        main(["compare", str(first), str(second), *extra])
        report = json.loads(capsys.readouterr().out)
        return next(stage for stage in report["stages"] if stage["stage"] == "links")

    # B states no URL: its relative links are unknown, so only the links both pages wrote
    # absolute are compared (not A's three site links against B's none).
    unresolved = links_stage()
    assert (unresolved["score"], unresolved["support"]) == (0.0, 2)
    assert "no http(s) URL known for page B" in unresolved["detail"]
    # Given B's URL, its relative links resolve and match A's, resolved on A's canonical URL.
    given = links_stage("--url-b", "https://news.example/2013/other")
    assert (given["score"], given["support"]) == (3 / 5, 5)
    assert given["detail"] == "5 links and predecessors"
    assert main(["compare", str(first), str(second), "--url-a", "news.example/x"]) == 2
    assert "--url-a must be an http(s) URL" in capsys.readouterr().err


def test_compare_cli_html_report_shows_both_screenshots(tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(LIST_PAGE, encoding="utf-8")
    second.write_text(LIST_PAGE, encoding="utf-8")
    (tmp_path / "a.png").write_bytes(_png((255, 255, 255)))
    (tmp_path / "b.png").write_bytes(_png((0, 0, 0), (30, 90)))
    out = tmp_path / "report.html"
    code = main(
        ["compare", str(first), str(second), "--format", "html", "-o", str(out), "--mode",
         "full", "--screenshot-a", str(tmp_path / "a.png"), "--screenshot-b",
         str(tmp_path / "b.png")]
    )  # fmt: skip
    assert code == 1  # the visual stage finds white and black pages dissimilar
    text = out.read_text(encoding="utf-8")
    assert text.count('src="data:image/png;base64,') == 2
    assert "<td>visual</td>" in text and "dissimilar" in text


def test_compare_cli_reports_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(tmp_path / "nope.html"), str(tmp_path / "nope2.html")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_similar_cli_finds_the_same_layout_pairs(tmp_path: Path) -> None:
    feed = tmp_path / "pages.jsonl"
    lines = []
    for number in range(6):
        html = LIST_PAGE if number % 2 else TABLE_PAGE
        lines.append(json.dumps({"url": f"http://s.test/{number}", "html": html}))
    feed.write_text("\n".join([*lines, "{broken"]) + "\n", encoding="utf-8")
    out = tmp_path / "pairs.json"
    same_kind = {
        (f"http://s.test/{i}", f"http://s.test/{j}")
        for i in range(6)
        for j in range(i + 1, 6)
        if i % 2 == j % 2
    }
    # By default pages are similar when they share links (the list pages link to /a and /b);
    # pages without links (the table pages) are judged by their stages, as in full mode.
    for options in ((), ("--mode", "cascade")):
        code = main(["similar", str(feed), "-o", str(out), "--no-progress", *options])
        assert code == 1  # {broken
        result = json.loads(out.read_text(encoding="utf-8"))
        assert result["pages"] == 6 and result["all_pairs"] == 15
        assert result["skipped_lines"] == {"invalid_json": 1}
        assert {(pair["url_1"], pair["url_2"]) for pair in result["pairs"]} == same_kind


def test_pipeline_is_disabled_without_an_output() -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(SimilarityPipeline, get_crawler(settings_dict={}))


@pytest.fixture
def pipeline_output(tmp_path: Path) -> Path:
    return tmp_path / "out" / "pairs.json"


def test_pipeline_writes_the_similar_pairs_at_close(pipeline_output: Path) -> object:
    crawler = get_crawler(
        settings_dict={
            "WEBSIM_SIMILARITY_OUTPUT": str(pipeline_output),
            "WEBSIM_ANALYSIS_WORKERS": 0,  # the items come without analysis: prepared here
        }
    )
    crawler.stats.open_spider()
    pipeline = build_from_crawler(SimilarityPipeline, crawler)
    items = [
        {"url": "http://s.test/1", "html": LIST_PAGE, "links": ["http://s.test/a"]},
        {"url": "http://s.test/2", "html": LIST_PAGE, "links": ["http://s.test/a"],
         "screenshot": base64.b64encode(_png((200, 200, 200))).decode()},
        {"url": "http://s.test/3", "html": TABLE_PAGE, "links": [], "screenshot": "%%%"},
        {"url": "http://s.test/4", "html": ""},
    ]  # fmt: skip
    for item in items:
        assert analysed(pipeline, item) is item

    def check(_result: object) -> None:
        result = json.loads(pipeline_output.read_text(encoding="utf-8"))
        assert result["pages"] == 4
        # 1 and 2 have the same tag shingles, keywords and links: one identical group, compared
        # once, and one group of similar pages
        assert result["identical_groups"] == [["http://s.test/1", "http://s.test/2"]]
        assert result["pairs"] == []
        assert result["groups"] == [{"size": 2, "pages": ["http://s.test/1", "http://s.test/2"]}]
        assert crawler.stats.get_value("websim/similarity/identical_groups") == 1
        assert crawler.stats.get_value("websim/similarity/problems/screenshot") == 1
        assert crawler.stats.get_value("websim/similarity/problems/html") == 1

    return deferred_from_coro(pipeline.close_spider()).addCallback(check)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def pages_server(tmp_path: Path) -> Iterator[str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text(LIST_PAGE, encoding="utf-8")
    (site / "b.html").write_text(LIST_PAGE.replace("crumble", "tart"), encoding="utf-8")
    (site / "robots.txt").write_text("", encoding="utf-8")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_compare_spider_end_to_end(pages_server: str, tmp_path: Path) -> None:
    out = tmp_path / "report.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "compare", "-a", f"url1={pages_server}/a.html",
         "-a", f"url2={pages_server}/b.html", "-a", "mode=full", "-O", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    reports = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(reports) == 1
    report = reports[0]
    assert report["kind"] == "comparison" and report["verdict"] == "similar"
    stages = {stage["stage"]: stage for stage in report["stages"]}
    assert stages["layout"]["score"] == 1.0
    assert stages["links"]["score"] == 1.0  # both link to /a and /b on the same host


@pytest.mark.slow
def test_compare_cli_render_takes_screenshots(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the render extra is not installed")
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(LIST_PAGE, encoding="utf-8")
    second.write_text(LIST_PAGE.replace("<body>", "<body style='background:#000'>"), "utf-8")
    out = tmp_path / "report.json"

    def visual_score(page_b: Path) -> float:
        # A subprocess: the Playwright sync API refuses to run inside pytest-twisted's loop.
        command = [sys.executable, "-m", "websim_crawler", "compare", str(first), str(page_b),
                   "--render", "--mode", "full", "-o", str(out)]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=180)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        stages = json.loads(out.read_text(encoding="utf-8"))["stages"]
        return float({s["stage"]: s for s in stages}["visual"]["score"])

    assert visual_score(second) < 0.8
