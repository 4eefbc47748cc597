"""Reading web archives: pages/s of FastWARC alone, of websim's reader, of FastWARC with
resiliparse's extraction, of trafilatura over warcio, and of ``websim extract`` on one WARC.

The WARC holds real pages of ``../shared/datasets`` (the article-extraction-benchmark's 181
pages with their ground truth, then Dragnet's and CleanEval's inputs up to ``--pages``), written
with warcio's writer into a temporary folder (removed at the end, never in the repository), one
gzip member per record as crawlers write. Quality is the article-extraction-benchmark's F1
(``extraction.article_scores``) on its 181 pages. Times are CPU seconds of one process (the
machine is shared; ``websim extract`` runs with ``--workers 0`` so its CPU time is its own);
ratios are measured in one run::

    .venv/bin/python benchmarks/warc.py [--pages 2000]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import extraction

ROOT = Path(__file__).resolve().parents[1]


def datasets_folder() -> Path:
    """Return ``../shared/datasets`` (from a worktree too: ``$WEBSIM_DATASETS``, /work/shared)."""
    for candidate in (
        os.environ.get("WEBSIM_DATASETS"),
        ROOT / ".." / "shared" / "datasets",
        ROOT / ".." / ".." / "shared" / "datasets",
    ):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise SystemExit("no ../shared/datasets: set WEBSIM_DATASETS to its folder")


def real_pages(datasets: Path, count: int) -> Iterator[tuple[str, bytes, str | None]]:
    """Yield ``(url, html, ground truth or None)``: the benchmark's pages, then others."""
    extraction.AEB_DIR = datasets / "article-extraction-benchmark"
    given = 0
    for page in extraction.load_article_benchmark(None):
        yield f"http://aeb.example/{page.key}", page.data, page.truth
        given += 1
    for name in ("dragnet_data", "cleaneval-final", "cleaneval-dev"):
        with tarfile.open(datasets / "html-cleaning" / f"{name}.tar.xz") as tar:
            for member in tar:
                if given >= count:
                    return
                if not (member.isfile() and "/input/" in member.name):
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                yield f"http://{name}.example/{Path(member.name).name}", handle.read(), None
                given += 1


def write_warc(path: Path, pages: Iterator[tuple[str, bytes, str | None]]) -> dict[str, str]:
    """Write each page as a 200 text/html response; return the ground truth by URL."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    truth = {}
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, html, answer in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], "HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(html), http_headers=headers
            )
            writer.write_record(record)
            if answer is not None:
                truth[url] = answer
    return truth


def cpu_seconds(work: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``work`` and return (CPU seconds of this process, its result)."""
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


def fastwarc_alone(path: Path) -> int:
    """FastWARC's own loop: every response record's payload read."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    pages = 0
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, record_types=WarcRecordType.response):
            record.reader.read()
            pages += 1
    return pages


def websim_reader(path: Path, engine: str) -> int:
    """websim's reader: the pages with every check and count."""
    from websim_crawler.core.archive.reading import ArchiveReport, iter_archive_pages

    report = ArchiveReport()
    pages = iter_archive_pages(str(path), report, max_page_bytes=32_000_000, engine=engine)
    return sum(1 for _page in pages)


def fastwarc_resiliparse(path: Path) -> dict[str, str]:
    """FastWARC with resiliparse's main-content extraction (``html2text``)."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import detect_encoding
    from resiliparse.parse.html import HTMLTree

    texts = {}
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, record_types=WarcRecordType.response):
            body = record.reader.read()
            tree = HTMLTree.parse_from_bytes(body, detect_encoding(body))
            texts[record.headers.get("WARC-Target-URI")] = extract_plain_text(
                tree, main_content=True
            )
    return texts


def trafilatura_warcio(path: Path) -> dict[str, str]:
    """trafilatura over warcio's records (its evaluation settings)."""
    from trafilatura_folder import trafilatura_extract
    from warcio.archiveiterator import ArchiveIterator

    texts = {}
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response":
                body = record.content_stream().read()
                texts[record.rec_headers.get_header("WARC-Target-URI")] = trafilatura_extract(body)
    return texts


