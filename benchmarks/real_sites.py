"""Crawl the gallery of real search applications (tests/support/real_apps.py) and print one table.

For each application, started on 127.0.0.1 with a corpus of Debian's Python documentation
(python3.11-doc, labelled by section): whether the search form was found, records reached /
records the application lists for the queries (coverage), chrome pages stored as records, empty
result pages counted by the crawl (``websim/diagnosis/result_pages_empty``) / served by the site,
lists with records missed on result pages with several lists, pages per second, and, over the
records reached, the NMI of the crawl's clustering (``websim cluster``) and of a trafilatura +
tf-idf + k-means baseline against the section labels. The query-routed applications (MediaWiki,
DokuWiki) and the generated routed sites (``routed-*``) are issue 33's.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_sites.py [--only NAME ...]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_sites.py --surfacing 100   # no queries
    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_sites.py --routed-seeds 3

With ``--runs N``, each application named by ``--only`` is crawled N times in a row (with
``--queries``, those queries; with ``--loaded``, a process spinning on every core) and the
table has one row per run: coverage, pages refused for their own bounds, pages deferred under
the crawl's pressure, and the spread of coverage at the end (issue 31: the same answer every
run). The JavaScript search of the Python documentation, as the issue tried it:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_sites.py --only sphinx-search --runs 3 \
        --queries zoneinfo asyncio datetime decimal pathlib [--loaded]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trafilatura
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import normalized_mutual_info_score

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1]),
    str(Path(__file__).resolve().parents[1] / "tests"),
]
from support.load import every_core_busy  # noqa: E402
from support.real_apps import (  # noqa: E402
    AppMissing,
    GalleryCrawl,
    corpus,
    crawl_app,
    launchers,
    surface_app,
)
from support.result_pages import result_page_account  # noqa: E402
from support.routed_site import Variant, routed_launcher  # noqa: E402


def baseline_nmi(crawl: GalleryCrawl, labels: list[str], k: int) -> float:
    """NMI of trafilatura's main text + tf-idf + k-means (k given) on the records reached."""
    texts = [trafilatura.extract(item["html"]) or "" for item in crawl.records]
    rows = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(texts)
    predicted = KMeans(k, n_init=10, random_state=0).fit_predict(rows)
    return float(normalized_mutual_info_score(labels, predicted))


def websim_nmi(crawl: GalleryCrawl, labels: dict[str, str], k: int, folder: Path) -> float:
    """NMI of ``websim cluster --n-clusters k`` on the records reached."""
    feed, output = folder / "records.jsonl", folder / "clusters.json"
    feed.write_text("".join(json.dumps(item) + "\n" for item in crawl.records), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "websim_crawler", "cluster", str(feed), "-o", str(output),
         "--n-clusters", str(k), "--kind", "record", "--no-progress"],
        check=True, capture_output=True,
    )  # fmt: skip
    report = json.loads(output.read_text(encoding="utf-8"))
    assigned = {
        url: number
        for number, cluster in enumerate(report["clusters"])
        for url in cluster["members"]
    }
    urls = [url for url in labels if url in assigned]
    return float(
        normalized_mutual_info_score([labels[url] for url in urls], [assigned[u] for u in urls])
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="application names (default: all)")
    parser.add_argument(
        "--routed-seeds",
        type=int,
        default=0,
        metavar="N",
        help="crawl only generated routed sites: every routing x number of lists, seeds 0..N-1, "
        "and print how many meet each target",
    )
    parser.add_argument("--runs", type=int, default=0, metavar="N", help="crawl each app N times")
    parser.add_argument("--queries", nargs="*", default=(), help="with --runs: the queries")
    parser.add_argument("--loaded", action="store_true", help="with --runs: every core busy")
    parser.add_argument(
        "--surfacing",
        type=int,
        default=0,
        metavar="Q",
        help="crawl each application with no queries (surfacing, at most Q queries) and print "
        "the records reached of the corpus, queries, result pages and the size estimate",
    )
    args = parser.parse_args(argv)
    records = corpus()
    if args.surfacing:
        return surfacing_table(records, args.only, args.surfacing)
    if args.runs:
        for name in args.only or []:
            repeated_runs(name, launchers()[name], records, args.runs, tuple(args.queries), args)
        return 0
    named = routed_sweep(args.routed_seeds) if args.routed_seeds else launchers()
    met = {"coverage >= 0.95": 0, "no chrome": 0, "empty counted": 0, "no list dropped": 0}
    print(
        f"{'application':<28} {'form':>4} {'listed':>6} {'reached':>7} {'coverage':>8} "
        f"{'chrome':>6} {'empty':>5} {'dropped':>7} {'pages':>5} {'pages/s':>7} "
        f"{'NMI websim':>10} {'NMI baseline':>12}"
    )
    for name, launcher in named.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as workdir:
            folder = Path(workdir)
            try:
                with launcher(records, folder / "app") as app:
                    crawl = crawl_app(app, folder)
                    labels = {item["url"]: app.label_of(item["url"]) for item in crawl.records}
                account = result_page_account(app, crawl)
            except AppMissing as missing:
                print(f"{name:<28} skipped: {missing}")
                continue
            counted = crawl.stats.get("websim/diagnosis/result_pages_empty", 0)
            empty = f"{counted}/{account.empty_pages}" if account else f"{counted}/?"
            dropped = str(len(account.dropped_lists(crawl))) if account else "?"
            nmi = baseline = float("nan")
            k = len(set(labels.values()))
            if k > 1 and len(crawl.records) > k:
                nmi = websim_nmi(crawl, labels, k, folder)
                baseline = baseline_nmi(crawl, list(labels.values()), k)
            print(
                f"{name:<28} {'yes' if crawl.form_found else 'no':>4} {len(crawl.listed):>6} "
                f"{len(crawl.reached):>7} {crawl.coverage:>8.2f} {len(crawl.chrome_records):>6} "
                f"{empty:>5} {dropped:>7} {crawl.pages:>5} {crawl.pages / crawl.seconds:>7.1f} "
                f"{nmi:>10.3f} {baseline:>12.3f}",
                flush=True,
            )
            met["coverage >= 0.95"] += crawl.coverage >= 0.95
            met["no chrome"] += not crawl.chrome_records
            met["empty counted"] += account is not None and counted == account.empty_pages
            met["no list dropped"] += dropped == "0"
    if args.routed_seeds:
        print(f"of {len(named)} generated sites: " + ", ".join(f"{k} {v}" for k, v in met.items()))
    return 0


