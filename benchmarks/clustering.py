"""Fuzzy c-means clustering: quality on real labelled pages, speed and memory against skfuzzy.

(a) Quality: NMI, ARI and purity against labels, averaged over ``--seeds`` random seeds.
  * ``big9`` (360 news pages, 9 site labels): keywords from the HTML twice, once by websim's page
    analysis (main-content keywords) and once from all visible text (core.text).
  * ``webkb`` (877 pages, 5 class labels): the binary stemmed-word vectors as keyword counts.
  Every method gets the same tf-idf rows (or the same LSA rows) and the same k: k-means
  (scikit-learn), skfuzzy's c-means, and websim's ``FuzzyCMeans``; the default against k-means as
  a paired difference over the seeds (mean and standard error); then the choices behind websim's
  defaults (LSA dimensions x fuzziness m, idf, initialisation, restarts, whether FCM optimises
  k-means' own objective as well as k-means does) and the validity indices ``auto`` reads, per k.
(a') The number of clusters ``auto`` chooses, per labelled set: big9 (site labels; and
  site-year labels, 36 templates), webkb (class labels) and Python's documentation pages
  (Debian ``python3.11-doc``; 36 chapters of 3 to 25 pages): true k, chosen k, NMI of the default
  job with ``auto`` and with the true k.
(c) ``--million``: ``websim cluster feed.jsonl -o c.json --n-clusters 20`` as a user runs it, on
  feeds of synthetic topic pages (the generator of (b), written as feed lines: url, kind,
  keywords) at N = 10k, 100k and 1M: wall time and peak RSS of the command (``/usr/bin/time -v``
  on the child), NMI of its clusters against the generator's topics; ``--dask`` runs each size
  again with ``--engine dask`` (a local cluster of 2 workers) and counts the pages whose cluster
  differs from the memory engine's.
(b) Speed and memory: synthetic topic documents over a 20k-term vocabulary at N = 1k, 10k, 100k.
  ``FuzzyCMeans`` (sparse) and ``skfuzzy.cluster.cmeans`` (dense, shaped features x samples) run
  the same number of iterations from the same initial memberships (euclidean, m=2, the only
  setting they share); the largest membership difference shows they compute the same thing.
  Then websim's whole default job (tf-idf, LSA, spherical FCM with restarts) at each N, timed
  without tracemalloc (it slows Python loops) and traced in a second run for memory.
  Memory is the peak of ``tracemalloc`` (numpy and scipy allocations) during the call; skfuzzy's
  includes the dense copy of the rows it needs. PC near 1/k shows the m=2 collapse on raw tf-idf.

Usage::

    .venv/bin/python benchmarks/clustering.py                  # everything
    .venv/bin/python benchmarks/clustering.py --part quality
    .venv/bin/python benchmarks/clustering.py --part auto       # the per-set auto table only
    .venv/bin/python benchmarks/clustering.py --part speed --sizes 1000,10000
    .venv/bin/python benchmarks/clustering.py --million [--dask] [--million-sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tarfile
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import scipy.sparse as sp
import skfuzzy
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, silhouette_score

from websim_crawler.core.clustering import (
    ClusteringParams,
    FuzzyCMeans,
    PageToCluster,
    cluster_documents,
    lsa_reduce,
    tfidf_vectors,
)
from websim_crawler.core.clustering.auto import upper_bound
from websim_crawler.core.clustering.fcm import l2_normalize_rows
from websim_crawler.core.html import parse_html, remove_invisible
from websim_crawler.core.page import analyse_page
from websim_crawler.core.text import detect_language, keyword_counts
from websim_crawler.errors import WebsimError

DATASETS = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
DEFAULT_CACHE = Path("/tmp/websim-bench-cache")
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")  # apt-get install python3.11-doc
DEFAULTS = ClusteringParams()


@dataclass
class LabelledSet:
    """Keyword counts of labelled pages."""

    name: str
    keywords: list[dict[str, float]]
    labels: list[str]


# --- data ---------------------------------------------------------------------------------------


def unpack(archive: Path, cache: Path) -> Path:
    """Unpack a tarball or zip once into the cache folder and return that folder."""
    target = cache / archive.name.split(".")[0]
    if not target.exists():
        target.mkdir(parents=True)
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as bundle:
                bundle.extractall(target)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(target, filter="data")
    return target


def visible_text_keywords(html: bytes) -> dict[str, float]:
    root = parse_html(html)
    remove_invisible(root)
    text = root.text_content()
    return dict(keyword_counts([text], detect_language(text)))


def load_big9(cache: Path) -> Iterator[LabelledSet]:
    folder = unpack(DATASETS / "big9" / "big9.tar.xz", cache)
    main_content: list[dict[str, float]] = []
    visible: list[dict[str, float]] = []
    labels: list[str] = []
    with open(DATASETS / "big9" / "big9_site_labels.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            html = (folder / row["html_file"].removeprefix("Extraction/")).read_bytes()
            try:
                keywords: dict[str, float] = dict(analyse_page(html).keyword_stems)
            except WebsimError:
                keywords = {}
            main_content.append(keywords)
            visible.append(visible_text_keywords(html))
            labels.append(row["site"])
    yield LabelledSet("big9 main-content keywords", main_content, labels)
    yield LabelledSet("big9 visible-text keywords", visible, labels)


def load_webkb(cache: Path) -> LabelledSet:
    folder = unpack(DATASETS / "webkb-graph" / "webkb.zip", cache)
    keywords, labels = [], []
    for path in sorted(folder.rglob("*.content")):
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split()
            values = fields[1:-1]
            keywords.append({f"w{i}": 1.0 for i, value in enumerate(values) if value != "0"})
            labels.append(fields[-1])
    return LabelledSet("webkb word vectors", keywords, labels)


def load_big9_site_years(big9: Sequence[LabelledSet]) -> LabelledSet:
    """The big9 pages' visible-text keywords labelled by site and year (36 templates)."""
    with open(DATASETS / "big9" / "big9_site_labels.csv", encoding="utf-8") as handle:
        labels = [f"{row['site']} {row['year']}" for row in csv.DictReader(handle)]
    visible = next(data for data in big9 if "visible" in data.name)
    return LabelledSet("big9 visible-text keywords, site-year labels", visible.keywords, labels)


