"""MkDocs hooks: the docs site also shows the README, the benchmark results and the changelog.

The pages of ``docs/`` link to ``../README.md`` and ``../benchmarks/RESULTS.md`` (links that work
when the repository is browsed); the site carries both as pages, with their links to ``docs/``
turned into links between the site's pages, so ``mkdocs build --strict`` finds every target.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent
# repository file -> the page it becomes on the site
OUTSIDE_PAGES = {
    "README.md": "readme.md",
    "benchmarks/RESULTS.md": "results.md",
    "CHANGELOG.md": "changelog.md",
}
_LINK = re.compile(r"\]\((?:\.\./)?(README\.md|benchmarks/RESULTS\.md|CHANGELOG\.md)")


def on_files(files: Files, config: Any) -> Files:
    """Add the README and the results as pages of the site."""
    for source, page in OUTSIDE_PAGES.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        text = re.sub(r"\]\((?:\.\./)?docs/", "](", text)  # their links into docs/
        text = _LINK.sub(lambda match: "](" + OUTSIDE_PAGES[match.group(1)], text)
        files.append(File.generated(config, page, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point the pages' links to the README and results at their pages on the site."""
    return _LINK.sub(lambda match: "](" + OUTSIDE_PAGES[match.group(1)], markdown)
