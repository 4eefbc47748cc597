"""Near-duplicate detection: quality on planted and candidate pairs, speed and memory at scale.

Data from ``../shared/datasets`` (never copied into the repository; tarballs are unpacked once
into ``--cache-dir``):

(a) Quality.
  * Planted: real pages (article-extraction-benchmark, Dragnet) are the bases; pages that already
    share sentences with another base are set aside first (their count is printed). For each base
    page A one copy is planted: a *mirror* (the same HTML on another host, same path), an
    *inclusion* (A's HTML with paragraphs of an unused Dragnet gold text appended, on A's site or
    another), or a *partial* copy (half of A's long sentences and as many donor sentences in a new
    page, linking to A or not). Ground truth is the construction: A-copy pairs with their class
    and relation. Precision and recall per class, and relation accuracy, are printed.
  * One site: the bundled demo site's 40 distinct records, all and random subsets, as HTML items
    and as analysed items (main chunks): pairs reported (every one is a false pair).
  * Candidates: ``neardup-candidates`` pairs are first checked on their gold texts (sentence sets
    with the same splitter and L); the checked class is the truth for the detector run on the
    pages' HTML. The table shows the listed label against the checked one.
(b) Scale: a generated collection of pages built from real sentences (each made unique per page),
  with site boilerplate, link menus and planted mirrors, inclusions and partial copies (6 pairs
  per 20 pages). Each size runs in a child process that reports pages per second and its peak
  resident memory; the exact index and the MinHash/LSH path are compared.

Usage::

    .venv/bin/python benchmarks/neardup.py                      # quality + scale 10k, 100k
    .venv/bin/python benchmarks/neardup.py --million            # also 1M pages (a few minutes)
    .venv/bin/python benchmarks/neardup.py --skip-quality --sizes 10000
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import gzip
import json
import random
import re
import resource
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import lxml.html

from websim_crawler.core.html import parse_html
from websim_crawler.core.neardup import (
    NearDuplicateFinder,
    NeardupParams,
    PageSentences,
    find_near_duplicates,
    page_sentences,
)
from websim_crawler.core.neardup.content import content_texts
from websim_crawler.core.neardup.pages import CHUNKS_ONLY
from websim_crawler.core.neardup.relations import CLASSES, pair_class
from websim_crawler.core.neardup.sentences import normalize_sentence, split_sentences
from websim_crawler.core.page import analyse_page
from websim_crawler.demo.site import Archive, record_page
from websim_crawler.errors import WebsimError

DATASETS = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
AEB_DIR = DATASETS / "article-extraction-benchmark"
HTML_CLEANING = DATASETS / "html-cleaning"
CANDIDATES = DATASETS / "neardup-candidates" / "neardup_candidates.csv"
DEFAULT_CACHE = Path("/tmp/websim-neardup-bench")
SUBSETS = ("dragnet_data", "cleaneval-dev", "cleaneval-final", "CleanPortalEval-master")
PairKey = frozenset[str]


# --- data ---------------------------------------------------------------------------------------


def unpack(cache: Path) -> None:
    """Unpack the html-cleaning subsets the benchmark reads into the cache folder."""
    cache.mkdir(parents=True, exist_ok=True)
    for name in SUBSETS:
        if not (cache / name).is_dir():
            with tarfile.open(HTML_CLEANING / f"{name}.tar.xz") as archive:
                archive.extractall(cache, filter="data")


def aeb_pages() -> list[tuple[str, str]]:
    truth = json.loads((AEB_DIR / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for path in sorted((AEB_DIR / "html").glob("*.html.gz")):
        key = path.name.removesuffix(".html.gz")
        html = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        pages.append((truth[key]["url"], html))
    return pages


def dragnet_stems(cache: Path) -> list[str]:
    return sorted(path.stem for path in (cache / "dragnet_data" / "input").glob("*.html"))


def read_input(cache: Path, subset: str, stem: str) -> str:
    return (cache / subset / "input" / f"{stem}.html").read_bytes().decode("utf-8", "replace")


def read_gold(cache: Path, subset: str, stem: str) -> str:
    text = (cache / subset / "GoldStandard" / f"{stem}.txt").read_text("utf-8", errors="replace")
    text = text.split("!@#$%^&*()  COMMENTS")[0]
    lines = [re.sub(r"^\s*<(?:h|p|l)>", "", line) for line in text.splitlines()]
    return "\n".join(line for line in lines if not line.startswith("URL:"))


def gold_paragraphs(cache: Path, stem: str) -> list[str]:
    """Paragraphs of a Dragnet gold text that hold at least one long sentence."""
    text = read_gold(cache, "dragnet_data", stem)
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= 60]


def long_sentences(texts: list[str], min_chars: int) -> list[str]:
    seen: dict[str, str] = {}
    for text in texts:
        for sentence in split_sentences(text):
            normalized = normalize_sentence(sentence)
            if len(normalized) >= min_chars:
                seen.setdefault(normalized, sentence)
    return list(seen.values())


# --- scoring ------------------------------------------------------------------------------------


def score_classes(found: dict[PairKey, str], truth: dict[PairKey, str]) -> list[list[Any]]:
    rows = []
    for name in CLASSES:
        reported = {key for key, value in found.items() if value == name}
        expected = {key for key, value in truth.items() if value == name}
        hits = len(reported & expected)
        precision = hits / len(reported) if reported else float("nan")
        recall = hits / len(expected) if expected else float("nan")
        rows.append([name, len(expected), len(reported), hits, precision, recall])
    return rows


def print_table(header: list[str], rows: list[list[Any]]) -> None:
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


# --- (a) planted pairs on real pages -----------------------------------------------------------


def partial_page(sentences: list[str], link: str | None) -> str:
    menu = "".join(f"<li><a href='/section/{i}'>Section {i}</a></li>" for i in range(10))
    body = "".join(f"<p>{escape(sentence)}</p>" for sentence in sentences)
    if link:
        body += f"<p>Source: <a href='{link}'>the original article</a>.</p>"
    return (
        "<html><head><title>Collected notes</title></head><body>"
        f"<div class='menu'><ul>{menu}</ul></div><div class='post'>{body}</div></body></html>"
    )


def with_appended_paragraphs(html: str, paragraphs: list[str]) -> str:
    """Append a block of paragraphs to the page's body element (parsed, so never in a script)."""
    root = parse_html(html)
    body = root.find("body")
    parent = body if body is not None else root
    block = lxml.html.fragment_fromstring(
        "".join(f"<p>{escape(p)}</p>" for p in paragraphs), create_parent="div"
    )
    parent.append(block)
    return lxml.html.tostring(root, encoding="unicode")