def load_python_docs(min_pages: int = 3) -> LabelledSet | None:
    """Python's documentation pages (Debian ``python3.11-doc``) labelled by chapter.

    Many small topics: each chapter of the library and C API indexes with at least
    ``min_pages`` pages (text processing, data types, networking ...), plus the tutorial, the
    language reference and the what's-new pages: 36 groups of 3 to 25 pages. Keywords come
    from websim's page analysis.
    """
    if not (PYTHON_DOCS / "library" / "index.html").exists():
        return None
    pages: dict[Path, str] = {}
    for folder in ("library", "c-api"):
        index = parse_html((PYTHON_DOCS / folder / "index.html").read_bytes())
        for chapter in index.xpath('//div[@class="body"]//li[contains(@class, "toctree-l1")]'):
            name = f"{folder}: {chapter.xpath('./a')[0].text_content().strip()}"
            members = []
            for link in chapter.xpath(".//a[@href]"):
                href = link.get("href").split("#")[0]
                path = PYTHON_DOCS / folder / href
                if href and "/" not in href and path.exists() and path not in pages:
                    members.append(path)
                    pages[path] = name
            if len(members) < min_pages:
                for path in members:
                    del pages[path]
    for folder in ("tutorial", "reference", "whatsnew"):
        for path in sorted((PYTHON_DOCS / folder).glob("*.html")):
            if path.name != "index.html":
                pages.setdefault(path, folder)
    keywords: list[dict[str, float]] = []
    for path in pages:
        try:
            keywords.append(dict(analyse_page(path.read_bytes()).keyword_stems))
        except WebsimError:
            keywords.append({})
    return LabelledSet("python docs chapters", keywords, list(pages.values()))


# --- quality ------------------------------------------------------------------------------------


def purity(truth: Sequence[str], predicted: np.ndarray) -> float:
    truth_array = np.asarray(truth)
    total = 0
    for cluster in np.unique(predicted):
        _values, counts = np.unique(truth_array[predicted == cluster], return_counts=True)
        total += counts.max()
    return total / len(truth_array)


