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

Visual stage: ``--render N`` renders N pages per site and year with Chromium (served from
127.0.0.1, nothing else reachable: ``similarity_captures.render_offline``) and scores the visual
stage and the four-stage combination on all pairs of those pages; EMD time per pair is measured
on their signatures.

Calibrated default (``similarity_verdict``): candidate rules cross-validated leave-one-site-out
on big9 (pooled, across years, within a year), fitted on all big9 and scored on two held-out
sets: other pages of other sites (books.toscrape, documentation, home pages) and two renders of
the same pages of ``--captures`` sites (``similarity_captures``); the default verdict's
precision/recall/F1 on every set.

Fitted combination: ``StageCombiner`` (logistic regression on the stage scores, non-negative
weights, renormalised over the stages a pair has) is cross-validated with folds split by SITE:
the 9 sites are dealt into 3 groups of 3 (``--cv-repeats`` random deals); each fold fits on the
sampled pairs whose two pages both come from the 6 other sites and is scored on the pairs whose
two pages both come from the 3 held-out sites, next to every single stage and the equal-weight
mean on the same test pairs. Metrics are averaged over the folds: AUC, best F1 (threshold chosen
on the test pairs, optimistic alike for every row) and F1 at the threshold that maximised F1 on
the training pairs (an honest operating point). ``--write-weights FILE`` fits on all the sampled
within-year pairs and writes the weights file that ``websim similar --weights`` reads.

Usage::

    .venv/bin/python benchmarks/similarity.py                      # 1500+1500 pairs, render 2
    .venv/bin/python benchmarks/similarity.py --pairs 300 --render 0
    .venv/bin/python benchmarks/similarity.py --pairs 600 --render 0 --write-weights w.json
    .venv/bin/python benchmarks/similarity.py --only-similar-speed     # the websim similar table
    .venv/bin/python benchmarks/similarity.py --size-bands 40          # template time by page size
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from similarity_captures import CONDITIONS, capture_sets, print_render_log, render_offline
from similarity_verdict import (
    ScoredPairs,
    auc,
    best_f1,
    calibrate,
    f1_at,
    joined,
    precision_recall_f1,
    score_pairs,
    stage_separation,
)

from websim_crawler.core.io import ReadReport, iter_jsonl
from websim_crawler.core.similarity import (
    PageFeatures,
    as_parsed_document,
    compare_pages,
    features_from_item,
    find_similar_pairs,
    similarity,
    structural_similarity,
    style_similarity,
    tag_comparison,
    template_comparison,
)
from websim_crawler.core.similarity.combine import StageCombiner, save_stage_weights
from websim_crawler.core.similarity.comparison import layout_score, page_features
from websim_crawler.core.similarity.documents import clear_parsed_text_cache
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
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


