"""Which brand does a phishing-kit page imitate? Top-1/top-5 brand of real kit pages.

Data (``../shared/datasets/phishing-kits``, or ``$WEBSIM_DATASETS``; used as files only, never
served or run): zphisher's brand login pages are the references, with its four pages of other
brands and 120 article pages of other sites (article-extraction-benchmark, one per host) beside
them; ShellPhish's and HiddenEye's pages of the same brands are the queries, each right when the
best reference is zphisher's page of its brand. ShellPhish is the kit the features were tuned
on; HiddenEye was held out until the brand names were made to rank (both kits were looked at
for that: RESULTS), and is reported apart; each is split into near-copies of the reference
(4-token shingle Jaccard of the HTML >= 0.5) and independently made pages. The article pages
are also asked as queries of nothing: the share judged "similar" to some reference is the false
positive rate.

``--fit`` fits the ``brand`` question's brand share and threshold instead (``StageCombiner``: a
logistic regression on the weighted mean of the stages' combined score and the brand score) on the
candidate pairs of the tuned kit's pages (its brand's reference: similar; the others: not), and
of zphisher's own pages and 120 trafilatura-eval pages of other hosts, each asked without itself
(none similar), against an index of zphisher's pages and those 120 in place of the article
pages. Only the pairs both of whose pages name one brand (``BrandScore.named``) are read: the
others are judged at the threshold for unnamed pairs. HiddenEye and the article pages are left
out of the fit.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/brand_identification.py [--question looks-alike]
    PYTHONPATH=. .venv/bin/python benchmarks/brand_identification.py --fit
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.datasets import article_pages, datasets_dir, trafilatura_pages  # noqa: E402

from websim_crawler.core.reference_index import Match, ReferenceIndex  # noqa: E402
from websim_crawler.core.similarity.combine import StageCombiner  # noqa: E402
from websim_crawler.core.similarity.comparison import page_features  # noqa: E402

TUNED_KIT, HELD_OUT_KIT = "shellphish", "hiddeneye"
DISTRACTOR_PAGES = 120
FITTED_SCORES = ("stages", "brand")
OTHER_SITES_CACHE = Path(tempfile.gettempdir()) / "websim-index-bench"  # trafilatura-eval unpacked
FIT_CANDIDATES = 20  # candidate pairs per page the fit reads (as many as the question compares)
FALSE_POSITIVES = 0.01  # the bound on pages of other sites judged similar


def shingles(text: str, size: int = 4) -> set[tuple[str, ...]]:
    """Return the page's 4-token shingles."""
    tokens = re.findall(r"\w+", text.lower())
    return {tuple(tokens[i : i + size]) for i in range(max(0, len(tokens) - size + 1))}


def jaccard(first: set[tuple[str, ...]], second: set[tuple[str, ...]]) -> float:
    """Return the Jaccard of two shingle sets."""
    return len(first & second) / len(first | second) if first | second else 0.0


def fitted_scores(match: Match, stage_weights: tuple[float, ...]) -> list[float]:
    """Return a match's scores the fit reads: the combined score of its stages (their weighted
    mean where they have data) and its brand score (NaN: none)."""
    scored = [
        (weight, score)
        for weight, score in zip(stage_weights, match.stages.values(), strict=True)
        if score is not None and weight > 0
    ]
    total = sum(weight for weight, _ in scored)
    stages = sum(weight * score for weight, score in scored) / total if total else math.nan
    return [stages, match.brand.score if match.brand is not None else math.nan]