def scores(truth: Sequence[str], predicted: np.ndarray) -> tuple[float, float, float]:
    return (
        normalized_mutual_info_score(truth, predicted),
        adjusted_rand_score(truth, predicted),
        purity(truth, predicted),
    )


Method = Callable[[Any, int, int], np.ndarray]  # (rows, k, seed) -> labels


def kmeans(rows: Any, k: int, seed: int) -> np.ndarray:
    return np.asarray(KMeans(k, n_init=DEFAULTS.n_init, random_state=seed).fit_predict(rows))


def skfuzzy_labels(m: float) -> Method:
    def run(rows: Any, k: int, seed: int) -> np.ndarray:
        dense = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        result = skfuzzy.cluster.cmeans(
            dense.T.astype(np.float64), k, m, error=1e-5, maxiter=300, seed=seed
        )
        return np.asarray(result[1].argmax(axis=0))

    return run


def fcm(**options: Any) -> Method:
    def run(rows: Any, k: int, seed: int) -> np.ndarray:
        settings: dict[str, Any] = {
            "m": DEFAULTS.fuzziness,
            "metric": DEFAULTS.metric,
            "init": DEFAULTS.init,
            "n_init": DEFAULTS.n_init,
            "tol": DEFAULTS.tol,
            "max_iter": DEFAULTS.max_iter,
        }
        settings.update(options)
        return FuzzyCMeans(k, random_state=seed, **settings).fit_predict(rows)

    return run


def mean_scores(method: Method, rows: Any, data: LabelledSet, seeds: int) -> np.ndarray:
    k = len(set(data.labels))
    runs = [scores(data.labels, method(rows, k, seed)) for seed in range(seeds)]
    return np.array(runs)


def quality(data: LabelledSet, seeds: int) -> None:
    tfidf = tfidf_vectors(data.keywords, min_df=DEFAULTS.min_df, max_df=DEFAULTS.max_df).matrix
    kept = np.diff(tfidf.indptr) > 0
    data = LabelledSet(
        data.name,
        [keywords for keywords, keep in zip(data.keywords, kept, strict=True) if keep],
        [label for label, keep in zip(data.labels, kept, strict=True) if keep],
    )
    tfidf = tfidf[kept]
    k = len(set(data.labels))
    lsa = lsa_reduce(tfidf, DEFAULTS.svd_components, random_state=0)
    print(
        f"\n## {data.name}: {tfidf.shape[0]} pages ({int((~kept).sum())} without terms left out), "
        f"{tfidf.shape[1]} terms, {k} labels; mean of {seeds} seeds"
    )
    print(f"{'vectors':<10} {'method':<44} {'NMI':>12} {'ARI':>6} {'purity':>6} {'secs':>6}")
    lsa_name = f"lsa-{DEFAULTS.svd_components}"
    methods: list[tuple[str, str, Any, Method]] = [
        ("tf-idf", "k-means (scikit-learn, n_init=3)", tfidf, kmeans),
        ("tf-idf", "skfuzzy cmeans m=2 (dense)", tfidf, skfuzzy_labels(2.0)),
        (
            "tf-idf",
            "FuzzyCMeans plain: euclidean m=2 random",
            tfidf,
            fcm(metric="euclidean", m=2.0, init="random", n_init=1),
        ),
        ("tf-idf", "FuzzyCMeans cosine m=2", tfidf, fcm(m=2.0)),
        ("tf-idf", f"FuzzyCMeans cosine m={DEFAULTS.fuzziness}", tfidf, fcm()),
        (lsa_name, "k-means (scikit-learn, n_init=3)", lsa, kmeans),
        (lsa_name, "skfuzzy cmeans m=2", lsa, skfuzzy_labels(2.0)),
        (
            lsa_name,
            f"skfuzzy cmeans m={DEFAULTS.fuzziness}",
            lsa,
            skfuzzy_labels(DEFAULTS.fuzziness),
        ),
        (lsa_name, "FuzzyCMeans websim default", lsa, fcm()),
    ]
    for vectors, name, rows, method in methods:
        start = time.perf_counter()
        results = mean_scores(method, rows, data, seeds)
        elapsed = (time.perf_counter() - start) / seeds
        nmi, ari, pure = results.mean(axis=0)
        spread = results[:, 0].std()
        print(f"{vectors:<10} {name:<44} {nmi:6.3f}±{spread:.3f} {ari:6.3f} {pure:6.3f}", end="")
        print(f" {elapsed:6.2f}")
    paired_difference(data, lsa, seeds)
    ablation(data, tfidf, seeds)
    auto_choice(data, lsa)


