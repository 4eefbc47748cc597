"""Main-content extraction quality and speed: websim's page analysis vs trafilatura and readability.

Two data sets, read from ``../shared/datasets`` (never copied into the repository):

* ``article-extraction-benchmark`` (181 pages): token-level precision/recall/F1 of the extracted
  text against the human ``articleBody``, as that benchmark's own ``evaluate.py`` defines it:
  ``\\w+`` tokens, 4-token shingles, per page tp/fp/fn over the shingle multisets normalised to sum
  1, precision = mean over pages with tp+fp > 0, recall = mean over pages with tp+fn > 0,
  F1 = 2PR/(P+R) of those means.
* ``trafilatura-eval`` (990 pages, unpacked once into ``--cache-dir``): per page, each "with"
  segment found in the output (white space normalised) is a true positive, else a false negative;
  each "without" segment found is a false positive, else a true negative; P/R/F1 over the totals.

Speed is pages per second of CPU time of this process (``time.process_time``), which the other
jobs on a shared machine disturb less than wall time; wall time is printed too. Every extractor
gets the page bytes and decodes them itself.

Usage::

    .venv/bin/python benchmarks/extraction.py               # both sets, all extractors
    .venv/bin/python benchmarks/extraction.py --limit 100   # first 100 pages of each set
    .venv/bin/python benchmarks/extraction.py --ablation    # also websim with each step off/on
    .venv/bin/python benchmarks/extraction.py --check-metric  # score the stored outputs
    .venv/bin/python benchmarks/extraction.py --whole-process  # start-up and whole processes
    .venv/bin/python benchmarks/extraction.py --dump-records /tmp/records.jsonl  # records, SHA-256

``--whole-process`` times what a user waits for: ``websim extract FOLDER`` as a command against
``benchmarks/trafilatura_folder.py FOLDER`` (trafilatura in one process over the same pages), on
the article set and on big9's pages of 100 KB or more; and the start-up of ``websim --help`` and
``websim extract one.html`` against ``python -c "import trafilatura; trafilatura.extract(page)"``.
Each command runs ``--repeat`` times, interleaved; the table gives the median wall and CPU
seconds (CPU of the child process: user + system).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import gzip
import hashlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
from trafilatura_folder import trafilatura_extract

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.datasets import trafilatura_eval

from websim_crawler.core.page import (
    BLOCK_TAGS,
    AnalysisParams,
    analyse_page,
    new_template_memory,
)
from websim_crawler.core.text import detect_language
from websim_crawler.errors import WebsimError

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / ".." / "shared" / "datasets"
AEB_DIR = DATASETS / "article-extraction-benchmark"
BIG9_TARBALL = DATASETS / "big9" / "big9.tar.xz"
TRAFILATURA_DRIVER = Path(__file__).resolve().with_name("trafilatura_folder.py")
LARGE_PAGE_BYTES = 100_000
DEFAULT_CACHE = Path("/tmp/websim-bench-cache")
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_SPACE_RE = re.compile(r"\s+")

Extractor = Callable[[bytes], str]


# --- metrics ----------------------------------------------------------------------------------


def shingles(text: str, size: int = 4) -> Counter[str]:
    """Return the multiset of ``size``-token shingles (one shingle when the text is shorter)."""
    tokens = _TOKEN_RE.findall(text or "")
    count = max(1, len(tokens) - size + 1)
    return Counter(shingle for i in range(count) if (shingle := " ".join(tokens[i : i + size])))


def shingle_match(truth: str, predicted: str) -> tuple[float, float, float]:
    """Return the page's (tp, fp, fn) over shingle multisets, normalised to sum 1."""
    true_shingles, predicted_shingles = shingles(truth), shingles(predicted)
    tp = fp = fn = 0.0
    for key in true_shingles.keys() | predicted_shingles.keys():
        true_count, predicted_count = true_shingles[key], predicted_shingles[key]
        tp += min(true_count, predicted_count)
        fp += max(0, predicted_count - true_count)
        fn += max(0, true_count - predicted_count)
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total > 0 else (tp, fp, fn)