def fit(rows: list[dict[str, str]], kits: Path, article_hosts: set[str]) -> None:
    """Fit and print the brand question's brand share and threshold (see the docstring)."""
    index = ReferenceIndex()
    brand_of: dict[str, str] = {}
    for row in rows:
        if row["role"] in ("reference", "distractor"):
            path = kits / row["page_path"]
            index.add(page_features(path.read_bytes(), url=path.resolve().as_uri()))
            brand_of[path.resolve().as_uri()] = row["brand"]
    others = trafilatura_pages(OTHER_SITES_CACHE, article_hosts, DISTRACTOR_PAGES)
    for url, html in others:
        index.add(page_features(html, url=url))
    asked: list[tuple[str, bytes, str | None]] = []  # (URL, HTML, brand when it has one)
    for row in rows:
        if row["role"] != "query" or row["kit"] == TUNED_KIT:
            path = kits / row["page_path"]
            brand = row["brand"] if row["role"] == "query" else None
            asked.append((path.resolve().as_uri(), path.read_bytes(), brand))
    asked += [(url, html, None) for url, html in others]
    scores: list[list[float]] = []
    labels: list[bool] = []
    best_of_others: list[float] = []  # each page of no brand: its best score against another
    stage_weights = index.asked("brand").stage_weights
    for itself, html, brand in asked:
        page = page_features(html, url=itself + "#query")
        matches = [m for m in index.query(page, "brand", FIT_CANDIDATES) if m.url != itself]
        for match in matches:
            if match.brand is None or not match.brand.named:
                continue  # judged at the threshold for unnamed pairs, not the fitted one
            scores.append(fitted_scores(match, stage_weights))
            labels.append(brand is not None and brand_of.get(match.url) == brand)
        named = [m.score or 0.0 for m in matches if m.brand is not None and m.brand.named]
        if brand is None:
            best_of_others.append(max(named, default=0.0))
    combiner = StageCombiner(FITTED_SCORES).fit(np.array(scores), np.array(labels))
    stages, brand_weight = combiner.weights_.tolist()
    print(
        f"index: {len(index)} references ({len(others)} trafilatura-eval pages); pairs: "
        f"{len(labels)} ({sum(labels)} of a page and its brand's reference)"
    )
    share = brand_weight / (stages + brand_weight)
    print(f"brand share: {share:.4f}; threshold: {combiner.threshold_:.4f}")
    # the least threshold that judges at most FALSE_POSITIVES of the pages of no brand similar
    allowed = int(FALSE_POSITIVES * len(best_of_others))
    bounded = sorted(best_of_others, reverse=True)[allowed] + 1e-4
    print(
        f"threshold for <= {FALSE_POSITIVES:.0%} of {len(best_of_others)} pages of no brand "
        f"similar (at the current brand share): {bounded:.4f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--question", default="brand")
    parser.add_argument("--fit", action="store_true", help="fit the brand question instead")
    args = parser.parse_args()
    datasets = datasets_dir()
    kits = datasets / "phishing-kits" if datasets else None
    if kits is None or not (kits / "labels.csv").is_file():
        print("skipped: ../shared/datasets/phishing-kits is absent")
        return 0
    rows = list(csv.DictReader((kits / "labels.csv").open(encoding="utf-8")))
    index = ReferenceIndex()
    reference_of: dict[str, str] = {}
    brand_of: dict[str, str] = {}
    for row in rows:
        if row["role"] in ("reference", "distractor"):
            path = kits / row["page_path"]
            url = path.resolve().as_uri()
            index.add(page_features(path.read_bytes(), url=url))
            brand_of[url] = row["brand"]
            reference_of[row["brand"]] = row["page_path"]
    distractors = article_pages(DISTRACTOR_PAGES)
    if args.fit:
        fit(rows, kits, {url.split("/")[2] for url, _ in distractors})
        return 0
    for url, html in distractors:
        index.add(page_features(html, url=url))
    print(
        f"index: {len(index)} references ({len(distractors)} article pages), question "
        f"{args.question}"
    )
    results: dict[tuple[str, str], list[tuple[bool, bool, bool]]] = {}
    right_scores: dict[str, list[float]] = {}
    misses: list[str] = []
    for row in rows:
        if row["role"] != "query":
            continue
        path = kits / row["page_path"]
        html = path.read_bytes()
        reference_html = (kits / reference_of[row["brand"]]).read_text("utf-8", "replace")
        copy = jaccard(shingles(html.decode("utf-8", "replace")), shingles(reference_html)) >= 0.5
        matches = index.query(page_features(html, url=path.resolve().as_uri()), args.question, 5)
        brands = [brand_of.get(match.url, "other") for match in matches]
        top1 = bool(brands) and brands[0] == row["brand"]
        top5 = row["brand"] in brands
        similar = top1 and matches[0].verdict == "similar"
        results.setdefault((row["kit"], "copies" if copy else "independent"), []).append(
            (top1, top5, similar)
        )
        if top1:
            right_scores.setdefault(row["kit"], []).append(matches[0].score or 0.0)
        if not top1:
            first = matches[0] if matches else None
            misses.append(
                f"  {row['kit']}/{row['brand']}: first {brands[0] if brands else None}"
                f" ({first.to_dict() if first else ''})"
            )
    print(f"{'kit':<24}{'pages':<13}{'n':>4}{'top-1':>8}{'top-5':>8}{'similar':>9}")
    for kit in (TUNED_KIT, HELD_OUT_KIT):
        for kind in ("copies", "independent", "all"):
            outcomes = [
                outcome
                for (name, which), found in results.items()
                if name == kit and kind in (which, "all")
                for outcome in found
            ]
            if outcomes:
                top1 = sum(a for a, _, _ in outcomes) / len(outcomes)
                top5 = sum(b for _, b, _ in outcomes) / len(outcomes)
                similar = sum(c for _, _, c in outcomes) / len(outcomes)
                label = f"{kit} ({'tuned' if kit == TUNED_KIT else 'also seen'})"
                print(
                    f"{label:<24}{kind:<13}{len(outcomes):>4}{top1:>8.3f}{top5:>8.3f}{similar:>9.3f}"
                )
    false_positives: list[str] = []
    best_other: list[float] = []
    for url, html in distractors:
        query = page_features(html, url=url + "#query")
        others = [match for match in index.query(query, args.question, 2) if match.url != url]
        if others and others[0].verdict == "similar":
            false_positives.append(f"  {url} -> {others[0].url}: {others[0].reason}")
        best_other.append(others[0].score or 0.0 if others else 0.0)
    print(f"article pages judged similar to another: {len(false_positives)}/{len(distractors)}")
    print("\n".join(false_positives))
    for kit, scores in sorted(right_scores.items()):
        quartiles = [round(value, 3) for value in sorted(scores)[:: max(1, len(scores) // 4)]]
        print(f"scores of right first matches, {kit}: {quartiles}")
    print(f"best score of an article page against another: {max(best_other):.3f}")
    print("misses:")
    print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