def paired_difference(data: LabelledSet, rows: Any, seeds: int) -> None:
    """Websim default minus k-means on the same LSA rows and seeds: mean and standard error."""
    difference = mean_scores(fcm(), rows, data, seeds) - mean_scores(kmeans, rows, data, seeds)
    error = difference.std(axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.zeros(3)
    cells = "  ".join(
        f"{name} {mean:+.3f}±{se:.3f}"
        for name, mean, se in zip(
            ("NMI", "ARI", "purity"), difference.mean(axis=0), error, strict=True
        )
    )
    print(f"websim default - k-means, same LSA rows, paired over {seeds} seeds: {cells}")


def ablation(data: LabelledSet, tfidf: sp.csr_matrix, seeds: int) -> None:
    """NMI of FuzzyCMeans (cosine, k-means++, 3 restarts) for LSA dimensions x fuzziness."""
    fuzziness = (2.0, 1.5, 1.2, 1.1, 1.05)
    print(f"\nNMI, FuzzyCMeans cosine k-means++ n_init={DEFAULTS.n_init}: LSA dimensions x m")
    print(f"{'LSA dims':<10}" + "".join(f"{'m=' + str(m):>9}" for m in fuzziness) + "   k-means")
    for dimensions in (0, 20, 50, 100, 200):
        reduced = lsa_reduce(tfidf, dimensions, random_state=0)
        rows = reduced if reduced is not None else tfidf
        cells = [mean_scores(fcm(m=m), rows, data, seeds)[:, 0].mean() for m in fuzziness]
        baseline = mean_scores(kmeans, rows, data, seeds)[:, 0].mean()
        label = "none" if dimensions == 0 else str(dimensions)
        print(f"{label:<10}" + "".join(f"{cell:9.3f}" for cell in cells) + f"{baseline:10.3f}")
    reduced = lsa_reduce(tfidf, DEFAULTS.svd_components, random_state=0)
    print(
        f"initialisation and restarts at the defaults (LSA {DEFAULTS.svd_components}, "
        f"m={DEFAULTS.fuzziness}), NMI:"
    )
    for name, method in (
        ("k-means++, n_init=1", fcm(n_init=1)),
        ("random rows, n_init=1", fcm(init="random", n_init=1)),
        ("k-means++, n_init=3", fcm(n_init=3)),
        ("random rows, n_init=3", fcm(init="random", n_init=3)),
        ("k-means++, n_init=10", fcm(n_init=10)),
        ("tol 1e-6 (default 1e-4)", fcm(tol=1e-6)),
    ):
        results = mean_scores(method, reduced, data, seeds)
        print(f"  {name:<24} NMI {results[:, 0].mean():.3f}±{results[:, 0].std():.3f}")
    idf_ablation(data, tfidf, seeds)
    kmeans_objective(data, reduced, seeds)


def idf_ablation(data: LabelledSet, tfidf: sp.csr_matrix, seeds: int) -> None:
    """websim's idf ln((N+1)/df) against the smoothed ln((1+N)/(1+df)) + 1 of scikit-learn."""
    n_documents = tfidf.shape[0]
    frequencies = np.bincount(tfidf.indices, minlength=tfidf.shape[1]).astype(np.float64)
    ours = np.log((n_documents + 1.0) / frequencies)
    smoothed = np.log((1.0 + n_documents) / (1.0 + frequencies)) + 1.0
    rescaled = l2_normalize_rows(
        sp.csr_matrix(tfidf @ sp.diags((smoothed / ours).astype(np.float32)))
    )
    print(f"idf at the defaults (LSA {DEFAULTS.svd_components}), NMI/ARI/purity:")
    for name, rows in (("ln((N+1)/df) (websim)", tfidf), ("ln((1+N)/(1+df)) + 1", rescaled)):
        reduced = lsa_reduce(rows, DEFAULTS.svd_components, random_state=0)
        cells = []
        for method in (fcm(), kmeans):
            nmi, ari, pure = mean_scores(method, reduced, data, seeds).mean(axis=0)
            cells.append(f"{nmi:.3f}/{ari:.3f}/{pure:.3f}")
        print(f"  {name:<24} websim default {cells[0]}   k-means {cells[1]}")


def kmeans_objective(data: LabelledSet, rows: Any, seeds: int) -> None:
    """k-means' objective (inertia) of both hard partitions: does FCM optimise it as well?"""
    k = len(set(data.labels))
    dense = np.asarray(rows, dtype=np.float64)

    def inertia(labels: np.ndarray) -> float:
        return float(
            sum(
                ((dense[labels == j] - dense[labels == j].mean(axis=0)) ** 2).sum()
                for j in set(labels)
            )
        )

    ours = [inertia(fcm()(rows, k, seed)) for seed in range(seeds)]
    theirs = [inertia(kmeans(rows, k, seed)) for seed in range(seeds)]
    print(
        f"k-means inertia of the hard partition (lower = better for k-means' own objective): "
        f"websim default {np.mean(ours):.2f} (best {min(ours):.2f}), "
        f"k-means {np.mean(theirs):.2f} (best {min(theirs):.2f})"
    )


def auto_choice(data: LabelledSet, rows: Any) -> None:
    """The validity indices per k (and the cosine silhouette), and what each would pick."""
    n_labels = len(set(data.labels))
    upper = upper_bound(rows.shape[0], DEFAULTS.max_clusters)
    tried = range(2, max(upper, 4 * n_labels) + 1)
    print(
        f"auto: validity per k (auto searches 2..{upper}; {n_labels} labels)\n"
        f"{'k':>4} {'XB':>6} {'PC':>6} {'PE':>6} {'silh.':>6} {'NMI':>6}"
    )
    curve = []
    for k in tried:
        model = FuzzyCMeans(k, m=DEFAULTS.fuzziness, n_init=DEFAULTS.n_init, random_state=0)
        labels = model.fit_predict(rows)
        silhouette = silhouette_score(rows, labels, metric="cosine") if len(set(labels)) > 1 else 0
        values = (
            model.xie_beni_,
            model.partition_coefficient_,
            model.partition_entropy_,
            silhouette,
            scores(data.labels, labels)[0],
        )
        curve.append((k, *values))
        print(f"{k:>4}" + "".join(f" {value:6.3f}" for value in values))
    in_range = [row for row in curve if row[0] <= upper]
    picks = {
        "xie_beni (lowest)": min(in_range, key=lambda row: row[1]),
        "partition_coefficient (highest)": max(in_range, key=lambda row: row[2]),
        "partition_entropy (lowest)": min(in_range, key=lambda row: row[3]),
        f"silhouette (highest, 2..{tried[-1]})": max(curve, key=lambda row: row[4]),
        "best NMI (needs the labels)": max(curve, key=lambda row: row[5]),
    }
    for name, row in picks.items():
        print(f"  picked by {name:<32} k={row[0]:<3} NMI {row[5]:.3f}")


def auto_table(sets: Sequence[LabelledSet], seeds: int) -> None:
    """Per labelled set: the true k, the k ``auto`` chooses and the NMI of both (the job)."""
    print(
        f"\n## auto number of clusters (default job: {DEFAULTS.validity_index}, "
        f"max {DEFAULTS.max_clusters}; mean of {seeds} seeds)"
    )
    header = ["set", "pages", "true k", "chosen k", "k error", "NMI auto", "NMI true k", "auto s"]
    header.append("ok")
    print(" | ".join(header))
    for data in sets:
        documents = [PageToCluster(f"doc:{i}", kw) for i, kw in enumerate(data.keywords)]
        true_k = len(set(data.labels))
        chosen, auto_nmi, fixed_nmi, seconds = [], [], [], []
        for seed in range(seeds):
            started = time.perf_counter()
            auto = cluster_documents(documents, ClusteringParams(seed=seed))
            seconds.append(time.perf_counter() - started)
            fixed = cluster_documents(documents, ClusteringParams(n_clusters=true_k, seed=seed))
            truth = [data.labels[int(url[4:])] for url in auto.urls]
            chosen.append(auto.n_clusters)
            auto_nmi.append(normalized_mutual_info_score(truth, auto.labels))
            fixed_nmi.append(normalized_mutual_info_score(truth, fixed.labels))
        gap = float(np.mean(fixed_nmi) - np.mean(auto_nmi))
        k_error = abs(float(np.mean(chosen)) - true_k) / true_k
        verdict = "yes" if gap <= 0.03 and k_error <= 0.25 else "no"
        print(
            f"{data.name} | {len(auto.urls)} | {true_k} | "
            f"{'/'.join(str(k) for k in chosen)} | {np.mean(chosen) / true_k - 1:+.0%} | "
            f"{np.mean(auto_nmi):.3f} | "
            f"{np.mean(fixed_nmi):.3f} | {np.mean(seconds):.1f} | {verdict}",
            flush=True,
        )


# --- speed --------------------------------------------------------------------------------------


def synthetic_documents(
    n_documents: int,
    vocabulary: int = 20_000,
    topics: int = 20,
    seed: int = 0,
    topic_seed: int | None = None,
) -> tuple[list[dict[str, float]], np.ndarray]:
    """Documents of 40 topic words (Zipf-weighted, 300 per topic) and 40 background words.

    The topics' words are drawn with ``topic_seed`` (``seed`` when not given), the documents
    with ``seed``: chunks of one collection share ``topic_seed`` and differ in ``seed``.
    """
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, vocabulary + 1)
    background = zipf / zipf.sum()
    topic_rng = (
        rng if topic_seed is None or topic_seed == seed else np.random.default_rng(topic_seed)
    )
    topic_words = np.array(
        [topic_rng.choice(vocabulary, 300, replace=False) for _ in range(topics)]
    )
    topic_weights = 1.0 / np.arange(1, 301) ** 0.8
    topic_weights /= topic_weights.sum()
    labels = rng.integers(topics, size=n_documents)
    own = topic_words[labels[:, None], rng.choice(300, size=(n_documents, 40), p=topic_weights)]
    common = rng.choice(vocabulary, size=(n_documents, 40), p=background)
    documents = []
    for words in np.hstack([own, common]):
        terms, counts = np.unique(words, return_counts=True)
        documents.append(
            {f"t{term}": float(count) for term, count in zip(terms, counts, strict=True)}
        )
    return documents, labels