def websim_extract(path: Path, output: Path) -> tuple[float, dict[str, str]]:
    """``websim extract`` in a process of its own: (its CPU seconds, main text by URL)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "websim_crawler", "extract", str(path), "-o", str(output),
         "--workers", "0", "--chunks", "none", "--no-progress"],
        check=False, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    texts = {}
    with output.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            texts[record["url"]] = record.get("main_text") or ""
    return cpu, texts


def reading_share(path: Path) -> float:
    """Profile ``websim extract``'s work in this process: the share of its time spent reading
    the archive (iterating records, decoding payloads) rather than analysing pages."""
    from websim_crawler.cli import main

    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as folder:
        profile.runcall(
            main,
            ["extract", str(path), "-o", f"{folder}/out.jsonl", "--workers", "0",
             "--chunks", "none", "--no-progress"],
        )  # fmt: skip
    stats = pstats.Stats(profile)
    total = stats.total_tt  # type: ignore[attr-defined]
    reading = 0.0
    for (filename, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
        if filename.endswith("core/warc.py") and function == "iter_archive_pages":
            reading = max(reading, row[3])  # cumulative time of the reading generator
    return reading / total if total else 0.0


def quality(texts: dict[str, str], truth: dict[str, str]) -> float:
    pairs = [(answer, texts.get(url, "")) for url, answer in truth.items()]
    return extraction.article_scores(pairs)[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()
    datasets = datasets_folder()
    with tempfile.TemporaryDirectory(prefix="websim-warc-bench-") as folder:
        path = Path(folder) / "pages.warc.gz"
        truth = write_warc(path, real_pages(datasets, args.pages))
        fast_cpu, pages = cpu_seconds(lambda: fastwarc_alone(path))
        print(f"WARC of {pages} real pages, {path.stat().st_size / 1e6:.1f} MB gzip; "
              f"{len(truth)} with ground truth")  # fmt: skip
        rows = [("FastWARC alone (read every payload)", fast_cpu, None)]
        reader_cpu, reader_pages = cpu_seconds(lambda: websim_reader(path, "fastwarc"))
        assert reader_pages == pages, (reader_pages, pages)
        rows.append(("websim reader (FastWARC)", reader_cpu, None))
        warcio_cpu, _pages = cpu_seconds(lambda: websim_reader(path, "warcio"))
        rows.append(("websim reader (warcio)", warcio_cpu, None))
        try:
            resiliparse_cpu, texts = cpu_seconds(lambda: fastwarc_resiliparse(path))
            rows.append(
                ("FastWARC + resiliparse html2text", resiliparse_cpu, quality(texts, truth))
            )
        except ImportError:
            print("resiliparse is not installed: pip install resiliparse")
        trafilatura_cpu, texts = cpu_seconds(lambda: trafilatura_warcio(path))
        rows.append(("warcio + trafilatura", trafilatura_cpu, quality(texts, truth)))
        extract_cpu, texts = websim_extract(path, Path(folder) / "out.jsonl")
        rows.append(("websim extract (--workers 0)", extract_cpu, quality(texts, truth)))
        share = reading_share(path)
    print(f"\n| reader | CPU s | pages/s | F1 ({len(truth)} pages with truth) |")
    print("|---|---|---|---|")
    for name, cpu, f1 in rows:
        score = "" if f1 is None else f"{f1:.3f}"
        print(f"| {name} | {cpu:.2f} | {pages / cpu:,.0f} | {score} |")
    print(f"\nwebsim reader / FastWARC alone: {reader_cpu / fast_cpu:.2f}x the CPU time")
    print(f"reading share of websim extract's profile: {share:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