def planted_quality(cache: Path, params: NeardupParams, n_dragnet: int, seed: int) -> None:
    rng = random.Random(seed)
    candidate_stems = set()
    with CANDIDATES.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            candidate_stems.update(Path(row[key]).stem for key in ("doc_a", "doc_b"))
    stems = [s for s in dragnet_stems(cache) if s not in candidate_stems]
    rng.shuffle(stems)
    base_stems, donor_stems = stems[:n_dragnet], stems[n_dragnet:]
    bases = aeb_pages() + [
        (
            f"http://dragnet{number}.example.com/articles/{stem}.html",
            read_input(cache, "dragnet_data", stem),
        )
        for number, stem in enumerate(base_stems)
    ]
    started = time.perf_counter()
    extracted: dict[str, tuple[str, PageSentences, list[str]]] = {}
    # The planted pages are HTML items, whose region is the content blocks: read the bases alike.
    as_html_items = dataclasses.replace(params, region="content")
    for url, html in bases:
        try:
            analysis = analyse_page(html, url, params=CHUNKS_ONLY)
            chunks = list(analysis.chunks)
            page = page_sentences(
                {"url": url, "chunks": chunks, "links": list(analysis.links)}, as_html_items
            )
        except WebsimError:
            continue
        sentences = long_sentences(content_texts(chunks, params), params.min_sentence_chars)
        extracted[url] = (html, page, sentences)
    seconds = time.perf_counter() - started
    print(f"base pages: {len(extracted)} analysed ({len(extracted) / seconds:.1f} pages/s)")

    with NearDuplicateFinder(params) as finder:
        for _html, page, _sentences in extracted.values():
            finder.add_page(page)
        natural = finder.finish()
    related = {url for pair in natural.pairs for url in (pair.a, pair.b)}
    print(
        f"natural pairs among the bases: {len(natural.pairs)} "
        f"({dict(natural.stats['classes'])}); {len(related)} pages set aside"
    )
    usable = [url for url, (_, page, s) in extracted.items() if url not in related and len(s) >= 6]
    # Donor text that shares a sentence with a base would make real pairs outside the truth.
    base_sentences = {
        normalize_sentence(sentence)
        for _, _, sentences in extracted.values()
        for sentence in sentences
    }
    donors = [
        paragraphs
        for stem in donor_stems
        for paragraphs in [gold_paragraphs(cache, stem)]
        if len(paragraphs) >= 3
        and not base_sentences.intersection(
            normalize_sentence(s) for s in long_sentences(paragraphs, params.min_sentence_chars)
        )
    ]
    print(f"donor texts: {len(donors)} of {len(donor_stems)} share no sentence with a base")
    rng.shuffle(donors)
    items: list[dict[str, Any]] = [{"url": url, "html": extracted[url][0]} for url in usable]
    truth: dict[PairKey, str] = {}
    truth_relation: dict[PairKey, str] = {}
    for number, url in enumerate(usable):
        html, _page, sentences = extracted[url]
        host_path = url.split("://", 1)[1]
        host, _, path = host_path.partition("/")
        kind = number % 5
        if kind == 0:
            copy_url = f"http://mirror{number}.example.org/{path}"
            items.append({"url": copy_url, "html": html})
            truth[frozenset((url, copy_url))] = "identical"
            truth_relation[frozenset((url, copy_url))] = "mirror"
        elif kind in (1, 2):
            donor = donors.pop()
            same_site = kind == 1
            copy_url = (
                f"http://{host}/digest/{number}.html"
                if same_site
                else f"http://aggregator{number}.example.net/{number}.html"
            )
            items.append({"url": copy_url, "html": with_appended_paragraphs(html, donor)})
            truth[frozenset((url, copy_url))] = "inclusion"
            truth_relation[frozenset((url, copy_url))] = (
                "in-site inclusion" if same_site else "cross-site copy"
            )
        else:
            donor_sentences = long_sentences(donors.pop(), params.min_sentence_chars)
            half = sentences[: max(2, len(sentences) // 2)]
            link = url if kind == 3 else None
            copy_url = f"http://blog{number}.example.info/post.html"
            mixed = half + donor_sentences[: len(half)]
            items.append(
                {
                    "url": copy_url,
                    "html": partial_page(mixed, link),
                    "links": [link] if link else [],
                }
            )
            truth[frozenset((url, copy_url))] = "partial"
            truth_relation[frozenset((url, copy_url))] = (
                "citing/cited" if link else "sentence-set sharing"
            )
    started = time.perf_counter()
    with NearDuplicateFinder(params) as finder:
        for item in items:
            finder.add(item)
        report = finder.finish()
    seconds = time.perf_counter() - started
    found = {frozenset((p.a, p.b)): p.pair_class for p in report.pairs}
    relations = {frozenset((p.a, p.b)): p.relation for p in report.pairs}
    print(
        f"planted collection: {len(items)} pages, {len(truth)} planted pairs, "
        f"{len(report.pairs)} pairs found in {seconds:.1f} s ({len(items) / seconds:.1f} pages/s "
        "with HTML analysis)"
    )
    print_table(
        ["class", "truth", "found", "correct", "precision", "recall"],
        score_classes(found, truth),
    )
    outcomes: Counter[tuple[str, bool]] = Counter(
        (value, relations.get(key) == value) for key, value in truth_relation.items()
    )
    correct = sum(count for (_, right), count in outcomes.items() if right)
    print(f"relation accuracy on planted pairs: {correct}/{len(truth_relation)}")
    for name in sorted(set(truth_relation.values())):
        right = outcomes[(name, True)]
        print(f"  {name:22s} {right}/{right + outcomes[(name, False)]}")
    missed = [key for key in truth if found.get(key) != truth[key]]
    for key in missed[:5]:
        print(f"  wrong or missed: {sorted(key)} truth={truth[key]} found={found.get(key)}")
    for pair in [p for p in report.pairs if frozenset((p.a, p.b)) not in truth][:5]:
        print(
            f"  outside the truth: {pair.a} {pair.b} {pair.pair_class} "
            f"{pair.shared_sentences} shared, inclusion {pair.inclusion:.2f}"
        )


# --- (a) one site's distinct records: its template is not a near duplicate --------------------


def demo_site_pairs(params: NeardupParams, subsets: int, seed: int) -> None:
    """Count pairs among the bundled demo site's 40 distinct records and random subsets."""
    archive = Archive.bundled()
    html_items = [
        {"url": f"http://127.0.0.1:8000/record/{r.number}", "html": record_page(archive, r)}
        for r in archive.records
    ]
    analysed_items = []
    for entry in html_items:
        analysis = analyse_page(entry["html"], entry["url"])
        analysed_items.append(
            {"url": entry["url"], "chunks": [vars(c) for c in analysis.chunks], "links": []}
        )
    rng = random.Random(seed)
    sizes = [len(html_items)] + [rng.randint(2, len(html_items)) for _ in range(subsets)]
    rows = []
    for name, items in (("HTML items", html_items), ("analysed items", analysed_items)):
        for size in sizes:
            chosen = rng.sample(items, size)
            report = find_near_duplicates(chosen, params)
            rows.append([name, size, size * (size - 1) // 2, len(report.pairs)])
    print_table(["items", "records", "record pairs", "pairs reported"], rows)


# --- (a) candidate pairs, checked on gold texts ------------------------------------------------


def candidate_quality(cache: Path, params: NeardupParams) -> None:
    with CANDIDATES.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    documents: dict[str, tuple[str, str]] = {}
    for row in rows:
        for key in ("doc_a", "doc_b"):
            parts = Path(row[key]).parts  # html-cleaning/<subset>/<stem>.txt
            documents[row[key]] = (parts[1], Path(parts[2]).stem)
    gold_sets: dict[str, set[str]] = {}
    for name, (subset, stem) in documents.items():
        sentences = long_sentences([read_gold(cache, subset, stem)], params.min_sentence_chars)
        gold_sets[name] = {normalize_sentence(s) for s in sentences}
    checked: dict[PairKey, tuple[str, str]] = {}
    agreement: Counter[tuple[str, str]] = Counter()
    for row in rows:
        first, second = gold_sets[row["doc_a"]], gold_sets[row["doc_b"]]
        shared = len(first & second)
        label = (
            pair_class(shared, len(first), len(second))
            if shared >= params.min_shared_sentences
            else "none"
        )
        agreement[(row["derived_label"], label)] += 1
        checked[frozenset((row["doc_a"], row["doc_b"]))] = (row["derived_label"], label)
    print(f"candidate pairs: {len(rows)}; listed label -> class checked on the gold sentences:")
    for (listed, label), count in sorted(agreement.items()):
        print(f"  {listed:9s} -> {label:9s} {count}")
    items = []
    names: dict[str, str] = {}
    for name, (subset, stem) in documents.items():
        url = f"http://{subset.lower()}.example/{stem}.html"
        items.append({"url": url, "html": read_input(cache, subset, stem)})
        names[url] = name
    with NearDuplicateFinder(params) as finder:
        for item in items:
            finder.add(item)
        report = finder.finish()
    found = {frozenset((names[p.a], names[p.b])): p for p in report.pairs}
    sharing = [key for key, (_, label) in checked.items() if label != "none"]
    print(
        f"detector on the {len(items)} pages' HTML (whole content region, not the gold text): "
        f"{len(report.pairs)} pairs; {sum(key in found for key in sharing)}/{len(sharing)} of "
        "the pairs sharing gold sentences found; "
        f"{sum(key not in checked for key in found)} more pairs share text outside the gold"
    )
    print("listed non-partial candidates, page by page:")
    for key, (listed, label) in sorted(checked.items(), key=lambda kv: sorted(kv[0])):
        if listed == "partial":
            continue
        pair = found.get(key)
        detected = (
            f"{pair.pair_class} {pair.shared_sentences} shared, overlap {pair.overlap:.2f}"
            if pair
            else "not found"
        )
        first, second = sorted(Path(name).stem for name in key)
        print(f"  {first:>5s} {second:>5s} listed {listed:9s} gold {label:9s} detector {detected}")


# --- (b) scale ----------------------------------------------------------------------------------


def sentence_pool(cache: Path, limit: int = 40_000) -> list[str]:
    truth = json.loads((AEB_DIR / "ground-truth.json").read_text(encoding="utf-8"))
    texts = [entry["articleBody"] for entry in truth.values()]
    texts += [read_gold(cache, "dragnet_data", stem) for stem in dragnet_stems(cache)]
    pool = [s for s in long_sentences(texts, 40) if len(s) <= 220]
    return pool[:limit]


def generated_items(n_pages: int, pool: list[str], seed: int) -> Iterator[dict[str, Any]]:
    """Pages as analysed items (chunks), 50 per site, with planted copies every 20 pages."""
    rng = random.Random(seed)
    menu = {
        "parent_id": "C0", "depth": 1, "tag": "ul", "fate": "kept", "n_keywords": 16,
        "n_link_keywords": 16, "text": "\n".join(f"Section {i}" for i in range(8)),
    }  # fmt: skip
    group: list[list[str]] = []
    for number in range(n_pages):
        site = number // 50
        role = number % 20
        own = [f"Note {number}-{k}: {pool[rng.randrange(len(pool))]}" for k in range(12)]
        if role == 0:
            group = [own]
            sentences = own
        elif role == 1:  # mirror of the group's first page
            sentences = group[0]
        elif role == 2:  # includes the first page
            sentences = group[0] + own[:4]
        elif role == 3:  # shares half of the first page
            sentences = group[0][:6] + own[:6]
        else:
            sentences = own
        boilerplate = [f"Site {site} footer {k}: {pool[site % len(pool)]}" for k in range(2)]
        content = {
            "parent_id": "C0", "depth": 1, "tag": "div", "fate": "kept", "n_keywords": 200,
            "n_link_keywords": 0, "text": "\n".join([*sentences, *boilerplate]),
        }  # fmt: skip
        host = f"mirror{site}.example.org" if role == 1 else f"site{site}.example.com"
        yield {
            "url": f"http://{host}/page/{number - 1 if role == 1 else number}.html",
            "chunks": [menu, content],
            "links": [],
        }


def own_peak_rss_mb() -> float:
    """Return this process's own peak RSS (VmHWM; ru_maxrss inherits the parent's over fork)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale_child(n_pages: int, method: str, cache: Path, seed: int) -> None:
    """Run one size in this process and print its measurements as JSON."""
    pool = sentence_pool(cache)
    params = NeardupParams(method=method)
    busy = 0.0
    with NearDuplicateFinder(params) as finder:
        for item in generated_items(n_pages, pool, seed):
            started = time.perf_counter()
            finder.add(item)
            busy += time.perf_counter() - started
        started = time.perf_counter()
        report = finder.finish()
        finish_seconds = time.perf_counter() - started
    groups = n_pages // 20 + (1 if n_pages % 20 > 3 else 0)
    peak_mb = own_peak_rss_mb()
    print(
        json.dumps(
            {
                "pages": n_pages,
                "method": method,
                "index_seconds": busy,
                "finish_seconds": finish_seconds,
                "pages_per_second": n_pages / (busy + finish_seconds),
                "peak_rss_mb": peak_mb,
                "pairs": len(report.pairs),
                "planted_pairs": 6 * groups,
                "classes": report.stats["classes"],
            }
        )
    )


def scale(cache: Path, sizes: list[int], methods: list[str], seed: int) -> None:
    rows = []
    for method in methods:
        for size in sizes:
            command = [
                sys.executable, __file__, "--scale-child", str(size), "--method", method,
                "--cache-dir", str(cache), "--seed", str(seed),
            ]  # fmt: skip
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                print(f"{method} {size}: failed\n{result.stderr[-2000:]}")
                continue
            data = json.loads(result.stdout.strip().splitlines()[-1])
            rows.append(data)
            print(f"  done: {method} {size} pages", flush=True)
    table = []
    for data in rows:
        base = next(r for r in rows if r["method"] == data["method"])
        per_page = (data["index_seconds"] + data["finish_seconds"]) / data["pages"]
        base_per_page = (base["index_seconds"] + base["finish_seconds"]) / base["pages"]
        table.append(
            [
                data["method"], data["pages"], data["index_seconds"], data["finish_seconds"],
                data["pages_per_second"], per_page / base_per_page, data["peak_rss_mb"],
                f"{data['pairs']}/{data['planted_pairs']}",
            ]
        )  # fmt: skip
    print_table(
        ["method", "pages", "index s", "finish s", "pages/s", "time/page vs smallest",
         "peak RSS MB", "pairs found/planted"],
        table,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dragnet-bases", type=int, default=300)
    parser.add_argument("--demo-subsets", type=int, default=8)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--methods", default="exact,minhash")
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 pages")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--scale-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--method", default="exact", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not DATASETS.is_dir():
        print(f"datasets not found at {DATASETS}", file=sys.stderr)
        return 1
    unpack(args.cache_dir)
    if args.scale_child:
        scale_child(args.scale_child, args.method, args.cache_dir, args.seed)
        return 0
    params = NeardupParams()
    print(f"params: {dataclasses.asdict(params)}")
    if not args.skip_quality:
        print("\n== (a) quality: planted copies of real pages ==")
        planted_quality(args.cache_dir, params, args.dragnet_bases, args.seed)
        print("\n== (a) quality: distinct records of one site (the bundled demo site) ==")
        demo_site_pairs(params, args.demo_subsets, args.seed)
        print("\n== (a) quality: neardup-candidates, checked on gold texts ==")
        candidate_quality(args.cache_dir, params)
    if not args.skip_scale:
        sizes = [int(size) for size in args.sizes.split(",") if size]
        if args.million:
            sizes.append(1_000_000)
        print("\n== (b) scale: generated collection from real sentences ==")
        scale(args.cache_dir, sizes, args.methods.split(","), args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