PEER_PAIR_TIMER = """
import json, sys, time
from html_similarity import structural_similarity
pairs = json.load(open(sys.argv[1]))
times, scores = [], []
for a, b in pairs:
    start = time.process_time()
    first = open(a, encoding="utf-8", errors="replace").read()
    second = open(b, encoding="utf-8", errors="replace").read()
    try:
        scores.append(structural_similarity(first, second))
    except ValueError:  # lxml refuses a str that declares its encoding (<?xml ... encoding=?>)
        scores.append(None)
        times.append(None)
        continue
    times.append(time.process_time() - start)
print(json.dumps([times, scores]))
"""
ARTICLES = DATASETS / "article-extraction-benchmark" / "html"
TRAFILATURA = DATASETS / "trafilatura-eval" / "trafilatura-eval.tar.xz"
# Page-size bands by element count (tags of the parsed page), the last holding the heaviest pages.
SIZE_BANDS = ((0, 500), (500, 1500), (1500, 3000), (3000, 10**9))


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
    parsed = {index: as_parsed_document(text) for index, text in texts.items()}
    parse_time = time.process_time() - start
    start = time.process_time()
    for document in parsed.values():
        document.vertices.derive_arrays()
    prepare_time = time.process_time() - start
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
        clear_parsed_text_cache()
        each, _ = timed(
            lambda a=algorithm: [structural_similarity(texts[i], texts[j], a) for i, j, _ in pairs]
        )
        rows.append((f"structural {algorithm}", once, each, scores))
    once, scores = timed(lambda: [similarity(parsed[i], parsed[j]) for i, j, _ in pairs])
    clear_parsed_text_cache()
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
        f"{parse_time:.2f} s CPU, their template arrays derived once in {prepare_time:.2f} s)\n"
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
    template_time = next(once for name, once, _each, _scores in rows if name.startswith("template"))
    if "indel" in peer:
        peer_ms, ours_ms = peer["indel"][0] / n * 1000, template_time / n * 1000
        print(
            f"\ntemplate comparison {ours_ms:.2f} ms/pair (pages parsed once) vs html-similarity "
            f"0.5.0 structural_similarity indel {peer_ms:.2f} ms/pair (full call, parse included):"
            f" ratio {ours_ms / peer_ms:.2f} (target <= 1)"
        )


def size_band_pages(cache_dir: Path) -> list[tuple[Path, int]]:
    """Return the pages of big9, the article benchmark and trafilatura's evaluation (unpacked
    into the cache) with their element counts."""
    pages = [page.path for page in load_big9(cache_dir)]
    unpacked = cache_dir / "articles"
    unpacked.mkdir(parents=True, exist_ok=True)
    for packed in sorted(ARTICLES.glob("*.html.gz")):
        target = unpacked / packed.name.removesuffix(".gz")
        if not target.exists():
            target.write_bytes(gzip.decompress(packed.read_bytes()))
        pages.append(target)
    evaluation = cache_dir / "trafilatura"
    if not (evaluation / "tests" / "eval").is_dir() and TRAFILATURA.is_file():
        with tarfile.open(TRAFILATURA) as archive:
            archive.extractall(evaluation, filter="data")
    pages += sorted((evaluation / "tests").glob("*/*.html"))
    return [
        (path, len(as_parsed_document(path.read_text(encoding="utf-8", errors="replace")).tags))
        for path in pages
    ]


