"""``scrapy crawl deepweb`` against a real database browser: Datasette, rows linked by number.

Serves a SQLite table with full-text search through ``datasette serve`` on 127.0.0.1 (10 rows a
page, "Next page" links, each row linked to its row page by its number, links to the same query
as JSON, CSV and SQL) and crawls it as a user would (``-a follow=1``). The rows are real text:
the gold main texts of ``../shared/datasets/big9`` (360 news articles, 9 site labels; title =
the first line), or ``--generated N`` rows of generated sentences on three topics. Prints:

* coverage: record pages reached / rows the application lists for the queries (FTS5 match);
* chrome records: record pages that are no row page (JSON, CSV, SQL, export, sort, facet);
* result pages taken from a row link (a row labelled with the next page's number);
* rows whose text is missing from their record's main text (erased as site template);
* clustering of the record pages against their labels: NMI of ``websim cluster`` (the crawl's
  keywords, k = the number of labels) and of the baseline trafilatura + tf-idf + k-means
  (``trafilatura_folder.trafilatura_extract``, scikit-learn's tf-idf, ``clustering.kmeans``)
  over the same pages, mean and spread over ``--seeds`` seeds; and whether ``websim cluster``
  gives the same clusters for the feed in three shuffled orders.

Usage::

    .venv/bin/python benchmarks/datasette_crawl.py                 # big9's 360 rows
    .venv/bin/python benchmarks/datasette_crawl.py --generated 60  # no ../shared needed
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import normalized_mutual_info_score

REPO = Path(__file__).resolve().parents[1]
sys.path[:1] = [str(REPO / "benchmarks"), str(REPO), str(REPO / "tests")]

from clustering import DATASETS, kmeans, unpack  # noqa: E402
from support.database_browser import (  # noqa: E402
    ROW_PATH,
    Row,
    build_database,
    clusterings_in_shuffled_orders,
    datasette,
    generated_rows,
    matching_rows,
)
from trafilatura_folder import trafilatura_extract  # noqa: E402

from websim_crawler.cli import main as websim  # noqa: E402
from websim_crawler.core.io import iter_jsonl  # noqa: E402

# Words of many articles (every row listed) and the subjects big9's pages were chosen by.
BIG9_QUERIES = (
    "the", "obama", "storm", "apple", "trump", "microsoft", "iran", "car", "iraq", "japan",
    "google", "korea", "russia", "climate", "court",
)  # fmt: skip
GENERATED_QUERIES = ("river", "melody", "garden", "the", "of", "and", "to", "nothingmatches")


def big9_rows(datasets: Path, cache: Path) -> list[Row]:
    """Return big9's gold main texts as rows labelled by their site."""
    folder = unpack(datasets / "big9" / "big9.tar.xz", cache)
    rows = []
    with open(datasets / "big9" / "big9_site_labels.csv", encoding="utf-8") as handle:
        for number, entry in enumerate(csv.DictReader(handle), start=1):
            path = folder / entry["gold_file"].removeprefix("Extraction/")
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            title, _, body = text.partition("\n")
            rows.append(Row(number, " ".join(title.split())[:200], body.strip(), entry["site"]))
    return rows


def row_number(url: str) -> int | None:
    found = re.search(re.escape(ROW_PATH) + r"(\d+)$", url)
    return int(found.group(1)) if found else None


def crawl(table_url: str, queries: tuple[str, ...], folder: Path) -> tuple[int, Path, str]:
    feed, log = folder / "pages.jsonl", folder / "crawl.log"
    command = [sys.executable, "-m", "scrapy", "crawl", "deepweb", "-a"]
    command += [f"start_url={table_url}", "-a", "queries=" + ",".join(queries)]
    command += ["-a", "follow=1", "-a", "max_pages=60", "-O", str(feed)]
    command += ["-s", f"LOG_FILE={log}", "-s", "LOG_LEVEL=INFO"]
    finished = subprocess.run(command, cwd=REPO, check=False)
    return finished.returncode, feed, log.read_text(encoding="utf-8")