def article_scores(pairs: Sequence[tuple[str, str]]) -> tuple[float, float, float]:
    """Return (precision, recall, F1) of (truth, predicted) pairs, as the benchmark defines it."""
    counts = [shingle_match(truth, predicted) for truth, predicted in pairs]
    precisions = [tp / (tp + fp) for tp, fp, _fn in counts if tp + fp > 0]
    recalls = [tp / (tp + fn) for tp, _fp, fn in counts if tp + fn > 0]
    precision = sum(precisions) / len(precisions) if precisions else 0.0
    recall = sum(recalls) / len(recalls) if recalls else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def normalise_space(text: str) -> str:
    """Collapse every run of white space to one space."""
    return _SPACE_RE.sub(" ", text).strip()


def segment_counts(item: dict[str, Any], predicted: str) -> tuple[int, int, int, int]:
    """Return (tp, fp, fn, tn) of a trafilatura-eval page's must-include/exclude segments."""
    text = normalise_space(predicted)
    tp = sum(1 for segment in item["with"] if normalise_space(segment) in text)
    fp = sum(1 for segment in item["without"] if normalise_space(segment) in text)
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def segment_scores(counts: Sequence[tuple[int, int, int, int]]) -> tuple[float, float, float]:
    """Return (precision, recall, F1) over the summed segment counts."""
    tp = sum(c[0] for c in counts)
    fp = sum(c[1] for c in counts)
    fn = sum(c[2] for c in counts)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return precision, recall, f1


# --- data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """One benchmark page: its bytes and what the set scores it against."""

    key: str
    data: bytes
    truth: Any


