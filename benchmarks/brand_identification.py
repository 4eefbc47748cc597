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

``--screenshots`` renders every page the benchmark reads (references, distractors, article pages
and queries) with Chromium through the browser module, as ``similarity_captures.py`` renders its
sites (scripts on, 1280x800; served on 127.0.0.1 only, every other host refused unresolved, the
run failing if a non-loopback socket is seen): the kit pages from the dataset's own folder, so
their images and styles load, and never with a form submitted. The screenshots (cached by
content under ``--cache-dir``) are given to ``page_features`` beside each page's own HTML, and
the benchmark is run without and with them: a page that failed to render is counted and asked
without one. With ``--fit`` the trafilatura-eval pages are rendered too, and the visual stage is
fitted as a score of its own beside the other stages' combined score and the brand score, on the
named pairs and on every candidate pair.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/brand_identification.py [--question looks-alike]
    PYTHONPATH=. .venv/bin/python benchmarks/brand_identification.py --fit
    PYTHONPATH=. .venv/bin/python benchmarks/brand_identification.py --screenshots
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from similarity_captures import CONDITIONS, RenderLog, print_render_log, render_offline  # noqa: E402
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
RENDER_CONDITION = "scripts-on-1280"  # as ``websim compare --render`` renders a page
SCREENSHOTS_CACHE = Path(tempfile.gettempdir()) / "websim-brand-shots"  # --screenshots' renders


def shingles(text: str, size: int = 4) -> set[tuple[str, ...]]:
    """Return the page's 4-token shingles."""
    tokens = re.findall(r"\w+", text.lower())
    return {tuple(tokens[i : i + size]) for i in range(max(0, len(tokens) - size + 1))}


def jaccard(first: set[tuple[str, ...]], second: set[tuple[str, ...]]) -> float:
    """Return the Jaccard of two shingle sets."""
    return len(first & second) / len(first | second) if first | second else 0.0


def fitted_scores(
    match: Match, stage_weights: tuple[float, ...], visual_apart: bool = False
) -> list[float]:
    """Return a match's scores the fit reads: the combined score of its stages (their weighted
    mean where they have data), the visual stage's score apart when ``visual_apart`` (NaN: no
    screenshots), and its brand score (NaN: none)."""
    weights = dict(zip(match.stages, stage_weights, strict=True))
    if visual_apart:
        weights["visual"] = 0.0
    scored = [
        (weights[stage], score)
        for stage, score in match.stages.items()
        if score is not None and weights[stage] > 0
    ]
    total = sum(weight for weight, _ in scored)
    stages = sum(weight * score for weight, score in scored) / total if total else math.nan
    visual = match.stages.get("visual")
    visual_score = [math.nan if visual is None else visual] if visual_apart else []
    return [stages, *visual_score, match.brand.score if match.brand is not None else math.nan]


def reference_index(
    rows: Sequence[dict[str, str]],
    kits: Path,
    others: Sequence[tuple[str, bytes]],
    shots: Mapping[str, bytes],
) -> tuple[ReferenceIndex, dict[str, str], dict[str, str]]:
    """Return the index of the kits' references and distractors and the other sites' pages
    (each with its screenshot when there is one), the brand of each indexed kit page by URL,
    and each brand's reference page path."""
    index = ReferenceIndex()
    brand_of: dict[str, str] = {}
    reference_of: dict[str, str] = {}
    for row in rows:
        if row["role"] in ("reference", "distractor"):
            path = kits / row["page_path"]
            url = path.resolve().as_uri()
            index.add(page_features(path.read_bytes(), url=url, screenshot=shots.get(url)))
            brand_of[url] = row["brand"]
            reference_of[row["brand"]] = row["page_path"]
    for url, html in others:
        index.add(page_features(html, url=url, screenshot=shots.get(url)))
    return index, brand_of, reference_of