def surfacing_table(records: list[Any], only: Sequence[str] | None, max_queries: int) -> int:
    """Surface every application with no queries (the JavaScript searches rendered); one row
    each: records its result pages list (``surface_app``) of those it holds, queries, result
    pages, wall time, the crawl's size estimate and why it stopped."""
    print(
        f"{'application':<28} {'reached':>7} {'of':>4} {'coverage':>8} {'queries':>7} "
        f"{'pages':>5} {'seconds':>7} {'estimate':>22} stopped"
    )
    for name, launcher in launchers().items():
        if (only and name not in only) or name.startswith("routed-"):
            continue  # the generated routed sites answer only their three test queries
        with tempfile.TemporaryDirectory() as workdir:
            try:
                with launcher(records, Path(workdir) / "app") as app:
                    surfaced = surface_app(app, Path(workdir), max_queries)
                    loaded = app.records_loaded()
            except AppMissing as missing:
                print(f"{name:<28} skipped: {missing}")
                continue
        stats = surfaced.stats
        estimate = (
            f"{stats.get('websim/surfacing/estimate')} "
            f"({stats.get('websim/surfacing/estimate_low')}-"
            f"{stats.get('websim/surfacing/estimate_high')})"
        )
        print(
            f"{name:<28} {len(surfaced.reached):>7} {loaded:>4} "
            f"{len(surfaced.reached) / loaded:>8.3f} "
            f"{stats.get('websim/surfacing/queries', 0):>7} "
            f"{stats.get('websim/surfacing/result_pages', 0):>5} {surfaced.seconds:>7.0f} "
            f"{estimate:>22} "
            f"{stats.get('websim/surfacing/stopped', 'exit ' + str(surfaced.exit_code))}",
            flush=True,
        )
    return 0


REFUSED = ("render_memory", "analysis_timeout", "too_large", "too_many_elements")
PRESSURE = ("websim/render/deferred", "websim/render/retried_alone", "websim/analysis/deferred")


def repeated_runs(
    name: str, launcher: Any, records: list[Any], runs: int, queries: tuple[str, ...], args: Any
) -> None:
    """Crawl one application ``runs`` times in a row; print coverage per run and its spread."""
    described = ", ".join(queries) or "the gallery's"
    load = "every core busy" if args.loaded else "quiet"
    print(f"{name}: {runs} runs, queries {described}, {load}")
    print("| run | listed | reached | coverage | refused (own bounds) | deferred / alone / "
          "analyses deferred | seconds |\n|---|---|---|---|---|---|---|")  # fmt: skip
    coverages = []
    with every_core_busy(args.loaded):
        for run in range(1, runs + 1):
            with (
                tempfile.TemporaryDirectory() as workdir,
                launcher(records, Path(workdir) / "app") as app,
            ):
                crawl = crawl_app(app, Path(workdir), queries)
            refused = sum(crawl.stats.get(f"websim/pages/failed/{why}", 0) for why in REFUSED)
            refused += sum(crawl.stats.get(f"websim/pages/dropped/{why}", 0) for why in REFUSED)
            pressure = " / ".join(str(crawl.stats.get(key, 0)) for key in PRESSURE)
            coverages.append(crawl.coverage)
            print(
                f"| {run} | {len(crawl.listed)} | {len(crawl.reached)} | {crawl.coverage:.3f} | "
                f"{refused} | {pressure} | {crawl.seconds:.0f} |",
                flush=True,
            )
    print(f"spread of coverage {max(coverages) - min(coverages):.3f} (target 0); "
          f"lowest {min(coverages):.3f} (target >= 0.95)")  # fmt: skip


def routed_sweep(seeds: int) -> dict[str, Any]:
    """Return launchers of generated routed sites: every routing and number of lists, footer
    chrome, odd ids and a page past the end, for seeds ``0..seeds-1``."""
    return {
        variant.name: routed_launcher(variant)
        for seed in range(seeds)
        for routing in ("path", "query", "both")
        for lists in (1, 2, 3)
        for variant in [Variant(routing, lists, seed=seed)]
    }


if __name__ == "__main__":
    raise SystemExit(main())
