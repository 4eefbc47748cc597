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
from pathlib import Path
from typing import Any

from tqdm import tqdm

from websim_crawler.cli._settings import add_settings_option, settings_from_pairs
from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_writer
from websim_crawler.core.page import analyse_page, new_template_memory
from websim_crawler.errors import PageError

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


def run(args: argparse.Namespace) -> int:
    """Analyse every source; return 0 when all pages were analysed, 1 when some failed."""
    config = WebsimConfig.from_settings(settings_from_pairs(args.set))
    memory = new_template_memory(config.analysis)
    failures: Counter[str] = Counter()
    sources = list(iter_sources(args.sources))
    with (
        atomic_writer(args.output) if args.output else contextlib.nullcontext(sys.stdout)
    ) as output:
        for source in tqdm(sources, unit="page", disable=None if len(sources) > 1 else True):
            record: dict[str, Any]
            try:
                data, content_type, url = load_source(source)
                analysis = analyse_page(
                    data,
                    url,
                    params=config.analysis,
                    content_type=content_type,
                    language=args.language,
                    site_memory=memory,
                )
            except PageError as exc:
                failures[exc.reason] += 1
                record = {"url": source, "error": exc.reason, "message": str(exc)}
            else:
                record = analysis.to_dict()
                if args.chunks == "none":
                    del record["chunks"]
                elif args.chunks == "main":
                    record["chunks"] = [c for c in record["chunks"] if c["is_main"]]
            output.write(json.dumps(record, ensure_ascii=False) + "\n")
    if failures:
        summary = ", ".join(f"{count} {reason}" for reason, count in sorted(failures.items()))
        print(
            f"websim extract: {sum(failures.values())} of {len(sources)} pages failed ({summary})",
            file=sys.stderr,
        )
        return 1
    return 0