def fit(
    rows: list[dict[str, str]],
    kits: Path,
    others: Sequence[tuple[str, bytes]],
    shots: Mapping[str, bytes],
) -> None:
    """Fit and print the brand question's brand share and threshold (see the docstring); with
    screenshots, the visual stage's weight apart from the other stages too."""
    index, brand_of, _ = reference_index(rows, kits, others, shots)
    asked: list[tuple[str, bytes, str | None]] = []  # (URL, HTML, brand when it has one)
    for row in rows:
        if row["role"] != "query" or row["kit"] == TUNED_KIT:
            path = kits / row["page_path"]
            brand = row["brand"] if row["role"] == "query" else None
            asked.append((path.resolve().as_uri(), path.read_bytes(), brand))
    asked += [(url, html, None) for url, html in others]
    scores: list[list[float]] = []
    labels: list[bool] = []
    unnamed_scores: list[list[float]] = []  # with screenshots: every other candidate pair
    unnamed_labels: list[bool] = []
    best_of_others: list[float] = []  # each page of no brand: its best score against another
    stage_weights = index.asked("brand").stage_weights
    for itself, html, brand in asked:
        page = page_features(html, url=itself + "#query", screenshot=shots.get(itself))
        matches = [m for m in index.query(page, "brand", FIT_CANDIDATES) if m.url != itself]
        for match in matches:
            named_pair = match.brand is not None and match.brand.named
            if not (named_pair or shots):
                continue  # judged at the threshold for unnamed pairs, not the fitted one
            pair_scores = fitted_scores(match, stage_weights, visual_apart=bool(shots))
            right = brand is not None and brand_of.get(match.url) == brand
            (scores if named_pair else unnamed_scores).append(pair_scores)
            (labels if named_pair else unnamed_labels).append(right)
        named = [m.score or 0.0 for m in matches if m.brand is not None and m.brand.named]
        if brand is None:
            best_of_others.append(max(named, default=0.0))
    if shots:  # the visual stage's weight apart, on the named pairs and on every pair
        for which, pairs, pair_labels in (
            ("named pairs", scores, labels),
            ("every candidate pair", scores + unnamed_scores, labels + unnamed_labels),
        ):
            visual_fit = StageCombiner(("stages", "visual", "brand"))
            weights = visual_fit.fit(np.array(pairs), np.array(pair_labels)).weights_
            print(
                f"with screenshots, {which} ({len(pair_labels)}, {sum(pair_labels)} right): "
                f"weights of the stages but visual, visual, brand: "
                f"{', '.join(f'{weight:.4f}' for weight in weights)}; visual share of the "
                f"stages: {weights[1] / (weights[0] + weights[1] or 1.0):.4f}"
            )
        scores = [[stage, brand_score] for stage, _, brand_score in scores]
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


def render_screenshots(
    folder: Path, pages: Mapping[str, str], cache: Path
) -> tuple[dict[str, bytes], list[str], RenderLog | None]:
    """Render the files ``pages`` (name -> the URL the page is known by) of ``folder`` to PNGs,
    confined to 127.0.0.1 (``render_offline``), cached under ``cache`` by name and content.

    Return the screenshots by URL, the URLs of the pages that failed to render (asked without
    one; tried again next run) and the renders' log (None: all cached).
    """
    cache.mkdir(parents=True, exist_ok=True)
    keys = {
        name: hashlib.sha256(name.encode() + b"\0" + (folder / name).read_bytes()).hexdigest()[:24]
        for name in pages
    }
    missing = [name for name in pages if not (cache / f"{keys[name]}.png").is_file()]
    log = None
    if missing:
        results, log = render_offline(
            folder, missing, {RENDER_CONDITION: CONDITIONS[RENDER_CONDITION]}
        )
        for name, result in zip(missing, results[RENDER_CONDITION], strict=True):
            if result is not None and result.screenshot:
                written = cache / f"{keys[name]}.png.part"  # replaced only when whole
                written.write_bytes(result.screenshot)
                written.replace(cache / f"{keys[name]}.png")
    shots: dict[str, bytes] = {}
    failed: list[str] = []
    for name, url in pages.items():
        png = cache / f"{keys[name]}.png"
        if png.is_file():
            shots[url] = png.read_bytes()
        else:
            failed.append(url)
    return shots, failed, log