def websim_labels(feed: Path, urls: list[str], k: int, seed: int, folder: Path) -> list[int]:
    output = folder / f"clusters-{seed}.json"
    arguments = ["cluster", str(feed), "-o", str(output), "-s", f"WEBSIM_CLUSTERS_N={k}"]
    assert websim([*arguments, "-s", f"WEBSIM_CLUSTERS_SEED={seed}"]) == 0
    report = json.loads(output.read_text(encoding="utf-8"))
    cluster_of = {
        member: number
        for number, cluster in enumerate(report["clusters"])
        for member in cluster["members"]
    }
    return [cluster_of.get(url, -1) for url in urls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--generated", type=int, default=0, help="N generated rows, not big9")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "websim")
    parser.add_argument("--datasets", type=Path, default=DATASETS, help="../shared/datasets")
    args = parser.parse_args()
    if args.generated:
        rows, queries = generated_rows(args.generated), GENERATED_QUERIES
    else:
        rows, queries = big9_rows(args.datasets, args.cache_dir), BIG9_QUERIES
    label_of = {row.number: row.topic for row in rows}
    body_of = {row.number: row.body for row in rows}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        database = build_database(folder / "db.db", rows)
        listed = set().union(*(matching_rows(database, query) for query in queries))
        with datasette(database, folder / "datasette.log") as table_url:
            code, feed, log = crawl(table_url, queries, folder)
            pages = list(iter_jsonl(feed))
            records = [page for page in pages if page["kind"] == "record"]
            rows_reached = {row_number(page["url"]) for page in records} - {None}
            chrome = [page["url"] for page in records if row_number(page["url"]) is None]
            wrong_results = [
                page["url"]
                for page in pages
                if page["kind"] == "results" and row_number(page["url"]) is not None
            ]
            erased = [
                (page["url"], body_of[row_number(page["url"]) or 0][:80], page.get("main_text"))
                for page in records
                if row_number(page["url"]) is not None
                and " ".join(body_of[row_number(page["url"]) or 0].split()[:8]).lower()
                not in (page.get("main_text") or "").lower()
            ]
            urls = sorted({page["url"] for page in records if row_number(page["url"]) is not None})
            html: dict[str, bytes] = {}
            for url in urls:
                with urllib.request.urlopen(url, timeout=60) as response:
                    html[url] = response.read()
        truth = [label_of[row_number(url) or 0] for url in urls]
        k = len(set(truth))
        texts = [trafilatura_extract(html[url]) for url in urls]
        tfidf = TfidfVectorizer(stop_words="english", sublinear_tf=True, min_df=2).fit_transform(
            texts
        )
        scores: dict[str, list[float]] = {"websim": [], "trafilatura+tf-idf+k-means": []}
        for seed in range(args.seeds):
            ours = websim_labels(feed, urls, k, seed, folder)
            scores["websim"].append(normalized_mutual_info_score(truth, ours))
            theirs = kmeans(tfidf, k, seed)
            scores["trafilatura+tf-idf+k-means"].append(normalized_mutual_info_score(truth, theirs))
        clusterings = clusterings_in_shuffled_orders(feed, folder)
        order_free = clusterings[0] == clusterings[1] == clusterings[2]
    diagnosis = dict(re.findall(r"'(websim/diagnosis/[^']+)': (\d+)", log))
    kinds = Counter(page["kind"] for page in pages)
    print(f"rows: {len(rows)}, queries: {len(queries)}, rows listed for them: {len(listed)}")
    print(f"crawl exit code {code}; pages {dict(kinds)}")
    print(f"coverage: {len(rows_reached & listed)}/{len(listed)} = "
          f"{len(rows_reached & listed) / max(1, len(listed)):.3f}")  # fmt: skip
    print(f"chrome records: {len(chrome)}; result pages that are row pages: {len(wrong_results)}")
    print(f"rows whose text is missing from their record's main text: {len(erased)} {erased[:3]}")
    print(f"diagnosis stats: {diagnosis}")
    print(f"NMI against {k} labels over {len(urls)} record pages, {args.seeds} seeds:")
    for method, values in scores.items():
        array = np.asarray(values)
        print(f"  {method:28s} {array.mean():.3f} (min {array.min():.3f}, max {array.max():.3f})")
    print(f"same clusters for the feed in 3 shuffled orders: {order_free}")


if __name__ == "__main__":
    main()
