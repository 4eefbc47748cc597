"""Page similarity: layout speed against html-similarity 0.5.0, EMD time, same-site separation.

Data: ``../shared/datasets/big9`` (9 news sites x 4 years x 10 pages; unpacked once into
``--cache-dir``, never copied into the repository). Positive pairs are pages of the same site
captured in different years, negative pairs are pages of different sites captured in different
years (a second table does the same within a year); a seeded sample of each
is scored by every stage and by the combination (``compare_pages`` in full mode), and the
separation is reported as ROC AUC and the best F1 over all thresholds. Each page gets a URL on
its site (``http://www.<site>.com/...``), as a crawl would, so relative links resolve.

Speed: layout pairs per second (CPU time of the measuring process) on the same sampled real page
pairs. html-similarity 0.5.0 declares Requires-Python >= 3.14 and this machine has 3.11 (no 3.14
from Debian or PyPI), so it runs in its own venv (``--peer-venv``, made on first use with
``pip install --ignore-requires-python html-similarity==0.5.0``, which works: its code runs on
3.11, and its published expectations were observed on 3.11 too). It gets strings, as its API
takes them, and parses every pair; ours is timed both ways (strings, and parsed once).

Visual stage: ``--render N`` renders N pages per site and year with Chromium (remote requests
blocked, pages are offline captures) and scores the visual stage and the four-stage combination
on all pairs of those pages; EMD time per pair is measured on their signatures.

Usage::

    .venv/bin/python benchmarks/similarity.py                      # 1500+1500 pairs, render 2
    .venv/bin/python benchmarks/similarity.py --pairs 300 --render 0
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from websim_crawler.cli.compare import render_pages
from websim_crawler.core.similarity import (
    PageFeatures,
    compare_pages,
    features_from_item,
    parse_document,
    similarity,
    structural_similarity,
    tag_comparison,
    template_comparison,
)
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.text import InverseDocumentFrequency
from websim_crawler.core.similarity.visual import colour_signature, signature_similarity

DATASETS = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
BIG9 = DATASETS / "big9"
PEER_VERSION = "html-similarity==0.5.0"

PEER_TIMER = """
import json, sys, time
from html_similarity import structural_similarity, similarity
pairs = json.load(open(sys.argv[1]))
texts = {}
for a, b in pairs:
    for path in (a, b):
        if path not in texts:
            texts[path] = open(path, encoding="utf-8", errors="replace").read()
out = {}
for algorithm in ("indel", "pq_gram", "difflib"):
    start = time.process_time()
    scores = [structural_similarity(texts[a], texts[b], algorithm=algorithm) for a, b in pairs]
    out[algorithm] = [time.process_time() - start, scores]
