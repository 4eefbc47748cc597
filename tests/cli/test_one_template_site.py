"""Pages of one template answer same-template alike two by two and as a collection: the pages of
a documentation site built by MkDocs's theme (this project's docs), whose template is nearly all
chrome and whose pages differ by a few content classes (a code block's language)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from websim_crawler.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (extra: gallery)"
)


@pytest.fixture(scope="module")
def docs_pages(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return sorted(site.glob("*/index.html"))


def test_two_pages_of_the_theme_share_a_template(
    docs_pages: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_name = {page.parent.name: page for page in docs_pages}
    plain, with_code = by_name["crawling"], by_name["readme"]  # code blocks in three languages
    code = main(
        ["compare", str(plain), str(with_code), "--question", "same-template", "-o", "/dev/null"]
    )
    reason = capsys.readouterr().err
    assert code == 0, reason
    assert "question same-template: similar, template classes" in reason
    report = tmp_path / "report.html"
    arguments = ["compare", str(plain), str(with_code), "--question", "same-template"]
    assert main([*arguments, "--format", "html", "-o", str(report)]) == 0
    decided = report.read_text(encoding="utf-8").split("<p class='decided'>")[1].split("</p>")[0]
    assert decided.startswith("Decided by: template_classes ")
    assert "(threshold 0.8)" in decided  # the class names' threshold, not the stages'


@pytest.mark.slow
def test_the_collection_and_every_pair_agree_on_one_template(
    docs_pages: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(docs_pages) >= 10  # a collection: its chrome is counted
    out = tmp_path / "groups.json"
    assert main(["similar", *map(str, docs_pages), "-o", str(out), "--no-progress"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["question"] == "same-template"
    assert len(report["groups"]) == 1 and report["ungrouped"] == 0
    assert len(report["groups"][0]["pages"]) == len(docs_pages)
    for first, second in itertools.islice(itertools.combinations(docs_pages, 2), 0, None, 7):
        arguments = ["compare", str(first), str(second), "--question", "same-template"]
        assert main([*arguments, "-o", "/dev/null"]) == 0, capsys.readouterr().err