def write_synthetic_feed(path: Path, n_documents: int, chunk: int = 50_000) -> np.ndarray:
    """Write ``synthetic_documents`` as crawl feed lines (url, kind, keywords); return the topics.

    The documents are drawn ``chunk`` at a time (seeds 0, 1, ...) over the topic words of seed 0,
    so a feed of a million lines never holds more than one chunk of dicts.
    """
    labels = []
    with path.open("wb") as feed:
        for start in range(0, n_documents, chunk):
            size = min(chunk, n_documents - start)
            documents, topics = synthetic_documents(size, seed=start // chunk, topic_seed=0)
            labels.append(topics)
            feed.writelines(
                orjson.dumps(
                    {
                        "url": f"http://synthetic.test/{start + i}",
                        "kind": "record",
                        "keywords": counts,
                    }
                )
                + b"\n"
                for i, counts in enumerate(documents)
            )
    return np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)


def measure(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """Return (result, seconds, peak traced MB) of a call."""
    tracemalloc.start()
    start = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - start
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, elapsed, peak / 1e6


def skfuzzy_fixed_iterations(
    rows: sp.csr_matrix, k: int, iterations: int, initial: np.ndarray
) -> tuple[Any, ...]:
    """Run skfuzzy's c-means for exactly ``iterations`` steps on the dense rows."""
    dense = rows.toarray().astype(np.float64).T
    return tuple(skfuzzy.cluster.cmeans(dense, k, 2.0, error=0.0, maxiter=iterations, init=initial))


def speed(sizes: Sequence[int], iterations: int, skfuzzy_max: int) -> None:
    k = 20
    print(
        f"\n## speed and memory: {k} clusters, {iterations + 1} membership updates, m=2 euclidean"
    )
    print(
        f"{'N':>7} {'terms':>6} {'nnz':>9} | {'FCM s':>7} {'FCM MB':>7} | {'skfuzzy s':>9} "
        f"{'skfz MB':>8} | {'speed x':>7} {'memory x':>8} {'max|dU|':>8} {'PC':>5}"
    )
    jobs = []
    for n_documents in sizes:
        documents, labels = synthetic_documents(n_documents)
        start = time.perf_counter()
        tfidf = tfidf_vectors(documents).matrix
        vectorise_seconds = time.perf_counter() - start
        rng = np.random.default_rng(1)
        initial = rng.random((k, n_documents))
        initial /= initial.sum(axis=0)
        weights = (initial**2).T.astype(np.float32)
        first_centers = np.asarray((tfidf.T @ weights).T) / weights.sum(axis=0)[:, None]
        estimator = FuzzyCMeans(
            k, m=2.0, metric="euclidean", init=first_centers, tol=0.0, max_iter=iterations
        )
        model, ours_seconds, ours_mb = measure(partial(estimator.fit, tfidf))
        line = (
            f"{n_documents:>7} {tfidf.shape[1]:>6} {tfidf.nnz:>9} | "
            f"{ours_seconds:7.2f} {ours_mb:7.0f} | "
        )
        dense_gb = n_documents * tfidf.shape[1] * 8 / 1e9
        if n_documents <= skfuzzy_max:
            result, theirs_seconds, theirs_mb = measure(
                partial(skfuzzy_fixed_iterations, tfidf, k, iterations + 1, initial)
            )
            difference = np.abs(result[1].T - model.membership_).max()
            line += (
                f"{theirs_seconds:9.2f} {theirs_mb:8.0f} | {theirs_seconds / ours_seconds:7.1f} "
                f"{theirs_mb / ours_mb:8.1f} {difference:8.1e} {model.partition_coefficient_:5.3f}"
            )
        else:
            line += f"{'skipped':>9} {'':>8} | dense input alone would be {dense_gb:.0f} GB"
        print(line, flush=True)
        jobs.append((n_documents, documents, labels, vectorise_seconds))

    print(
        f"\nwebsim default job (tf-idf, LSA {DEFAULTS.svd_components}, cosine m="
        f"{DEFAULTS.fuzziness}, k-means++ x{DEFAULTS.n_init}, k={k} given):"
    )
    print(f"{'N':>7} {'tf-idf s':>8} {'job s':>7} {'job MB':>7} {'iters':>5} {'NMI':>6}")
    params = ClusteringParams(n_clusters=k)
    for n_documents, documents, labels, vectorise_seconds in jobs:
        collection = [PageToCluster(f"doc{i}", counts) for i, counts in enumerate(documents)]
        start = time.perf_counter()
        result = cluster_documents(collection, params)
        seconds = time.perf_counter() - start
        # A second, traced run for memory: tracemalloc slows the vectoriser's Python loops.
        _result, _seconds, megabytes = measure(partial(cluster_documents, collection, params))
        nmi = normalized_mutual_info_score(labels, result.labels)
        print(
            f"{n_documents:>7} {vectorise_seconds:8.2f} {seconds:7.2f} {megabytes:7.0f} "
            f"{result.validity['n_iter']:>5} {nmi:6.3f}",
            flush=True,
        )


def cluster_labels(report: Path) -> dict[int, int]:
    """Return page number -> cluster from a ``websim cluster`` report, read line by line (the
    report of a million pages is not loaded whole)."""
    labels: dict[int, int] = {}
    page = -1
    in_documents = False
    with report.open(encoding="utf-8") as lines:
        for line in lines:
            if not in_documents:
                in_documents = line.startswith('  "documents": [')
                continue
            if line.startswith('      "url": '):
                page = int(line.rsplit("/", 1)[1].rstrip('",\n'))
            elif line.startswith('      "cluster": '):
                labels[page] = int(line.split(":")[1].rstrip(",\n"))
            elif line.startswith("  ]"):
                break
    return labels


def run_cluster_command(feed: Path, report: Path, engine: str) -> tuple[float, float, str]:
    """Run ``websim cluster`` on the feed under ``/usr/bin/time -v``: (seconds, peak RSS GB, the
    command)."""
    command = [
        sys.executable, "-m", "websim_crawler", "cluster", str(feed), "-o", str(report),
        "--n-clusters", "20", "--engine", engine, "--no-progress",
    ]  # fmt: skip
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], capture_output=True, text=True, check=True
    )
    elapsed = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    assert elapsed and peak, done.stderr[-2000:]
    hours, minutes, seconds = elapsed.groups()
    wall = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    return wall, int(peak.group(1)) / 1e6, " ".join(command[1:])


