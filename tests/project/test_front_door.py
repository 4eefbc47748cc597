"""The front door: a library user imports from ``websim_crawler`` itself.

The README and every page of the docs import only names of ``websim_crawler.__all__``; importing
the package loads none of them (they come on first use); each exported name says what it takes
and what it returns.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import websim_crawler

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
ANY_IMPORT = re.compile(r"\b(?:from|import)\s+(websim_crawler[\w.]*)")


def documented_imports(text: str) -> list[tuple[str, str]]:
    """Return (module, name) of every import of the package in the Python blocks of ``text``;
    a plain ``import websim_crawler.x`` gives (module, "")."""
    found: list[tuple[str, str]] = []
    for block in PYTHON_BLOCK.findall(text):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "websim_crawler"
            ):
                found += [(node.module or "", alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [
                    (alias.name, "")
                    for alias in node.names
                    if alias.name.startswith("websim_crawler")
                ]
    return found


def wrong_imports(text: str) -> list[str]:
    """Return the imports of ``text`` that do not take a name of ``websim_crawler.__all__``
    from ``websim_crawler`` itself (in Python blocks, and anywhere else in the text)."""
    wrong = [
        f"{module}.{name}" if name else module
        for module, name in documented_imports(text)
        if module != "websim_crawler" or name not in websim_crawler.__all__
    ]
    wrong += [module for module in ANY_IMPORT.findall(text) if module != "websim_crawler"]
    return wrong


def test_the_check_catches_a_deep_import_and_a_name_not_exported() -> None:
    deep = "```python\nfrom websim_crawler.core.page import analyse_page\n```\n"
    hidden = "```python\nfrom websim_crawler import keyword_forms\n```\n"
    prose = "call `from websim_crawler.core.similarity import page_features` first"
    assert wrong_imports(deep) == [
        "websim_crawler.core.page.analyse_page",
        "websim_crawler.core.page",
    ]
    assert wrong_imports(hidden) == ["websim_crawler.keyword_forms"]
    assert wrong_imports(prose) == ["websim_crawler.core.similarity"]
    assert wrong_imports("```python\nfrom websim_crawler import analyse_page\n```\n") == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_the_docs_import_only_from_the_front_door(document: Path) -> None:
    assert wrong_imports(document.read_text(encoding="utf-8")) == []


def test_the_readme_and_docs_teach_the_front_door() -> None:
    taught = {
        name
        for document in DOCUMENTS
        for _, name in documented_imports(document.read_text(encoding="utf-8"))
    }
    assert {"analyse_page", "ReferenceIndex", "page_features", "StageCombiner"} <= taught


def test_every_exported_name_is_there_and_says_what_it_takes_and_returns() -> None:
    assert websim_crawler.__all__ == sorted(set(websim_crawler.__all__))
    unclear = []
    for name in websim_crawler.__all__:
        exported = getattr(websim_crawler, name)
        if inspect.isfunction(exported) or name in SAY_THEIR_TYPES:
            doc = (inspect.getdoc(exported) or "").lower()
            if "takes" not in doc or not re.search(r"\b(returns?|yields?)\b", doc):
                unclear.append(name)
    assert unclear == []


# The classes a user feeds (the functions are checked all): each says what it takes and gives.
SAY_THEIR_TYPES = {
    "DocumentCollector",
    "InputReader",
    "NearDuplicateFinder",
    "QueryPlanner",
    "ReferenceIndex",
    "StageCombiner",
    "WebsimAddon",
}


def test_importing_the_package_loads_none_of_its_rooms() -> None:
    script = (
        "import sys, websim_crawler\n"
        "print(sorted(m for m in sys.modules if m.startswith('websim_crawler')))\n"
        "print(websim_crawler.__version__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded, version = result.stdout.splitlines()
    assert loaded == "['websim_crawler']"
    assert version == websim_crawler.__version__


def test_a_front_door_name_is_the_object_of_its_room() -> None:
    from websim_crawler.core.page import analyse_page
    from websim_crawler.core.reference_index import ReferenceIndex

    assert websim_crawler.analyse_page is analyse_page
    assert websim_crawler.ReferenceIndex is ReferenceIndex
    assert set(dir(websim_crawler)) >= set(websim_crawler.__all__)


def test_read_pages_reads_a_folder_a_feed_and_a_page_by_content(tmp_path: Path) -> None:
    page = tmp_path / "saved.txt"  # told by content, not by name
    page.write_text("<html><body><p>One saved page</p></body></html>", encoding="utf-8")
    feed = tmp_path / "feed.data"
    feed.write_text('{"url": "https://example.org/f", "html": "<p>fed</p>"}\n', encoding="utf-8")
    site = ROOT / "tests" / "support" / "site"
    records = list(websim_crawler.read_pages([str(site), str(page), str(feed)]))
    pages_in_site = [path for path in site.rglob("*") if path.suffix == ".html"]
    assert len(records) == len(pages_in_site) + 2
    assert all(isinstance(record["url"], str) and record["html"] for record in records)
    assert records[-1]["url"] == "https://example.org/f"
    [alone] = websim_crawler.read_pages(str(page))  # bytes: no header declared a charset
    assert alone["html"] == page.read_bytes()
    analysis = websim_crawler.analyse_page(alone["html"], alone["url"])
    assert analysis.main_text == "One saved page"
