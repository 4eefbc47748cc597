"""``websim extract``: analyse pages (files, folders or URLs) and write JSON Lines."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from tqdm import tqdm

from websim_crawler.cli._settings import add_settings_option, settings_from_pairs
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_writer
from websim_crawler.errors import PageError
from websim_crawler.pool import AnalysisPool, PageOutcome

PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
FETCH_TIMEOUT_SECONDS = 30


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``extract`` subcommand."""
    parser = subparsers.add_parser(
        "extract",
        help="analyse pages and write their main text, keywords and chunks as JSON Lines",
        description="Analyse HTML files, folders of them or http(s) URLs; one JSON object per "
        "page per line (url, title, language, main_text, keywords, chunks).",
    )
    parser.add_argument("sources", nargs="+", metavar="PATH_OR_URL")
    parser.add_argument("-o", "--output", help="JSON Lines file to write (default: stdout)")
    parser.add_argument(
        "--chunks",
        choices=("full", "main", "none"),
        default="full",
        help="which chunks to write (default: full)",
    )
    parser.add_argument("--language", help="ISO 639-1 language of the pages (default: detect)")
    parser.add_argument(
        "--workers",
        type=int,
        help="worker processes (default: WEBSIM_ANALYSIS_WORKERS, the usable CPUs; 0: this one)",
    )
    add_settings_option(parser, "WEBSIM_HYPERLINK_THRESHOLD=0.4")
    parser.set_defaults(func=run)


def iter_sources(sources: list[str]) -> Iterator[str]:
    """Expand folders into their page files; keep files and URLs as they are."""
    for source in sources:
        path = Path(source)
        if source.startswith(("http://", "https://")) or not path.is_dir():
            yield source
            continue
        for child in sorted(path.rglob("*")):
            if child.is_file() and child.name.lower().endswith(PAGE_SUFFIXES):
                yield str(child)


def load_source(source: str) -> tuple[bytes, str | None, str]:
    """Return (page bytes, content type, url) of a file or an http(s) URL."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"User-Agent": "websim-crawler"})
        try:
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:
                return response.read(), response.headers.get("Content-Type"), response.geturl()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise PageError("unreachable", f"cannot fetch {source}: {exc}") from exc
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PageError("unreadable", f"cannot read {source}: {exc.strerror or exc}") from exc
    if path.name.lower().endswith(".gz"):
        import gzip

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise PageError("unreadable", f"cannot decompress {source}: {exc}") from exc
    return data, None, path.resolve().as_uri()


def _pages(
    sources: list[str], language: str | None
) -> Iterator[tuple[bytes, str | None, str | None, str | None] | PageOutcome]:
    """Read each source; one that cannot be read is an outcome with its reason."""
    for source in sources:
        try:
            data, content_type, url = load_source(source)
        except PageError as exc:
            yield PageOutcome(dropped=exc.reason, message=str(exc))
        else:
            yield data, url, content_type, language


def run(args: argparse.Namespace) -> int:
    """Analyse every source; return 0 when all pages were analysed, 1 when some failed."""
    settings = settings_from_pairs(args.set)
    if args.workers is not None:
        settings["WEBSIM_ANALYSIS_WORKERS"] = str(args.workers)
    config = WebsimConfig.from_settings(settings)
    failures: Counter[str] = Counter()
    sources = list(iter_sources(args.sources))
    workers = min(config.pool.worker_count(), len(sources))  # no idle workers for a few pages
    pool = AnalysisPool(config.analysis, replace(config.pool, workers=workers), args.chunks)
    with (
        atomic_writer(args.output) if args.output else contextlib.nullcontext(sys.stdout) as output,
        contextlib.closing(pool),
    ):
        outcomes = pool.map(_pages(sources, args.language))
        progress = tqdm(outcomes, len(sources), unit="page", disable=None if sources[1:] else True)
        for source, outcome in zip(sources, progress, strict=True):
            record = outcome.record
            if record is None:
                reason = outcome.dropped or outcome.failed or "unknown"
                failures[reason] += 1
                record = {"url": source, "error": reason, "message": outcome.message}
            output.write(json.dumps(record, ensure_ascii=False) + "\n")
    if failures:
        summary = ", ".join(f"{count} {reason}" for reason, count in sorted(failures.items()))
        print(
            f"websim extract: {sum(failures.values())} of {len(sources)} pages failed ({summary})",
            file=sys.stderr,
        )
        return 1
    return 0