start = time.process_time()
scores = [similarity(texts[a], texts[b]) for a, b in pairs]
out["joint"] = [time.process_time() - start, scores]
print(json.dumps(out))
"""


@dataclass
class Page:
    path: Path
    site: str
    year: int


def load_big9(cache_dir: Path) -> list[Page]:
    """Unpack big9 once into the cache and return its 360 pages with their site labels."""
    target = cache_dir / "big9"
    if not (target / "big5-17").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(BIG9 / "big9.tar.xz") as archive:
            archive.extractall(target, filter="data")
    pages = []
    with (BIG9 / "big9_site_labels.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            relative = row["html_file"].removeprefix("Extraction/")
            pages.append(Page(target / relative, row["site"], int(row["year"])))
    return pages


def sample_pairs(
    pages: Sequence[Page], count: int, seed: int, across_years: bool = True
) -> list[tuple[int, int, bool]]:
    """Return ``count`` same-site and ``count`` different-site pairs, both across years (or both
    within a year), so that the year (Wayback toolbar, era of web design) is not what separates.
    """
    positives, negatives = [], []
    for i in range(len(pages)):
        for j in range(i + 1, len(pages)):
            if (pages[i].year != pages[j].year) != across_years:
                continue
            if pages[i].site == pages[j].site:
                positives.append((i, j, True))
            else:
                negatives.append((i, j, False))
    rng = random.Random(seed)
    return rng.sample(positives, min(count, len(positives))) + rng.sample(
        negatives, min(count, len(negatives))
    )


def page_url(page: Page) -> str:
    """Return a URL on the page's site, as a crawl would know it, to resolve relative links."""
    return f"http://www.{page.site}.com/{page.year}/{page.path.stem.replace(' ', '-')}"


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Return the ROC AUC (Mann-Whitney U with average ranks for ties)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    start = 0
    while start < len(scores):
        end = start
        while end + 1 < len(scores) and sorted_scores[end + 1] == sorted_scores[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def best_f1(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Return the best F1 over all thresholds and that threshold."""
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_labels = scores[order], labels[order]
    true_positives = np.cumsum(sorted_labels)
    predicted = np.arange(1, len(scores) + 1)
    f1 = 2 * true_positives / (predicted + labels.sum())
    # Only cut between different scores.
    valid = np.append(sorted_scores[1:] != sorted_scores[:-1], True)
    best = int(np.argmax(np.where(valid, f1, -1)))
    return float(f1[best]), float(sorted_scores[best])


def timed(function: Callable[[], list[float]]) -> tuple[float, list[float]]:
    start = time.process_time()
    values = function()
    return time.process_time() - start, values


def run_peer(peer_venv: Path, pair_paths: list[tuple[str, str]], work: Path) -> dict[str, Any]:
    """Time html-similarity 0.5.0 on the pairs in its own venv; return its times and scores."""
    python = peer_venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(peer_venv)], check=True)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--ignore-requires-python", PEER_VERSION],
            capture_output=True,
            text=True,
        )
        if install.returncode != 0:
            raise RuntimeError(f"cannot install {PEER_VERSION}: {install.stderr.strip()}")
    pairs_file = work / "peer_pairs.json"
    pairs_file.write_text(json.dumps(pair_paths), encoding="utf-8")
    result = subprocess.run(
        [str(python), "-c", PEER_TIMER, str(pairs_file)], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"html-similarity failed: {result.stderr.strip()[-500:]}")
    return dict(json.loads(result.stdout))


def layout_speed(
    pages: Sequence[Page], pairs: Sequence[tuple[int, int, bool]], args: argparse.Namespace
) -> None:
    """Print layout pairs per second, ours against html-similarity 0.5.0."""
    texts = {
        index: pages[index].path.read_text(encoding="utf-8", errors="replace")
        for pair in pairs
        for index in pair[:2]
    }
    start = time.process_time()
    parsed = {index: parse_document(text) for index, text in texts.items()}
    parse_time = time.process_time() - start
    n = len(pairs)
    rows: list[tuple[str, float, float | None, list[float]]] = []
    peer: dict[str, Any] = {}
    try:
        peer = run_peer(
            args.peer_venv,
            [(str(pages[i].path), str(pages[j].path)) for i, j, _ in pairs],
            args.cache_dir,
        )
    except (RuntimeError, OSError) as exc:
        print(f"html-similarity 0.5.0 could not be run: {exc}")
    for algorithm in ("indel", "pq_gram", "difflib"):
        once, scores = timed(
            lambda a=algorithm: [
                structural_similarity(parsed[i], parsed[j], a) for i, j, _ in pairs
            ]
        )
        each, _ = timed(
            lambda a=algorithm: [structural_similarity(texts[i], texts[j], a) for i, j, _ in pairs]
        )
        rows.append((f"structural {algorithm}", once, each, scores))
    once, scores = timed(lambda: [similarity(parsed[i], parsed[j]) for i, j, _ in pairs])
    each, _ = timed(lambda: [similarity(texts[i], texts[j]) for i, j, _ in pairs])
    rows.append(("joint k=0.5", once, each, scores))
    once, scores = timed(lambda: [tag_comparison(parsed[i], parsed[j]).score for i, j, _ in pairs])
    rows.append(("tag comparison", once, None, scores))
    once, scores = timed(
        lambda: [template_comparison(parsed[i], parsed[j]).score for i, j, _ in pairs]
    )
    rows.append(("template comparison", once, None, scores))
    print(
        f"\n## Layout speed on {n} big9 page pairs ({len(parsed)} pages parsed once in "
        f"{parse_time:.2f} s CPU)\n"
    )
    print(
        "| measure | ours parsed once (pairs/s) | ours str input (pairs/s) "
        "| html-similarity 0.5.0 str (pairs/s) | speed-up (parsed once) | max |diff| |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    peer_key = {
        "structural indel": "indel",
        "structural pq_gram": "pq_gram",
        "structural difflib": "difflib",
        "joint k=0.5": "joint",
    }
    for name, once, each, scores in rows:
        peer_entry = peer.get(peer_key.get(name, ""))
        peer_rate = n / peer_entry[0] if peer_entry else None
        diff = (
            max(abs(a - b) for a, b in zip(scores, peer_entry[1], strict=True))
            if peer_entry
            else None
        )
        print(
            f"| {name} | {n / once:,.0f} | {'' if each is None else f'{n / each:,.0f}'} | "
            f"{'' if peer_rate is None else f'{peer_rate:,.0f}'} | "
            f"{'' if peer_rate is None else f'{n / once / peer_rate:.1f}x'} | "
            f"{'' if diff is None else f'{diff:.2g}'} |"
        )


def separation(
    title: str, names: Sequence[str], scores: dict[str, list[float]], labels: list[bool]
) -> None:
    """Print AUC and best F1 of each score list."""
    label_array = np.array(labels, dtype=bool)
    print(
        f"\n## {title}: {int(label_array.sum())} same-site pairs vs "
        f"{int((~label_array).sum())} different-site pairs\n"
    )
    print("| stage | AUC | best F1 | at threshold |")
    print("|---|---:|---:|---:|")
    for name in names:
        values = np.array(scores[name], dtype=float)
        f1, threshold = best_f1(values, label_array)
        print(f"| {name} | {auc(values, label_array):.3f} | {f1:.3f} | {threshold:.3f} |")


def stage_scores(
    features: dict[int, PageFeatures],
    pairs: Sequence[tuple[int, int, bool]],
    params: SimilarityParams,
    idf: InverseDocumentFrequency,
    stages: Sequence[str],
) -> dict[str, list[float]]:
    """Score every pair with every stage and the combination (missing data scores 0)."""
    scores: dict[str, list[float]] = {name: [] for name in (*stages, "combination")}
    for i, j, _ in pairs:
        report = compare_pages(features[i], features[j], "full", params, idf)
        for name in stages:
            scores[name].append(report.stage(name).score or 0.0)
        scores["combination"].append(report.combined_score or 0.0)
    return scores


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1500, help="pairs of each label")
    parser.add_argument("--speed-pairs", type=int, default=400, help="pairs timed for speed")
    parser.add_argument("--render", type=int, default=2, help="pages per site and year to render")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/websim-bench-similarity"))
    parser.add_argument("--peer-venv", type=Path, default=None)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument(
        "--visual-within-year",
        dest="visual_across_years",
        action="store_false",
        help="score the rendered subset's pairs within a year instead of across years",
    )
    args = parser.parse_args(argv)
    if not BIG9.is_dir():
        print(f"big9 not found at {BIG9}")
        return 1
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    args.peer_venv = args.peer_venv or args.cache_dir / "html-similarity-venv"
    pages = load_big9(args.cache_dir)
    pairs = sample_pairs(pages, args.pairs, args.seed)
    layout_speed(pages, pairs[: args.speed_pairs // 2] + pairs[-args.speed_pairs // 2 :], args)

    params = SimilarityParams()
    start = time.perf_counter()
    features = {
        index: features_from_item({"url": page_url(page), "html": page.path.read_bytes()}, params)
        for index, page in enumerate(pages)
    }
    print(
        f"\nfeatures (parse + page analysis) of {len(pages)} pages: "
        f"{time.perf_counter() - start:.1f} s"
    )
    idf = InverseDocumentFrequency.fit(f.keywords for f in features.values())
    for across_years in (True, False):
        sampled = pairs if across_years else sample_pairs(pages, args.pairs, args.seed, False)
        scores = stage_scores(features, sampled, params, idf, ("layout", "text", "links"))
        for measure in ("tag", "indel", "pq_gram", "joint"):
            variant = SimilarityParams(layout_measure=measure)
            scores[f"layout ({measure})"] = [
                compare_pages(features[i], features[j], "full", variant, idf).stage("layout").score
                or 0.0
                for i, j, _ in sampled
            ]
        span = "across years" if across_years else "within a year"
        separation(
            f"Separation on big9 {span}, three stages (layout = template comparison)",
            [
                "layout",
                "layout (tag)",
                "layout (indel)",
                "layout (pq_gram)",
                "layout (joint)",
                "text",
                "links",
                "combination",
            ],
            scores,
            [label for _i, _j, label in sampled],
        )
    if args.render:
        visual_benchmark(pages, features, params, idf, args)
    return 0


def visual_benchmark(
    pages: Sequence[Page],
    features: dict[int, PageFeatures],
    params: SimilarityParams,
    idf: InverseDocumentFrequency,
    args: argparse.Namespace,
) -> None:
    """Render a subset, time the EMD, and score all four stages on all its pairs."""
    chosen: list[int] = []
    seen: dict[tuple[str, int], int] = {}
    for index, page in enumerate(pages):
        key = (page.site, page.year)
        if seen.get(key, 0) < args.render:
            seen[key] = seen.get(key, 0) + 1
            chosen.append(index)
    start = time.perf_counter()
    try:
        rendered = render_pages(
            [str(pages[i].path) for i in chosen], args.chromium, block_remote=True, timeout=20
        )
    except Exception as exc:  # a missing browser ends only this part of the benchmark
        print(f"\nvisual stage skipped: cannot render with {args.chromium}: {exc}")
        return
    render_time = time.perf_counter() - start
    signature_start = time.process_time()
    for index, (_html, png) in zip(chosen, rendered, strict=True):
        features[index].signature = colour_signature(png, params)
    signature_time = (time.process_time() - signature_start) / len(chosen)
    pairs = [
        (i, j, pages[i].site == pages[j].site)
        for a, i in enumerate(chosen)
        for j in chosen[a + 1 :]
        if (pages[i].year != pages[j].year) == args.visual_across_years
    ]
    signatures = [(features[i].signature, features[j].signature) for i, j, _ in pairs]
    start = time.process_time()
    for first, second in signatures:
        assert first is not None and second is not None
        signature_similarity(first, second, params)
    emd_time = (time.process_time() - start) / len(pairs)
    print(
        f"\n## Visual stage: {len(chosen)} pages rendered in {render_time:.0f} s; "
        f"signature {signature_time * 1000:.1f} ms/page; EMD + similarity "
        f"{emd_time * 1e6:.0f} us/pair ({len(pairs)} pairs, "
        f"{params.signature_colours} colours, {params.visual_width}x{params.visual_height})"
    )
    scores = stage_scores(features, pairs, params, idf, ("layout", "text", "links", "visual"))
    separation(
        "Separation on the rendered big9 subset "
        f"{'across years' if args.visual_across_years else 'within a year'}, four stages",
        ["layout", "text", "links", "visual", "combination"],
        scores,
        [label for _i, _j, label in pairs],
    )


if __name__ == "__main__":
    sys.exit(main())