def load_article_benchmark(limit: int | None) -> list[Page]:
    """Load the article-extraction-benchmark pages with their ``articleBody``."""
    truth = json.loads((AEB_DIR / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key in sorted(truth)[:limit]:
        data = gzip.decompress((AEB_DIR / "html" / f"{key}.html.gz").read_bytes())
        pages.append(Page(key, data, truth[key]["articleBody"]))
    return pages


def load_trafilatura_eval(cache_dir: Path, limit: int | None) -> list[Page]:
    """Load the trafilatura-eval pages with their segments, unpacking the tarball once."""
    files = trafilatura_eval(cache_dir)[:limit]
    return [Page(url, path.read_bytes(), item) for url, path, item in files]


def load_big9_large(cache_dir: Path, min_bytes: int = LARGE_PAGE_BYTES) -> list[Page]:
    """Load big9's pages of at least ``min_bytes`` (unpacking the tarball once); no truth."""
    root = cache_dir / "big9"
    if not (root / "big5-17").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(BIG9_TARBALL) as tar:
            tar.extractall(root, filter="data")
    paths = sorted(root.glob("big5-*/html/*.htm"))
    return [
        Page(str(path.relative_to(root)), path.read_bytes(), None)
        for path in paths
        if path.stat().st_size >= min_bytes
    ]


def load_stored_outputs() -> dict[str, dict[str, str]]:
    """Return the benchmark's stored extractor outputs: name -> page id -> text."""
    outputs = {}
    for path in sorted((AEB_DIR / "output").glob("*.json.gz")):
        data = json.loads(gzip.decompress(path.read_bytes()))
        data = data.get("output", data)
        outputs[path.name.removesuffix(".json.gz")] = {
            key: value.get("articleBody") or "" for key, value in data.items()
        }
    return outputs


# --- extractors -------------------------------------------------------------------------------


def websim_extractor(params: AnalysisParams) -> Extractor:
    """Return websim's page analysis as an extractor (pages it refuses give empty text)."""
    # Load the language identifier's model now, outside the timing (the warm-up page may
    # declare its language and never load it).
    detect_language("A sentence long enough for the language identifier to load its model.")

    def extract(data: bytes) -> str:
        try:
            return analyse_page(data, params=params).main_text
        except WebsimError:
            return ""

    return extract


def readability_extract(data: bytes) -> str:
    """Run readability-lxml and turn its HTML summary into text, one line per block."""
    from readability import Document

    try:
        summary = Document(data).summary(html_partial=True)
        tree = lxml.html.fromstring(summary)
    except Exception:  # readability raises bare exceptions on pages it cannot handle
        return ""
    parts: list[str] = []
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end")):
        if event == "start":
            parts.append(element.text or "")
        else:
            if isinstance(element.tag, str) and element.tag in BLOCK_TAGS:
                parts.append("\n")
            if element is not tree:
                parts.append(element.tail or "")
    return "".join(parts)


@dataclass
class Run:
    """One extractor over one set: outputs and CPU/wall seconds."""

    outputs: list[str]
    cpu_seconds: float
    wall_seconds: float

    @property
    def pages_per_second(self) -> float:
        return len(self.outputs) / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")


def run_extractor(extract: Extractor, pages: Sequence[Page]) -> Run:
    """Run one extractor over the pages (after one warm-up call) and time it."""
    if pages:
        extract(pages[0].data)  # load models, stopword lists, caches outside the timing
    cpu, wall = time.process_time(), time.perf_counter()
    outputs = [extract(page.data) for page in pages]
    return Run(outputs, time.process_time() - cpu, time.perf_counter() - wall)


def score(set_name: str, pages: Sequence[Page], outputs: Sequence[str]) -> tuple[float, ...]:
    """Score outputs on the named set: (precision, recall, F1)."""
    if set_name == "article":
        return article_scores(
            [(page.truth, text) for page, text in zip(pages, outputs, strict=True)]
        )
    return segment_scores(
        [segment_counts(page.truth, text) for page, text in zip(pages, outputs, strict=True)]
    )


# --- ablation ---------------------------------------------------------------------------------

# The paper's steps alone: every addition off.
PAPER_ONLY: dict[str, Any] = {
    "noscript_keep_chars": 0,
    "size_exponent": 0.0,
    "main_chunk_ratio": 1.0,
    "main_expansion": False,
    "lead_levels": 0,
    "tail_leaf_share": 0.0,
    "markup_hints": False,
    "markup_hint_min_rest": 0.0,
    "content_name_overrule": False,
    "title_line_filter": False,
    "furniture_line_filter": False,
    "caption_filter": False,
    "teaser_line_filter": False,
    "orphan_heading_filter": False,
    "edge_trim_chars": 0,
    "edge_link_trim": False,
}
# Each addition on top of the paper's steps (label -> params changed from PAPER_ONLY).
ADDITIONS: dict[str, dict[str, Any]] = {
    "noscript content": {"noscript_keep_chars": AnalysisParams().noscript_keep_chars},
    "size weighting": {"size_exponent": AnalysisParams().size_exponent},
    "several main chunks": {"main_chunk_ratio": AnalysisParams().main_chunk_ratio},
    "main expansion": {"main_expansion": True},
    "lead paragraph": {"lead_levels": AnalysisParams().lead_levels},
    "tail cut": {"tail_leaf_share": AnalysisParams().tail_leaf_share},
    "markup hints": {"markup_hints": True},
    "content names": {"content_name_overrule": True},
    "builder names": {"markup_hint_min_rest": AnalysisParams().markup_hint_min_rest},
    "title line": {"title_line_filter": True},
    "furniture lines": {"furniture_line_filter": True},
    "captions": {"caption_filter": True},
    "teaser lines": {"teaser_line_filter": True},
    "orphan headings": {"orphan_heading_filter": True},
    "edge trim": {"edge_trim_chars": AnalysisParams().edge_trim_chars},
    "edge link trim": {"edge_link_trim": True},
}

# Additions that act on another one's output: their "paper +" row switches that one on too.
PREREQUISITES: dict[str, dict[str, Any]] = {
    "content names": {"markup_hints": True},
    "builder names": {"markup_hints": True},
}


def ablation_configs() -> list[tuple[str, AnalysisParams]]:
    """Return (label, params): paper only, paper + each addition, the default without each
    addition (with each one that is off by default), the default."""
    configs = [("paper only", AnalysisParams(**PAPER_ONLY))]
    for label, change in ADDITIONS.items():
        needs = PREREQUISITES.get(label, {})
        configs.append((f"paper + {label}", AnalysisParams(**{**PAPER_ONLY, **needs, **change})))
    defaults = AnalysisParams()
    for label, change in ADDITIONS.items():
        if all(getattr(defaults, name) == value for name, value in change.items()):
            undo = {name: PAPER_ONLY[name] for name in change}
            configs.append((f"default - {label}", dataclasses.replace(defaults, **undo)))
        else:  # an addition off by default
            configs.append((f"default + {label}", dataclasses.replace(defaults, **change)))
    configs.append(("default (all)", defaults))
    return configs


# --- report -----------------------------------------------------------------------------------


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a Markdown table (floats to 4 decimals, so close calls show)."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    print()


def check_metric(limit: int | None) -> None:
    """Score the benchmark's stored extractor outputs (checks the metric's implementation)."""
    truth = json.loads((AEB_DIR / "ground-truth.json").read_text(encoding="utf-8"))
    keys = sorted(truth)[:limit]
    rows = []
    for name, outputs in load_stored_outputs().items():
        pairs = [(truth[key]["articleBody"], outputs.get(key, "")) for key in keys]
        rows.append((name, *article_scores(pairs)))
    print(f"Stored outputs of article-extraction-benchmark ({len(keys)} pages):")
    print_table(("extractor", "P", "R", "F1"), rows)


def print_second_pass(
    sets: Sequence[str], loaded: dict[str, list[Page]], extractors: dict[str, Extractor]
) -> None:
    """Print websim's and trafilatura's pages/s on a second pass over each set (warm caches).

    The first pass pays each process's one-time costs (websim: NLTK stemming words for the first
    time; both: lazily built tables); the second shows the rate a long crawl settles at.
    """
    rows = []
    for set_name in sets:
        ours = run_extractor(extractors["websim"], loaded[set_name]).pages_per_second
        theirs = run_extractor(extractors["trafilatura"], loaded[set_name]).pages_per_second
        rows.append((set_name, f"{ours:.1f}", f"{theirs:.1f}", ours / theirs))
    print("Second pass, warm caches (pages/s of CPU time):")
    print_table(("set", "websim", "trafilatura", "speed ratio"), rows)


# --- whole processes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Median wall and CPU seconds of one command over its repeats."""

    wall: float
    cpu: float


_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Become the Linux child subreaper: a command's orphans (the pool's fork server and its
    workers, which outlive the command by a moment) are re-parented to this process, which reaps
    them, so their CPU time counts in ``RUSAGE_CHILDREN`` like the command's own."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> None:
    """Wait for every adopted process still running."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def time_commands(commands: dict[str, list[str]], repeat: int) -> dict[str, Timing]:
    """Run each command ``repeat`` times, interleaved; return its median wall and child CPU
    (with its pool workers' CPU: see ``adopt_orphans``)."""
    adopt_orphans()
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            walls[name].append(time.perf_counter() - start)
            reap_orphans()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {
        name: Timing(statistics.median(walls[name]), statistics.median(cpus[name]))
        for name in commands
    }


def websim_command(*args: str) -> list[str]:
    """Return the ``websim`` command line with this interpreter (as the installed script)."""
    return [sys.executable, "-m", "websim_crawler", *args]


def write_pages(pages: Sequence[Page], folder: Path) -> None:
    """Write each page's bytes to the folder as ``NNNN.html``."""
    folder.mkdir(parents=True)
    for number, page in enumerate(pages):
        (folder / f"{number:04d}.html").write_bytes(page.data)


_DECLARED_LANGUAGE_RE = re.compile(rb"<html[^>]*[\s:]lang=|http-equiv=.content-language", re.I)


def declares_language(page: Page) -> bool:
    """Tell whether the page declares its language (else websim loads its language model)."""
    return _DECLARED_LANGUAGE_RE.search(page.data[:20_000]) is not None


def median_page(pages: Sequence[Page]) -> Page:
    """Return the page of median size."""
    return sorted(pages, key=lambda page: len(page.data))[len(pages) // 2]


def print_whole_process(loaded: dict[str, list[Page]], repeat: int) -> None:
    """Print start-up and whole-process times of websim and trafilatura, with their ratios.

    Both packages are timed as installed: pip byte-compiles an installed package, and an
    editable checkout run with ``PYTHONDONTWRITEBYTECODE`` would compile websim's modules from
    source at every start, so they are byte-compiled first.
    """
    import compileall

    compileall.compile_dir(str(ROOT / "websim_crawler"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="websim-whole-") as tmp:
        work = Path(tmp)
        commands: dict[str, list[str]] = {"websim --help": websim_command("--help")}
        sizes = []
        for declared, label in ((True, "language declared"), (False, "language detected")):
            one = median_page([p for p in loaded["article"] if declares_language(p) == declared])
            path = work / f"one-{declared}.html"
            path.write_bytes(one.data)
            sizes.append(f"{len(one.data) // 1000} KB")
            commands[f"websim extract one.html ({label})"] = websim_command(
                "extract", str(path), "-o", str(work / "one.jsonl")
            )
            commands[f"trafilatura ({label})"] = [
                sys.executable,
                "-c",
                "import sys, trafilatura; trafilatura.extract(open(sys.argv[1], 'rb').read())",
                str(path),
            ]
        start_up = time_commands(commands, repeat)
        rows: list[Sequence[Any]] = []
        for name, timing in start_up.items():
            kind = "detected" if "detected" in name else "declared"
            base = start_up[f"trafilatura (language {kind})"]
            rows.append(
                (
                    name,
                    f"{timing.wall:.2f}",
                    f"{timing.cpu:.2f}",
                    timing.wall / base.wall,
                    timing.cpu / base.cpu,
                )
            )
        print(
            f"Start-up: the median-size article page of each kind ({', '.join(sizes)}), median "
            f'of {repeat} runs; trafilatura = python -c "import trafilatura; '
            'trafilatura.extract(page)"; target: ratio <= 1:'
        )
        print_table(("command", "wall s", "cpu s", "wall ratio", "cpu ratio"), rows)
        rows = []
        for set_name, pages in loaded.items():
            folder = work / set_name
            write_pages(pages, folder)
            size = sum(len(page.data) for page in pages) / 1e6
            timings = time_commands(
                {
                    "websim": websim_command("extract", str(folder), "-o", str(work / "w.jsonl")),
                    "websim --chunks none": websim_command(
                        "extract", str(folder), "-o", str(work / "n.jsonl"), "--chunks", "none"
                    ),
                    "websim --workers 0": websim_command(
                        "extract", str(folder), "-o", str(work / "z.jsonl"), "--workers", "0"
                    ),
                    "trafilatura": [
                        sys.executable,
                        str(TRAFILATURA_DRIVER),
                        str(folder),
                        str(work / "t.jsonl"),
                    ],
                },
                repeat,
            )
            theirs = timings["trafilatura"]
            for name in ("websim", "websim --chunks none", "websim --workers 0", "trafilatura"):
                ours = timings[name]
                rows.append(
                    (
                        f"{set_name} ({len(pages)} pages, {size:.1f} MB)",
                        name,
                        f"{ours.wall:.2f}",
                        f"{ours.cpu:.2f}",
                        theirs.wall / ours.wall,
                        theirs.cpu / ours.cpu,
                    )
                )
        print(f"Whole process over a folder (median of {repeat}; target: speed-up >= 2):")
        print_table(
            ("pages", "command", "wall s", "cpu s", "speed-up (wall)", "speed-up (cpu)"), rows
        )


def dump_records(pages_by_set: dict[str, list[Page]], path: Path) -> None:
    """Write every page's analysis record as sorted JSON lines, alone and with a site-template
    memory shared by its set; print the page counts and the file's SHA-256.

    Two commits whose dumps have the same SHA-256 analyse every page identically.
    """
    params = AnalysisParams()
    with path.open("w", encoding="utf-8") as out:
        for set_name, pages in pages_by_set.items():
            memory = new_template_memory(params)
            for page in pages:
                url = (
                    page.key
                    if page.key.startswith("http")
                    else f"http://{set_name}.example/{page.key}"
                )
                for mode, site_memory in (("plain", None), ("memory", memory)):
                    try:
                        analysis = analyse_page(
                            page.data, url, params=params, site_memory=site_memory
                        )
                        record = analysis.to_dict()
                    except WebsimError as error:
                        record = {"error": type(error).__name__, "reason": str(error)}
                    line = {"set": set_name, "key": page.key, "mode": mode, "record": record}
                    out.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    counts = ", ".join(f"{name} {len(pages)}" for name, pages in pages_by_set.items())
    print(f"records of {counts} pages (each alone and with a site memory) -> {path}")
    print(f"sha256 {digest}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N pages of each set")
    parser.add_argument(
        "--sets",
        default="article,trafilatura-eval",
        help="comma-separated: article,trafilatura-eval",
    )
    parser.add_argument(
        "--extractors", default="websim,trafilatura,readability", help="comma-separated"
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--ablation", action="store_true", help="websim with each addition")
    parser.add_argument("--check-metric", action="store_true", help="score stored outputs")
    parser.add_argument(
        "--second-pass",
        action="store_true",
        help="time websim and trafilatura again on each set, once every per-process cache is warm",
    )
    parser.add_argument(
        "--whole-process",
        action="store_true",
        help="only time start-up and whole websim/trafilatura processes (article set, big9 large)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (--whole-process)")
    parser.add_argument(
        "--dump-records",
        type=Path,
        metavar="PATH",
        help="only write every page's analysis record to PATH and print its SHA-256",
    )
    parser.add_argument(
        "--stemmer", default=None, help="WEBSIM_STEMMER for websim (default: the setting's)"
    )
    args = parser.parse_args(argv)
    if not DATASETS.is_dir():
        print(f"datasets not found at {DATASETS}", file=sys.stderr)
        return 2
    if args.whole_process:
        print_whole_process(
            {
                "article": load_article_benchmark(args.limit),
                "big9 >= 100 KB": load_big9_large(args.cache_dir)[: args.limit],
            },
            args.repeat,
        )
        return 0
    if args.dump_records:
        dump_records(
            {
                "article": load_article_benchmark(args.limit),
                "trafilatura-eval": load_trafilatura_eval(args.cache_dir, args.limit),
            },
            args.dump_records,
        )
        return 0
    if args.check_metric:
        check_metric(args.limit)
    extractors: dict[str, Extractor] = {
        "websim": websim_extractor(
            AnalysisParams(stemmer=args.stemmer) if args.stemmer else AnalysisParams()
        ),
        "trafilatura": trafilatura_extract,
        "readability": readability_extract,
    }
    chosen = [name.strip() for name in args.extractors.split(",") if name.strip()]
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    results: dict[tuple[str, str], tuple[tuple[float, ...], Run]] = {}
    loaded: dict[str, list[Page]] = {}
    for set_name in sets:
        pages = (
            load_article_benchmark(args.limit)
            if set_name == "article"
            else load_trafilatura_eval(args.cache_dir, args.limit)
        )
        loaded[set_name] = pages
        for name in chosen:
            run = run_extractor(extractors[name], pages)
            results[(set_name, name)] = (score(set_name, pages, run.outputs), run)
            print(f"  {set_name} / {name}: done in {run.wall_seconds:.1f} s", file=sys.stderr)
    rows = []
    for name in chosen:
        row: list[Any] = [name]
        for set_name in sets:
            scores, _run = results[(set_name, name)]
            row.extend(scores)
        n_pages = sum(len(loaded[s]) for s in sets)
        cpu = sum(results[(s, name)][1].cpu_seconds for s in sets)
        wall = sum(results[(s, name)][1].wall_seconds for s in sets)
        row.append(f"{n_pages / cpu:.1f}" if cpu else "inf")
        row.append(f"{n_pages / wall:.1f}" if wall else "inf")
        rows.append(row)
    header = ["extractor"]
    for set_name in sets:
        n = len(loaded[set_name])
        header.extend([f"{set_name} P", "R", f"F1 (n={n})"])
    header.extend(["pages/s (cpu)", "pages/s (wall)"])
    print("Main-content extraction:")
    print_table(header, rows)
    if "websim" in chosen and "trafilatura" in chosen:
        ratios = []
        for set_name in sets:
            ours, theirs = results[(set_name, "websim")], results[(set_name, "trafilatura")]
            ratios.append(
                (
                    set_name,
                    ours[0][2],
                    theirs[0][2],
                    ours[0][2] - theirs[0][2],
                    ours[1].pages_per_second / theirs[1].pages_per_second,
                )
            )
        our_cpu = sum(results[(s, "websim")][1].cpu_seconds for s in sets)
        their_cpu = sum(results[(s, "trafilatura")][1].cpu_seconds for s in sets)
        ratios.append(("all pages", "", "", "", their_cpu / our_cpu))
        print("websim vs trafilatura (target: F1 difference >= 0, speed ratio >= 2):")
        print_table(("set", "websim F1", "trafilatura F1", "difference", "speed ratio"), ratios)
        if args.second_pass:
            print_second_pass(sets, loaded, extractors)
    if args.ablation:
        rows = []
        for label, params in ablation_configs():
            row = [label]
            for set_name in sets:
                run = run_extractor(websim_extractor(params), loaded[set_name])
                row.extend(score(set_name, loaded[set_name], run.outputs))
            rows.append(row)
        print("Ablation (websim; P, R, F1 per set):")
        print_table(["configuration"] + [f"{s} {m}" for s in sets for m in ("P", "R", "F1")], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
