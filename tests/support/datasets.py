"""Where the shared real-page datasets are: ``$WEBSIM_DATASETS``, else ``../shared/datasets``
beside the checkout, else beside the worktrees' parent (``/work/shared`` for ``/work/wt/NAME``)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def datasets_dir() -> Path | None:
    """Return the datasets folder, or ``None`` when it is not on this machine."""
    given = os.environ.get("WEBSIM_DATASETS")
    candidates = [Path(given)] if given else []
    candidates += [ROOT.parent / "shared" / "datasets", ROOT.parent.parent / "shared" / "datasets"]
    return next((path for path in candidates if path.is_dir()), None)


def article_pages(limit: int) -> list[tuple[str, bytes]]:
    """Return up to ``limit`` pages of article-extraction-benchmark, one per host, with their
    URLs (empty when the dataset is absent)."""
    folder = datasets_dir()
    articles = folder / "article-extraction-benchmark" if folder else None
    if articles is None or not articles.is_dir():
        return []
    truth = json.loads((articles / "ground-truth.json").read_text(encoding="utf-8"))
    pages: dict[str, tuple[str, bytes]] = {}
    for key in sorted(truth):
        url = truth[key]["url"]
        host = url.split("/")[2]
        path = articles / "html" / f"{key}.html.gz"
        if host not in pages and path.is_file():
            pages[host] = (url, gzip.decompress(path.read_bytes()))
        if len(pages) == limit:
            break
    return list(pages.values())