def million(sizes: Sequence[int], cache: Path, dask: bool) -> None:
    print("\n## websim cluster on synthetic keyword feeds (20 topics), --n-clusters 20")
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("N | feed MB | engine | wall s | peak RSS GB | NMI | pages whose cluster differs")
    print("---|---|---|---|---|---|---")
    cache.mkdir(parents=True, exist_ok=True)
    for n_documents in sizes:
        feed = cache / f"synthetic-feed-{n_documents}.jsonl"
        topics_file = Path(f"{feed}.labels.npy")
        if not (feed.exists() and topics_file.exists()):
            np.save(topics_file, write_synthetic_feed(feed, n_documents))
        topics = np.load(topics_file)
        memory_labels: dict[int, int] = {}
        for engine in ("memory", "dask") if dask else ("memory",):
            report = cache / f"clusters-{n_documents}-{engine}.json"
            wall, peak_gb, command = run_cluster_command(feed, report, engine)
            labels = cluster_labels(report)
            report.unlink()
            pages = sorted(labels)
            nmi = normalized_mutual_info_score(topics[pages], [labels[page] for page in pages])
            if engine == "memory":
                memory_labels = labels
                differs = "-"
            else:
                differs = str(sum(labels[page] != memory_labels.get(page) for page in pages))
            print(
                f"{n_documents} | {feed.stat().st_size / 1e6:.0f} | {engine} | {wall:.0f} | "
                f"{peak_gb:.2f} | {nmi:.4f} | {differs}",
                flush=True,
            )
    print(f"command: {command}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("quality", "auto", "speed", "all"), default="all")
    parser.add_argument("--auto-seeds", type=int, default=3, help="seeds of the auto table")
    parser.add_argument("--seeds", type=int, default=10, help="seeds averaged in (a)")
    parser.add_argument("--sizes", default="1000,10000,100000", help="N values in (b)")
    parser.add_argument("--iterations", type=int, default=10, help="iterations timed in (b)")
    parser.add_argument(
        "--skfuzzy-max", type=int, default=10_000, help="largest N given to skfuzzy (dense)"
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--million", action="store_true", help="(c) only: websim cluster on 10k/100k/1M feeds"
    )
    parser.add_argument("--million-sizes", default="10000,100000,1000000", help="N values in (c)")
    parser.add_argument("--dask", action="store_true", help="(c): also with --engine dask")
    args = parser.parse_args()
    if args.million:
        sizes = [int(size) for size in args.million_sizes.split(",")]
        million(sizes, args.cache_dir, args.dask)
        return
    if args.part in ("quality", "auto", "all"):
        if not DATASETS.exists():
            raise SystemExit(f"datasets not found at {DATASETS}")
        big9 = list(load_big9(args.cache_dir))
        labelled = [*big9, load_webkb(args.cache_dir)]
        if args.part != "auto":
            for data in labelled:
                quality(data, args.seeds)
        docs = load_python_docs()
        if docs is None:
            print(f"python docs not found at {PYTHON_DOCS} (apt-get install python3.11-doc)")
        auto_sets = [*labelled, load_big9_site_years(big9), *([docs] if docs else [])]
        auto_table(auto_sets, args.auto_seeds)
    if args.part in ("speed", "all"):
        sizes = [int(size) for size in args.sizes.split(",")]
        speed(sizes, args.iterations, args.skfuzzy_max)


if __name__ == "__main__":
    main()
