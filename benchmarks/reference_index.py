"""The reference index (``websim index`` / ``websim match``): right answers, recall, speed, memory.

Data (``../shared/datasets``, or ``$WEBSIM_DATASETS``; never copied into the repository):
article-extraction-benchmark (one page per host), big9 (9 news sites x 4 years x 10 pages) and
trafilatura-eval (pages of other sites), unpacked once into ``--cache-dir``.

1. Held-out labelled sets against one index (the article pages and big9's first five pages of
   each site and year): top-1 and top-5 per question of

   - ``imitations``: each article page imitated the way phishing kits do it
     (``tests/support/imitations.py``: another host, text as images, classes renamed, CSS
     inlined, wrappers, attributes shuffled, links elsewhere, a login form); right: the page;
   - ``copies``: each article page copied onto another host with small edits (a title prefix, a
     paragraph removed, a sign-in form); right: the page;
   - ``captures``: big9's other five pages of each site and year; right for same-site: a page of
     the same site; for the other questions: of the same site and year (one template);
   - ``other sites``: trafilatura-eval pages of hosts not in the index, which imitate nothing:
     the share whose best reference is judged ``similar`` (false positives at the threshold).

   Candidate recall on these sets: the share of queries whose best match scores as high as the
   exhaustive best (every reference compared by the exact stages; ties count).

2. Scale: indexes of ``--sizes`` references made by replicating the real pages with realistic
   edits (a later capture: title and some words changed, blocks removed, a banner added, link
   parameters changed; generated in memory, never written to the repository), each built,
   saved and then loaded in a fresh process that measures load time, resident memory and the
   query time of ``--queries`` imitations (after their own analysis), and the candidate recall
   of ``--scale-recall-queries`` of them against the exhaustive comparison.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/reference_index.py [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import gzip
import itertools
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.datasets import datasets_dir, trafilatura_pages  # noqa: E402
from support.imitations import imitate  # noqa: E402

from websim_crawler.core.reference_index import MatchParams, ReferenceIndex  # noqa: E402
from websim_crawler.core.similarity.comparison import PageFeatures, page_features  # noqa: E402
from websim_crawler.core.similarity.params import QUESTION_NAMES  # noqa: E402
from websim_crawler.core.similarity.portable import (  # noqa: E402
    features_from_dict,
    features_to_dict,
)

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "websim-index-bench"


@dataclass(frozen=True)
class Page:
    """A real page: its URL, HTML and label (its site, and year for big9)."""

    url: str
    html: bytes
    site: str
    year: int = 0


def load_articles(datasets: Path) -> list[Page]:
    folder = datasets / "article-extraction-benchmark"
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    pages: dict[str, Page] = {}
    for key in sorted(truth):
        url = truth[key]["url"]
        host = url.split("/")[2]
        if host not in pages:
            html = gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
            pages[host] = Page(url, html, host)
    return list(pages.values())


def load_big9(datasets: Path, cache: Path) -> list[Page]:
    target = cache / "big9"
    if not (target / "big5-17").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(datasets / "big9" / "big9.tar.xz") as archive:
            archive.extractall(target, filter="data")
    pages = []
    with (datasets / "big9" / "big9_site_labels.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            relative = row["html_file"].removeprefix("Extraction/")
            url = f"https://www.{row['site']}.com/{row['year']}/{Path(relative).stem}"
            pages.append(
                Page(
                    url.replace(" ", "-"),
                    (target / relative).read_bytes(),
                    row["site"],
                    int(row["year"]),
                )
            )
    return pages


def load_other_sites(cache: Path, exclude: set[str], limit: int) -> list[Page]:
    return [
        Page(url, html, url.split("/")[2]) for url, html in trafilatura_pages(cache, exclude, limit)
    ]


def small_copy(page: Page, seed: int) -> tuple[str, str]:
    """A copy on another host with small edits: a title prefix, a paragraph removed, a form."""
    rng = random.Random(seed)
    root = lxml.html.document_fromstring(page.html)
    title = root.find(".//title")
    if title is not None:
        title.text = "Secure login - " + (title.text or "")
    paragraphs = list(root.iter("p"))
    if paragraphs:
        victim = rng.choice(paragraphs)
        victim.getparent().remove(victim)
    body = root.find("body")
    if body is not None:
        body.insert(
            0,
            lxml.html.fragment_fromstring(
                '<form action="/verify" method="post"><input name="user">'
                '<input type="password" name="pass"><button>Sign in</button></form>'
            ),
        )
    path = "/" + page.url.split("/", 3)[-1]
    return lxml.html.tostring(root, encoding="unicode"), f"https://copy-{seed}.example{path}"


_WORDS = ("update", "today", "new", "report", "latest", "market", "local", "live", "video")


def later_capture(page: Page, seed: int) -> str:
    """A later capture of the page: title and words changed, blocks removed, a banner added,
    link parameters changed."""
    rng = random.Random(seed)
    root = lxml.html.document_fromstring(page.html)
    title = root.find(".//title")
    if title is not None:
        title.text = f"{rng.choice(_WORDS)} {seed}: " + (title.text or "")
    blocks = [
        e for e in root.iter("p", "li", "div", "section", "article") if e.getparent() is not None
    ]
    for victim in rng.sample(blocks, min(len(blocks), rng.randint(1, 4))):
        if victim.getparent() is not None:
            victim.getparent().remove(victim)
    texts = [e for e in root.iter("p", "h1", "h2", "h3", "a", "span") if e.text and e.text.strip()]
    for element in rng.sample(texts, min(len(texts), 12)):
        words = (element.text or "").split()
        if words:
            words[rng.randrange(len(words))] = rng.choice(_WORDS)
            element.text = " ".join(words)
    for anchor in root.iter("a"):
        href = anchor.get("href")
        if href and rng.random() < 0.3:
            anchor.set("href", f"{href}{'&' if '?' in href else '?'}ref={rng.randrange(1000)}")
    body = root.find("body")
    if body is not None:
        banner = lxml.etree.Element("div", {"class": f"banner banner-{rng.randrange(5)}"})
        banner.text = f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
        body.insert(0, banner)
    return lxml.html.tostring(root, encoding="unicode")


def features(html: str | bytes, url: str) -> PageFeatures:
    return page_features(html, url=url)


def keeps_exhaustive_best(index: ReferenceIndex, page: PageFeatures, question: str | None) -> bool:
    """Tell whether the candidate step kept the exhaustive best: its best match scores as high as
    the best of every reference compared by the exact stages. Ties count (the exhaustive order
    among references scoring alike is arbitrary), and a page sharing nothing with any reference
    (best score 0) needs no candidate."""
    best = index.exhaustive(page, question=question, top=1)[0].score or 0.0
    found = index.query(page, question=question, top=1)
    return ((found[0].score or 0.0) if found else 0.0) >= best - 1e-9


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if n == 0 else "---:" for n in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


# --- 1. held-out labelled sets -------------------------------------------------------------


def labelled_sets(datasets: Path, cache: Path, others: int, recall_queries: int) -> None:
    articles = load_articles(datasets)
    big9 = load_big9(datasets, cache)
    by_group: dict[tuple[str, int], list[Page]] = {}
    for page in big9:
        by_group.setdefault((page.site, page.year), []).append(page)
    indexed_big9, held_big9 = [], []
    for group in by_group.values():
        indexed_big9 += group[:5]
        held_big9 += group[5:]
    references = articles + indexed_big9
    started = time.perf_counter()
    index = ReferenceIndex()
    for page in references:
        index.add(features(page.html, page.url))
    build = time.perf_counter() - started
    label = {page.url: page for page in references}
    print(
        f"index: {len(index)} references ({len(articles)} article pages of as many hosts, "
        f"{len(indexed_big9)} big9 pages), skipped {index.skipped or 'none'}; built in "
        f"{build:.1f} s\n"
    )
    exclude = {p.site for p in articles} | {f"{p.site}.com" for p in big9}
    other_pages = load_other_sites(cache, exclude, others)
    queries: dict[str, list[tuple[PageFeatures, Page]]] = {
        "imitations": [],
        "copies": [],
        "captures": [],
        "other sites": [],
    }
    for seed, page in enumerate(articles):
        copy = imitate(page.html, page.url, seed)
        queries["imitations"].append((features(copy.html, copy.url), page))
        html, url = small_copy(page, seed)
        queries["copies"].append((features(html, url), page))
    for page in held_big9:
        queries["captures"].append((features(page.html, page.url), page))
    for page in other_pages:
        queries["other sites"].append((features(page.html, page.url), page))

    def right(question: str, query: Page, reference: Page, set_name: str) -> bool:
        if set_name in ("imitations", "copies"):
            return reference.url == query.url
        if question == "same-site":
            return reference.site == query.site
        return (reference.site, reference.year) == (query.site, query.year)

    rows = []
    recall_rows = []
    for question in QUESTION_NAMES:
        for set_name, pairs in queries.items():
            top1 = top5 = similar = kept = 0
            # Recall where the question has a right answer to keep (imitations share no link
            # with their page by construction; other sites have none).
            measured = (question == "looks-alike" and set_name != "other sites") or (
                question == "same-site" and set_name in ("copies", "captures")
            )
            if question == "same-content" and set_name == "captures":
                rows.append([question, set_name, len(pairs), "n/a", "n/a", "n/a (other articles)"])
                continue
            # Recall queries spread over the whole set (its pages come grouped by site).
            spread = np.linspace(0, len(pairs) - 1, min(len(pairs), recall_queries), dtype=int)
            checked = set(spread.tolist())
            for position, (query, page) in enumerate(pairs):
                matches = index.query(query, question=question, top=5)
                if set_name == "other sites":
                    similar += bool(matches) and matches[0].verdict == "similar"
                    continue
                hits = [right(question, page, label[m.url], set_name) for m in matches]
                top1 += bool(hits) and hits[0]
                top5 += any(hits)
                similar += bool(matches) and hits[0] and matches[0].verdict == "similar"
                if measured and position in checked:
                    kept += keeps_exhaustive_best(index, query, question)
            count = len(pairs)
            if set_name == "other sites":
                rows.append(
                    [question, set_name, count, "", "", f"{similar / count:.3f} (false positives)"]
                )
                continue
            rows.append(
                [
                    question,
                    set_name,
                    count,
                    f"{top1 / count:.3f}",
                    f"{top5 / count:.3f}",
                    f"{similar / count:.3f}",
                ]
            )
            if measured and checked:
                recall_rows.append([question, set_name, len(checked), f"{kept / len(checked):.3f}"])
    print(
        "Top-1 and top-5 per question (right reference first / among the first five; "
        "similar: the right first reference is also judged similar at the threshold):\n"
    )
    print_table(["question", "set", "queries", "top-1", "top-5", "similar at threshold"], rows)
    print("Candidate recall (the best match scores as high as the exhaustive best; ties count):\n")
    print_table(["question", "set", "queries", "recall"], recall_rows)


# --- 2. scale ------------------------------------------------------------------------------


_BASES: list[Page] = []


def _capture_features(job: tuple[int, int]) -> tuple[str, int, dict[str, Any]]:
    """In a build worker: the features of a base page (variant 0) or of a later capture of it."""
    number, variant = job
    base = _BASES[number]
    url = base.url if variant == 0 else f"{base.url}#capture-{variant}"
    html = base.html if variant == 0 else later_capture(base, variant * 7919 + number)
    return url, number, features_to_dict(features(html, url))


def scale(
    datasets: Path,
    cache: Path,
    sizes: list[int],
    queries: int,
    recall_queries: int,
    seed: int,
    build_workers: int,
) -> None:
    global _BASES
    bases = load_articles(datasets) + load_big9(datasets, cache)
    bases += load_other_sites(cache, set(), 400)
    _BASES = bases  # read by the build's forked workers
    rng = random.Random(seed)
    rows = []
    for size in sizes:
        index = ReferenceIndex()
        base_of: dict[str, int] = {}
        started = time.perf_counter()
        captures = (
            (number, variant) for variant in itertools.count() for number in range(len(bases))
        )
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(build_workers, mp_context=context) as pool:
            while len(index) < size:  # pages whose features fail are skipped: ask for more
                wanted = list(itertools.islice(captures, size - len(index)))
                for url, number, data in pool.map(_capture_features, wanted, chunksize=32):
                    if index.add(features_from_dict(data)) is None:
                        base_of[url] = number
        build = time.perf_counter() - started
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "refs.idx"
            index.save(path)
            file_bytes = path.stat().st_size
            indexed = sorted(set(base_of.values()))
            chosen = rng.sample(indexed, min(queries, len(indexed)))
            query_file = Path(folder) / "queries.jsonl"
            with query_file.open("wb") as handle:
                for number in chosen:
                    copy = imitate(bases[number].html, bases[number].url, seed + number)
                    data = features_to_dict(features(copy.html, copy.url))
                    handle.write(orjson.dumps({"base": number, "features": data}) + b"\n")
            (Path(folder) / "bases.json").write_bytes(orjson.dumps(base_of))
            measured = json.loads(
                subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--measure",
                        folder,
                        "--recall-queries",
                        str(recall_queries),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=dict(os.environ, PYTHONPATH=str(ROOT)),
                ).stdout
            )
        del index
        rows.append(
            [
                f"{size:,}",
                f"{build / size * 1000:.0f}",
                f"{file_bytes / size / 1024:.1f}",
                f"{measured['load_seconds']:.2f}",
                f"{measured['rss_after_load'] / size / 1024:.1f}",
                f"{measured['rss_after_queries'] / size / 1024:.1f}",
                f"{measured['query_ms_median']:.1f}",
                f"{measured['query_ms_p95']:.1f}",
                f"{measured['candidate_ms_median']:.2f}",
                f"{measured['top1_base']:.3f}",
                f"{measured['recall']:.3f} ({measured['recall_queries']})"
                if measured["recall_queries"]
                else "not measured",
            ]
        )
        print_table(SCALE_HEADER, rows)  # after each size: a long run shows its progress
    print("Final:\n")
    print_table(SCALE_HEADER, rows)


SCALE_HEADER = [
    "references",
    "build ms/ref",
    "file KB/ref",
    "load s",
    "RSS after load KB/ref",
    "RSS after queries KB/ref",
    "query ms median",
    "query ms p95",
    "candidate step ms",
    "top-1 (its page or a capture of it)",
    "candidate recall (queries)",
]


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(folder: Path, recall_queries: int) -> None:
    """In a fresh process: load the index, time the queries, measure memory and recall."""
    loaded = [orjson.loads(line) for line in (folder / "queries.jsonl").read_bytes().splitlines()]
    base_of = orjson.loads((folder / "bases.json").read_bytes())
    pages = [(entry["base"], features_from_dict(entry["features"])) for entry in loaded]
    import faiss  # noqa: F401  (imported before the baseline: its code is not the index's memory)

    before = rss_bytes()
    started = time.perf_counter()
    index = ReferenceIndex.load(folder / "refs.idx", match=MatchParams())
    load_seconds = time.perf_counter() - started
    after_load = rss_bytes() - before
    times, candidate_times, right = [], [], 0
    params = index.asked(None)
    for base, page in pages:
        started = time.perf_counter()
        index.candidates(page, params)
        candidate_times.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        matches = index.query(page)
        times.append((time.perf_counter() - started) * 1000)
        right += bool(matches) and base_of.get(matches[0].url) == base
    after_queries = rss_bytes() - before
    kept = 0
    for _base, page in pages[:recall_queries]:
        kept += keeps_exhaustive_best(index, page, None)
    times.sort()
    print(
        json.dumps(
            {
                "load_seconds": load_seconds,
                "rss_after_load": after_load,
                "rss_after_queries": after_queries,
                "query_ms_median": statistics.median(times),
                "query_ms_p95": times[int(0.95 * (len(times) - 1))],
                "candidate_ms_median": statistics.median(candidate_times),
                "top1_base": right / len(pages),
                "recall": kept / max(1, min(recall_queries, len(pages))),
                "recall_queries": min(recall_queries, len(pages)),
            }
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--sizes", default="1000,10000", help="index sizes of the scale table")
    parser.add_argument("--queries", type=int, default=100, help="imitation queries per size")
    parser.add_argument(
        "--recall-queries",
        type=int,
        default=60,
        help="queries per set compared exhaustively (spread over the set)",
    )
    parser.add_argument(
        "--scale-recall-queries",
        type=int,
        default=5,
        help="queries per index size compared with every reference (10,000 comparisons each)",
    )
    parser.add_argument("--others", type=int, default=150, help="pages of other sites")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--build-workers",
        type=int,
        default=os.cpu_count() or 1,
        help="processes computing the replicated references' features (build ms/ref is wall "
        "time divided by the references)",
    )
    parser.add_argument("--skip-sets", action="store_true", help="only the scale table")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(args.measure, args.recall_queries)
        return 0
    datasets = datasets_dir()
    if datasets is None:
        print("datasets not found: set WEBSIM_DATASETS", file=sys.stderr)
        return 1
    if not args.skip_sets:
        labelled_sets(datasets, args.cache_dir, args.others, args.recall_queries)
    sizes = [int(size) for size in args.sizes.split(",") if size]
    scale(
        datasets,
        args.cache_dir,
        sizes,
        args.queries,
        args.scale_recall_queries,
        args.seed,
        args.build_workers,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
