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
    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_sites.py --routed-seeds 3
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
from support.real_apps import (  # noqa: E402
    AppMissing,
    GalleryCrawl,
    corpus,
    crawl_app,
    launchers,
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
    args = parser.parse_args(argv)
    records = corpus()
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