def all_screenshots(
    kits: Path, rows: Sequence[dict[str, str]], others: Sequence[tuple[str, bytes]], cache: Path
) -> dict[str, bytes]:
    """Render every kit page (from the dataset's folder, its images and styles beside it) and
    every page of other sites (written under ``cache``), by URL; print what was rendered and
    what failed."""
    kit_pages = {row["page_path"]: (kits / row["page_path"]).resolve().as_uri() for row in rows}
    served = cache / "other-sites"
    served.mkdir(parents=True, exist_ok=True)
    other_names: dict[str, str] = {}
    for url, html in others:
        name = hashlib.sha256(url.encode()).hexdigest()[:24] + ".html"
        if not (served / name).is_file() or (served / name).read_bytes() != html:
            (served / name).write_bytes(html)
        other_names[name] = url
    shots: dict[str, bytes] = {}
    for title, folder, pages in (
        ("kit pages", kits, kit_pages),
        ("pages of other sites", served, other_names),
    ):
        found, failed, log = render_screenshots(folder, pages, cache / "shots")
        shots |= found
        if log is not None:
            print_render_log(f"Screenshots of the {title}", log)
        print(
            f"screenshots of the {title}: {len(found)} of {len(pages)}"
            f" ({'all cached' if log is None else f'{log.rendered} rendered now'});"
            f" failed, asked without one: {len(failed)} {failed}"
        )
    return shots


def evaluate(
    rows: Sequence[dict[str, str]],
    kits: Path,
    distractors: Sequence[tuple[str, bytes]],
    question: str,
    shots: Mapping[str, bytes],
) -> dict[str, str | None]:
    """Index the references and article pages, match the queries and the article pages, print
    the table, false positives and misses; return each query's first brand by its page path."""
    index, brand_of, reference_of = reference_index(rows, kits, distractors, shots)
    print(
        f"index: {len(index)} references ({len(distractors)} article pages), question "
        f"{question}, {sum(url in shots for url in index.urls)} with a screenshot"
    )
    results: dict[tuple[str, str], list[tuple[bool, bool, bool]]] = {}
    right_scores: dict[str, list[float]] = {}
    misses: list[str] = []
    firsts: dict[str, str | None] = {}
    for row in rows:
        if row["role"] != "query":
            continue
        path = kits / row["page_path"]
        html = path.read_bytes()
        url = path.resolve().as_uri()
        reference_html = (kits / reference_of[row["brand"]]).read_text("utf-8", "replace")
        copy = jaccard(shingles(html.decode("utf-8", "replace")), shingles(reference_html)) >= 0.5
        query = page_features(html, url=url, screenshot=shots.get(url))
        matches = index.query(query, question, 5)
        brands = [brand_of.get(match.url, "other") for match in matches]
        firsts[row["page_path"]] = brands[0] if brands else None
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
        query = page_features(html, url=url + "#query", screenshot=shots.get(url))
        others = [match for match in index.query(query, question, 2) if match.url != url]
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
    return firsts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--question", default="brand")
    parser.add_argument("--fit", action="store_true", help="fit the brand question instead")
    parser.add_argument("--screenshots", action="store_true", help="render; without and with")
    parser.add_argument("--cache-dir", type=Path, default=SCREENSHOTS_CACHE, help="the renders")
    args = parser.parse_args()
    datasets = datasets_dir()
    kits = datasets / "phishing-kits" if datasets else None
    if kits is None or not (kits / "labels.csv").is_file():
        print("skipped: ../shared/datasets/phishing-kits is absent")
        return 0
    rows = list(csv.DictReader((kits / "labels.csv").open(encoding="utf-8")))
    distractors = article_pages(DISTRACTOR_PAGES)
    if args.fit:
        hosts = {url.split("/")[2] for url, _ in distractors}
        others = trafilatura_pages(OTHER_SITES_CACHE, hosts, DISTRACTOR_PAGES)
        shots = all_screenshots(kits, rows, others, args.cache_dir) if args.screenshots else {}
        fit(rows, kits, others, shots)
        return 0
    if not args.screenshots:
        evaluate(rows, kits, distractors, args.question, {})
        return 0
    shots = all_screenshots(kits, rows, distractors, args.cache_dir)
    print("\n## without screenshots")
    without = evaluate(rows, kits, distractors, args.question, {})
    print("\n## with screenshots")
    with_shots = evaluate(rows, kits, distractors, args.question, shots)
    changed = [
        f"  {page}: {without[page]} -> {with_shots[page]}"
        for page in without
        if without[page] != with_shots[page]
    ]
    print(f"\nfirst brands the screenshots changed: {len(changed)}")
    print("\n".join(changed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