def layout_speed_by_size(args: argparse.Namespace, per_band: int) -> None:
    """Print template comparison's time per pair against html-similarity's whole call, by band.

    Pairs are drawn within a band (both pages in it). Ours: pages parsed once (the collection
    stage's case), the parse and template arrays timed per page apart; html-similarity 0.5.0:
    its whole ``structural_similarity`` call, reading and parsing both pages included.
    """
    pages = size_band_pages(args.cache_dir)
    rng = random.Random(args.seed)
    print(
        f"\n## Template comparison by page size: {per_band} pairs per band drawn from "
        f"{len(pages)} pages (big9, article-extraction-benchmark, trafilatura-eval)\n"
    )
    print(
        "| elements per page | pages | pairs | parse + arrays (ms/page) | template comparison "
        "(ms/pair) | html-similarity 0.5.0 whole call (ms/pair) | ratio (target <= 1) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for low, high in SIZE_BANDS:
        band = [path for path, size in pages if low <= size < high]
        if len(band) < 2:
            continue
        drawn = [
            (band[i], band[j])
            for i, j in (rng.sample(range(len(band)), 2) for _ in range(per_band))
        ]
        peer_times = run_peer_pairs(args.peer_venv, drawn, args.cache_dir)
        # Only the pairs html-similarity can read (it refuses pages declaring an XML encoding).
        pairs = [pair for pair, spent in zip(drawn, peer_times, strict=True) if spent is not None]
        peer_total = sum(spent for spent in peer_times if spent is not None)
        texts = {
            path: path.read_text(encoding="utf-8", errors="replace") for p in pairs for path in p
        }
        start = time.process_time()
        parsed = {path: as_parsed_document(text) for path, text in texts.items()}
        for document in parsed.values():
            document.vertices.derive_arrays()
        prepare = (time.process_time() - start) / len(parsed)
        ours, _scores = timed(
            lambda parsed=parsed, pairs=pairs: [
                template_comparison(parsed[a], parsed[b]).score for a, b in pairs
            ]
        )
        label = f"{low:,}-{high:,}" if high < 10**9 else f">= {low:,}"
        print(
            f"| {label} | {len(band)} | {len(pairs)} | {prepare * 1000:.1f} | "
            f"{ours / len(pairs) * 1000:.2f} | {peer_total / len(pairs) * 1000:.2f} | "
            f"{ours / peer_total:.2f} |"
        )


def run_peer_pairs(
    peer_venv: Path, pairs: list[tuple[Path, Path]], work: Path
) -> list[float | None]:
    """Time html-similarity's whole ``structural_similarity`` call on each pair (CPU seconds;
    None where it cannot read a page)."""
    run_peer(peer_venv, [], work)  # makes the venv on first use
    pairs_file = work / "peer_band_pairs.json"
    pairs_file.write_text(json.dumps([(str(a), str(b)) for a, b in pairs]), encoding="utf-8")
    result = subprocess.run(
        [str(peer_venv / "bin" / "python"), "-c", PEER_PAIR_TIMER, str(pairs_file)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"html-similarity failed: {result.stderr.strip()[-500:]}")
    return list(json.loads(result.stdout)[0])


def separation(
    title: str, names: Sequence[str], scores: dict[str, np.ndarray], labels: list[bool]
) -> None:
    """Print AUC and best F1 of each score list (a stage without data scores 0)."""
    label_array = np.array(labels, dtype=bool)
    print(
        f"\n## {title}: {int(label_array.sum())} same-site pairs vs "
        f"{int((~label_array).sum())} different-site pairs\n"
    )
    print("| stage | AUC | best F1 | at threshold |")
    print("|---|---:|---:|---:|")
    for name in names:
        values = np.nan_to_num(scores[name], nan=0.0)
        f1, threshold = best_f1(values, label_array)
        print(f"| {name} | {auc(values, label_array):.3f} | {f1:.3f} | {threshold:.3f} |")


def stage_scores(
    features: dict[int, PageFeatures],
    pairs: Sequence[tuple[int, int, bool]],
    params: SimilarityParams,
    idf: InverseDocumentFrequency,
    stages: Sequence[str],
) -> dict[str, np.ndarray]:
    """Score every pair with every stage (NaN: no data), the joint layout and the combination."""
    scores: dict[str, list[float]] = {
        name: [] for name in (*stages, "layout (joint)", "layout (style)", "combination")
    }
    joint = SimilarityParams(layout_measure="joint")
    for i, j, _ in pairs:
        report = compare_pages(features[i], features[j], "full", params, idf)
        for name in stages:
            score = report.stage(name).score
            scores[name].append(np.nan if score is None else score)
        first, second = features[i].document, features[j].document
        scores["layout (joint)"].append(layout_score(first, second, joint)[0])
        scores["layout (style)"].append(
            style_similarity(first, second) if first and second else 0.0
        )
        scores["combination"].append(report.combined_score or 0.0)
    return {name: np.array(values, dtype=float) for name, values in scores.items()}


def site_folds(sites: Sequence[str], repeats: int, seed: int, groups: int = 3) -> list[set[str]]:
    """Deal the sites into ``groups`` held-out groups, ``repeats`` times at random."""
    names = sorted(set(sites))
    rng = random.Random(seed)
    folds: list[set[str]] = []
    for _ in range(repeats):
        rng.shuffle(names)
        folds.extend(set(names[group::groups]) for group in range(groups))
    return folds


def cross_validate(
    title: str,
    pairs: Sequence[tuple[int, int, bool]],
    pages: Sequence[Page],
    singles: dict[str, np.ndarray],
    combinations: dict[str, tuple[tuple[str, ...], np.ndarray]],
    folds: list[set[str]],
) -> None:
    """Print site-held-out cross-validated AUC/F1 of single stages and fitted combinations."""
    labels = np.array([label for _i, _j, label in pairs], dtype=bool)
    pair_sites = [(pages[i].site, pages[j].site) for i, j, _ in pairs]
    rows: dict[str, list[tuple[float, float, float]]] = {
        name: [] for name in (*singles, *combinations, "all similar")
    }
    test_sizes = []
    for held_out in folds:
        test = np.array([a in held_out and b in held_out for a, b in pair_sites])
        train = np.array([a not in held_out and b not in held_out for a, b in pair_sites])
        if len(set(labels[test])) < 2 or len(set(labels[train])) < 2:
            continue
        test_sizes.append((int(labels[test].sum()), int((~labels[test]).sum())))
        fold_scores = {name: np.nan_to_num(values, nan=0.0) for name, values in singles.items()}
        for name, (stages, matrix) in combinations.items():
            combiner = StageCombiner(stages=stages).fit(matrix[train], labels[train])
            fold_scores[name] = combiner.predict_proba(matrix)[:, 1]
        fold_scores["all similar"] = np.ones(len(labels))
        for name, values in fold_scores.items():
            threshold = best_f1(values[train], labels[train])[1]
            rows[name].append(
                (
                    auc(values[test], labels[test]) if name != "all similar" else 0.5,
                    best_f1(values[test], labels[test])[0],
                    f1_at(values[test], labels[test], threshold),
                )
            )
    positives, negatives = np.mean(test_sizes, axis=0)
    print(
        f"\n## {title}: site-held-out cross-validation, {len(test_sizes)} folds (3 of 9 sites "
        f"held out; test pairs per fold: {positives:.0f} same-site, {negatives:.0f} "
        "different-site on average)\n"
    )
    print("| score | AUC | best F1 (test threshold) | F1 at training threshold |")
    print("|---|---:|---:|---:|")
    for name, values in rows.items():
        table = np.array(values)
        mean, spread = table.mean(axis=0), table.std(axis=0)
        print(
            f"| {name} | {mean[0]:.3f} ± {spread[0]:.3f} | {mean[1]:.3f} ± {spread[1]:.3f} "
            f"| {mean[2]:.3f} ± {spread[2]:.3f} |"
        )
    stage_names = [name for name in singles if name != "equal-weight mean"]
    best_single = max(stage_names, key=lambda name: np.mean([row[0] for row in rows[name]]))
    print()
    for name in combinations:
        for reference in (best_single, "equal-weight mean"):
            differences = np.array(rows[name]) - np.array(rows[reference])
            print(
                f"- {name} minus {reference}: AUC {differences[:, 0].mean():+.3f} (higher in "
                f"{int((differences[:, 0] > 0).sum())}/{len(differences)} folds), best F1 "
                f"{differences[:, 1].mean():+.3f} ({int((differences[:, 1] > 0).sum())}), "
                f"F1 at training threshold {differences[:, 2].mean():+.3f} "
                f"({int((differences[:, 2] > 0).sum())})"
            )


def combinations_of(
    scores: dict[str, np.ndarray], stages: Sequence[str]
) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """Return the fitted combinations to cross-validate: template layout, joint layout, both."""
    others = tuple(stage for stage in stages if stage != "layout")

    def matrix(columns: Sequence[str]) -> np.ndarray:
        return np.column_stack([scores[column] for column in columns])

    return {
        "fitted combination (layout = template)": (tuple(stages), matrix(stages)),
        "fitted combination (layout = joint)": (
            ("layout", *others),
            matrix(("layout (joint)", *others)),
        ),
        "fitted combination (template + joint layouts)": (
            ("layout", "layout (joint)", *others),
            matrix(("layout", "layout (joint)", *others)),
        ),
    }


def write_weights(
    path: Path, scores: dict[str, np.ndarray], pairs: Sequence[tuple[int, int, bool]], seed: int
) -> None:
    """Fit the four stage weights on all the given pairs and write them as a weights file."""
    matrix = np.column_stack([scores.get(stage, np.full(len(pairs), np.nan)) for stage in STAGES])
    combiner = StageCombiner().fit(matrix, [label for _i, _j, label in pairs])
    save_stage_weights(
        combiner,
        path,
        source=(
            f"benchmarks/similarity.py: big9, {len(pairs)} sampled within-year pairs "
            f"(seed {seed}), layout = template comparison"
        ),
    )
    weights = ", ".join(f"{s} {w:.3f}" for s, w in zip(STAGES, combiner.weights_, strict=True))
    print(
        f"\nweights fitted on all {len(pairs)} within-year pairs: {weights}; combined "
        f"threshold {combiner.threshold_:.3f} -> {path}"
    )


BOOKS_AND_SITES = DATASETS / "books-and-sites"
DOC_SITES = (
    ("python docs", Path("/usr/share/doc/python3.11/html"), "https://docs.python.org/3.11/"),
    (
        "django docs",
        Path("/usr/share/doc/python-django-doc/html"),
        "https://docs.djangoproject.com/en/3.2/",
    ),
)


def second_set_pages(per_site: int, seed: int) -> dict[str, list[tuple[str, bytes]]]:
    """Pages of sites that are not in big9: books.toscrape.com product pages, 2017 home pages of
    top sites (one site each; the 4 redirect stubs under 2 KB left out) and, when their Debian
    packages are installed, the Python 3.11 and Django documentation as a site would serve them.
    """
    rng = random.Random(seed)
    groups: dict[str, list[tuple[str, bytes]]] = {}
    if BOOKS_AND_SITES.is_dir():
        for archive_name, group, count in (
            ("bookfiles.tar.gz", "books", per_site),
            ("sites.tar.gz", "home", 10**6),
        ):
            with tarfile.open(BOOKS_AND_SITES / archive_name) as archive:
                members = sorted(
                    (m for m in archive.getmembers() if m.isfile() and m.size >= 2048),
                    key=lambda member: member.name,
                )
                chosen = rng.sample(members, min(count, len(members)))
                pages = []
                for member in chosen:
                    data = archive.extractfile(member)
                    assert data is not None
                    stem = member.name.split(".")[0]
                    url = (
                        f"http://books.toscrape.com/catalogue/{member.name}"
                        if group == "books"
                        else f"http://home-{stem}.test/"
                    )
                    pages.append((url, data.read()))
                groups[group] = pages
    for group, root, base in DOC_SITES:
        files = sorted(root.rglob("*.html")) if root.is_dir() else []
        if files:
            chosen_docs = rng.sample(files, min(per_site, len(files)))
            groups[group] = [(base + str(f.relative_to(root)), f.read_bytes()) for f in chosen_docs]
    return groups


def second_set(per_site: int, pairs_per_group: int, seed: int) -> ScoredPairs | None:
    """Same-site pairs within each site of ``second_set_pages``, other-site pairs between them
    (home pages against home pages: each is its own site)."""
    groups = second_set_pages(per_site, seed)
    if len(groups) < 2:
        print("\nsecond set skipped: books-and-sites and the documentation packages not found")
        return None
    features = {
        group: [features_from_item({"url": url, "html": html}) for url, html in pages]
        for group, pages in groups.items()
    }
    idf = InverseDocumentFrequency.fit(f.keywords for fs in features.values() for f in fs)
    rng = random.Random(seed)
    pairs: list[tuple[PageFeatures, PageFeatures, str, str, bool]] = []
    names = sorted(features)
    for a, group_1 in enumerate(names):
        for group_2 in names[a:]:
            first, second = features[group_1], features[group_2]
            candidates = [
                (i, j)
                for i in range(len(first))
                for j in range(len(second))
                if group_1 != group_2 or i < j
            ]
            same = group_1 == group_2 and group_1 != "home"
            count = pairs_per_group * (2 if group_1 == group_2 == "home" else 1)
            for i, j in rng.sample(candidates, min(count, len(candidates))):
                site_1 = group_1 if group_1 != "home" else f"home {i}"
                site_2 = group_2 if group_2 != "home" else f"home {j}"
                pairs.append((first[i], second[j], site_1, site_2, same))
    return score_pairs(f"second set ({', '.join(names)})", pairs, idf)


def similar_speed(cache_dir: Path, seed: int) -> None:
    """Time ``websim similar``'s steps on feeds of real pages (big9, books-and-sites, both)."""
    big9_records = [
        {"url": page_url(page), "html": page.path.read_bytes().decode("utf-8", "replace")}
        for page in load_big9(cache_dir)
    ]
    other_records = [
        {"url": url, "html": html.decode("utf-8", "replace")}
        for group, group_pages in second_set_pages(10**6, seed).items()
        if group in ("books", "home")
        for url, html in group_pages
    ]
    print(
        "\n## websim similar on feeds of real pages (CPU seconds; compared pairs/s = candidate "
        "pairs / comparison time, target >= 500)\n"
    )
    print(
        "| feed | pages | features (parse, analysis, template arrays) | blocking "
        "| candidate pairs | comparison | compared pairs/s | similar pairs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, records in (
        ("big9", big9_records),
        ("books-and-sites", other_records),
        ("both", big9_records + other_records),
    ):
        feed = cache_dir / f"feed-{name}.jsonl"
        with feed.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(record) + "\n" for record in records)
        start = time.process_time()
        features = [features_from_item(record) for record in iter_jsonl(feed, ReadReport())]
        feature_time = time.process_time() - start
        marks: list[float] = []

        def mark_comparisons(
            pairs: Iterable[tuple[int, int]], marks: list[float] = marks
        ) -> Iterable[tuple[int, int]]:
            marks.append(time.process_time())  # blocking is done, comparisons start
            return pairs

        start = time.process_time()
        result = find_similar_pairs(features, SimilarityParams(), mark_comparisons)
        end = time.process_time()
        comparison_time = end - marks[0]
        print(
            f"| {name} | {len(features)} | {feature_time:.1f} s | {marks[0] - start:.1f} s | "
            f"{result.candidate_pairs} ({result.blocking}) | {comparison_time:.1f} s | "
            f"{result.candidate_pairs / comparison_time:,.0f} | {len(result.pairs)} |"
        )


def saved_file_verdicts(pages: Sequence[Page], per_site_year: int, seed: int) -> None:
    """Score ``websim compare``'s default verdict on big9 pages given as saved files.

    ``per_site_year`` pages of each site and year (seeded), every pair of them; each page is
    compared as a crawl knows it (its site URL), as a saved file (a ``file:`` URL: the page's
    own URL is what it states, if anything) and as a saved file whose URL the user gives.
    """
    rng = random.Random(seed)
    groups: dict[tuple[str, int], list[Page]] = {}
    for page in pages:
        groups.setdefault((page.site, page.year), []).append(page)
    chosen = [
        page
        for key in sorted(groups)
        for page in rng.sample(groups[key], min(per_site_year, len(groups[key])))
    ]
    labels = np.array(
        [chosen[i].site == chosen[j].site for i in range(len(chosen)) for j in range(i)],
        dtype=bool,
    )
    print(
        f"\n## Default verdict on saved files: {len(chosen)} big9 pages, {int(labels.sum())} "
        f"same-site and {int((~labels).sum())} different-site pairs (compare_pages defaults, "
        "as websim compare A B)\n"
    )
    print("| pages given as | P | R | F1 | pairs judged by links |")
    print("|---|---:|---:|---:|---:|")
    bodies = [page.path.read_bytes() for page in chosen]
    for name, urls in (
        ("site URLs (a crawl)", [page_url(page) for page in chosen]),
        ("saved files (file: URLs)", [page.path.resolve().as_uri() for page in chosen]),
    ):
        features = [page_features(body, url=url) for body, url in zip(bodies, urls, strict=True)]
        verdicts, by_links = [], 0
        for i in range(len(chosen)):
            for j in range(i):
                report = compare_pages(features[i], features[j])
                verdicts.append(report.verdict == "similar")
                by_links += report.combined_score is not None
        precision, recall, f1 = precision_recall_f1(np.array(verdicts, dtype=bool), labels)
        print(f"| {name} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {by_links} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1500, help="pairs of each label")
    parser.add_argument("--speed-pairs", type=int, default=400, help="pairs timed for speed")
    parser.add_argument("--render", type=int, default=2, help="pages per site and year to render")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cv-repeats", type=int, default=5, help="random deals of the sites")
    parser.add_argument("--write-weights", type=Path, help="write within-year fitted weights")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/websim-bench-similarity"))
    parser.add_argument("--peer-venv", type=Path, default=None)
    parser.add_argument(
        "--second-per-site", type=int, default=40, help="second set: pages per site sampled"
    )
    parser.add_argument(
        "--second-pairs", type=int, default=60, help="second set: pairs per pair of sites"
    )
    parser.add_argument(
        "--captures", type=int, default=90, help="two-render set: sites (0: skip the set)"
    )
    parser.add_argument(
        "--capture-negatives", type=int, default=600, help="two-render set: other-site pairs"
    )
    parser.add_argument(
        "--no-similar-speed",
        dest="similar_speed",
        action="store_false",
        help="skip timing websim similar on a feed of real pages",
    )
    parser.add_argument(
        "--size-bands",
        type=int,
        metavar="PAIRS",
        help="only time template comparison against html-similarity by page-size band",
    )
    parser.add_argument(
        "--only-similar-speed",
        action="store_true",
        help="print only the websim similar table (feeds of real pages) and stop",
    )
    parser.add_argument(
        "--visual-within-year",
        dest="visual_across_years",
        action="store_false",
        help="score the rendered subset's pairs within a year instead of across years",
    )
    parser.add_argument(
        "--saved-files",
        type=int,
        metavar="N",
        help="only score the default verdict on N pages per site and year given as saved files",
    )
    args = parser.parse_args(argv)
    if not BIG9.is_dir():
        print(f"big9 not found at {BIG9}")
        return 1
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    args.peer_venv = args.peer_venv or args.cache_dir / "html-similarity-venv"
    if args.size_bands:
        layout_speed_by_size(args, args.size_bands)
        return 0
    if args.only_similar_speed:
        similar_speed(args.cache_dir, args.seed)
        return 0
    pages = load_big9(args.cache_dir)
    if args.saved_files:
        saved_file_verdicts(pages, args.saved_files, args.seed)
        return 0
    pairs = sample_pairs(pages, args.pairs, args.seed)
    if args.speed_pairs:
        layout_speed(pages, pairs[: args.speed_pairs // 2] + pairs[-args.speed_pairs // 2 :], args)

    # The separation tables weigh the stages equally ("combination"); the defaults are scored below.
    params = SimilarityParams(stage_weights=(1.0, 1.0, 1.0, 1.0))
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
    folds = site_folds([page.site for page in pages], args.cv_repeats, args.seed)
    stages = ("layout", "text", "links")
    for across_years in (True, False):
        sampled = pairs if across_years else sample_pairs(pages, args.pairs, args.seed, False)
        scores = stage_scores(features, sampled, params, idf, stages)
        for measure in ("tag", "indel", "pq_gram"):
            variant = SimilarityParams(layout_measure=measure)
            scores[f"layout ({measure})"] = np.array(
                [
                    layout_score(features[i].document, features[j].document, variant)[0]
                    for i, j, _ in sampled
                ]
            )
        span = "across years" if across_years else "within a year"
        separation(
            f"Separation on big9 {span}, three stages (layout = template comparison)",
            [
                "layout",
                "layout (tag)",
                "layout (indel)",
                "layout (pq_gram)",
                "layout (joint)",
                "layout (style)",
                "text",
                "links",
                "combination",
            ],
            scores,
            [label for _i, _j, label in sampled],
        )
        singles = {
            name: scores[name]
            for name in (
                "layout",
                "layout (joint)",
                "layout (style)",
                "text",
                "links",
                "combination",
            )
        }
        singles["equal-weight mean"] = singles.pop("combination")
        cross_validate(
            f"Big9 {span}",
            sampled,
            pages,
            singles,
            combinations_of(scores, stages),
            folds,
        )
        if args.write_weights and not across_years:
            write_weights(args.write_weights, scores, sampled, args.seed)
    big9_sets = [
        score_pairs(
            f"big9 {span}",
            [
                (features[i], features[j], pages[i].site, pages[j].site, label)
                for i, j, label in sample_pairs(pages, args.pairs, args.seed, across)
            ],
            idf,
        )
        for span, across in (("across years", True), ("within a year", False))
    ]
    big9 = joined("big9 (across years and within a year)", big9_sets)
    second = second_set(args.second_per_site, args.second_pairs, args.seed)
    held_out = [second] if second else []
    if args.captures:
        captures, log, sites = capture_sets(
            args.captures, args.capture_negatives, args.seed, args.cache_dir
        )
        print_render_log(f"Two renders of {sites} sites ({', '.join(CONDITIONS)})", log)
        held_out += captures
    calibrate(big9, held_out, [*big9_sets, big9, *held_out])
    for scored in held_out[-2:] if args.captures else ():
        stage_separation(scored)
    if args.similar_speed:
        similar_speed(args.cache_dir, args.seed)
    if args.render:
        visual_benchmark(pages, features, params, idf, folds, args)
    return 0


def visual_benchmark(
    pages: Sequence[Page],
    features: dict[int, PageFeatures],
    params: SimilarityParams,
    idf: InverseDocumentFrequency,
    folds: list[set[str]],
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
    root = args.cache_dir / "big9"
    names = [str(pages[i].path.relative_to(root)) for i in chosen]
    condition = next(iter(CONDITIONS))  # scripts on, 1280 wide
    try:
        rendered, log = render_offline(root, names, {condition: CONDITIONS[condition]})
    except Exception as exc:  # a missing browser ends only this part of the benchmark
        print(f"\nvisual stage skipped: cannot render: {exc}")
        return
    render_time = log.seconds
    print_render_log(f"Rendered big9 subset ({condition})", log)
    shots = {i: r.screenshot for i, r in zip(chosen, rendered[condition], strict=True) if r}
    chosen = list(shots)
    signature_start = time.process_time()
    for index, png in shots.items():
        features[index].signature = colour_signature(png or b"", params)
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
    scores = stage_scores(features, pairs, params, idf, STAGES)
    span = "across years" if args.visual_across_years else "within a year"
    separation(
        f"Separation on the rendered big9 subset {span}, four stages",
        ["layout", "text", "links", "visual", "combination"],
        scores,
        [label for _i, _j, label in pairs],
    )
    singles = {
        name: scores[name] for name in ("layout", "layout (joint)", "layout (style)", *STAGES[1:])
    }
    singles["equal-weight mean"] = scores["combination"]
    cross_validate(
        f"Rendered big9 subset {span}, four stages",
        pairs,
        pages,
        singles,
        combinations_of(scores, STAGES),
        folds,
    )


if __name__ == "__main__":
    sys.exit(main())
