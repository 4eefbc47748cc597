"""Where the shared real-page datasets are: ``$WEBSIM_DATASETS``, else ``../shared/datasets``
beside the checkout, else beside the worktrees' parent (``/work/shared`` for ``/work/wt/NAME``)."""

from __future__ import annotations

import gzip
import json
import os
import tarfile
from pathlib import Path
from typing import Any

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


def trafilatura_eval(cache: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """Return trafilatura-eval's pages as (URL, file, annotations), the archive unpacked once
    into ``cache`` (empty when the dataset is absent)."""
    folder = datasets_dir()
    archive_path = folder / "trafilatura-eval" / "trafilatura-eval.tar.xz" if folder else None
    if archive_path is None or not archive_path.is_file():
        return []
    root = cache / "tests"
    if not (root / "evaldata.json").exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive_path) as archive:
            archive.extractall(cache, filter="data")
    items = json.loads((root / "evaldata.json").read_text(encoding="utf-8"))
    files = []
    for url, item in items.items():
        path = root / "cache" / item["file"]
        files.append((url, path if path.is_file() else root / "eval" / item["file"], item))
    return files


def trafilatura_pages(cache: Path, exclude: set[str], limit: int) -> list[tuple[str, bytes]]:
    """Return up to ``limit`` pages of trafilatura-eval, one per host, hosts (or sites: the host
    without ``www.``, or a site's subdomains) in ``exclude`` left out, with their URLs."""
    pages: dict[str, tuple[str, bytes]] = {}
    for url, path, _item in trafilatura_eval(cache):
        host = url.split("/")[2]
        site = host.removeprefix("www.")
        if host in exclude or site in exclude or any(site.startswith(f"{s}.") for s in exclude):
            continue
        if host not in pages and path.is_file():
            pages[host] = (url, path.read_bytes())
        if len(pages) == limit:
            break
    return list(pages.values())
