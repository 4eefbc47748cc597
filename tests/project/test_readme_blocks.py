"""Every code block of README.md runs as written, or says here why it cannot and is checked.

``BLOCKS`` names each block by its first line; a block missing from it fails
``test_every_readme_block_is_run_or_checked``. A runnable block is run verbatim in a scratch
folder, with only the addresses it names swapped for sites served on 127.0.0.1 (the demo search
site for ``library.example.org`` and ``PORT``, ``tests/support/site`` for ``docs.example.org``, demo
record pages for ``A``, ``B`` and ``URL``) and the files it reads made first (``queries.txt``,
``page.html``, ``saved_pages/``). Options in ``[...]`` are left out of the run; each one's flag
must be in the command's ``--help``. The own-project blocks are run by ``test_own_project.py``
in a fresh ``scrapy startproject``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import serve_directory

from websim_crawler.demo.site import DemoSite

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow

# First line of each block -> how it is tested. "run": run verbatim (addresses swapped);
# "python": executed; "json": an example checked against a real report; any other value is why
# the block is not run, and a test checks what it promises.
BLOCKS = {
    "make demo   # creates .venv": "make reinstalls the shared venv: Makefile targets checked",
    "response -> page record": "a diagram of the data flow, not a command",
    "make demo                       # or: websim demo": "run: websim demo --serve, --render",
    "scrapy crawl deepweb -a start_url=http://127.0.0.1:PORT/": "run",
    "crawled 50 pages (40 record, 10 results)": "the demo's output: compared with a real run",
    "scrapy crawl deepweb -a start_url=https://library.example.org/": "run",
    "scrapy crawl site -a start_url=https://docs.example.org/": "run",
    "pip install /path/to/websim-crawler": "own project: tests/project/test_own_project.py",
    "# settings.py of any Scrapy project": "own project: tests/project/test_own_project.py",
    "# mine/spiders/pages.py": "own project: tests/project/test_own_project.py",
    "from websim_crawler import AnalysisParams": "python",
    "websim extract page.html": "run",
    "websim cluster pages.jsonl [more.jsonl ...]": "run",
    'ITEM_PIPELINES = {\n    "websim_crawler.pipelines.PageAnalysisPipeline": 300,\n    '
    '"websim_crawler.pipelines.clustering': "python",
    'ITEM_PIPELINES = {\n    "websim_crawler.pipelines.PageAnalysisPipeline": 300,\n    '
    '"websim_crawler.pipelines.similarity': "python",
    '{\n  "params"': "json",
    "websim compare A B": "run",
    "websim index protected/": "run",
    "websim neardup pages.jsonl -o neardup.json                 # exact": "run",
    '{"pairs"': "json",
    "# 1. a Redis reachable by every machine": (
        "needs Redis and machines named HOST: tests/adapters/distributed/test_redis_workers.py "
        "runs seeds, workers and the union; here each flag is checked in --help"
    ),
    "scrapy crawl deepweb -a start_url=URL -a queries=Q1,Q2": "run",
    "make test     # lint": "make reinstalls the shared venv: Makefile targets checked",
}


def readme_blocks() -> list[tuple[str, str]]:
    """Return (language, text) of every fenced block of the README, in order."""
    return [(match.group(1), match.group(2)) for match in BLOCK.finditer(README)]


def block(first_line: str, document: str = README) -> str:
    blocks = [match.group(2) for match in BLOCK.finditer(document)]
    [text] = [text for text in blocks if text.startswith(first_line)]
    return text


def test_every_readme_block_is_run_or_checked() -> None:
    blocks = readme_blocks()
    assert len(blocks) >= 20
    unclassified = [
        text.splitlines()[0]
        for _language, text in blocks
        if sum(text.startswith(first) for first in BLOCKS) != 1
    ]
    assert unclassified == []


def commands(text: str) -> list[str]:
    """Return the shell commands of a block: continuation lines joined, comments cut."""
    joined = text.replace("\\\n", " ")
    lines = [re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines()]
    return [line for line in lines if line]


def required_part(command: str) -> str:
    """Leave out the ``[...]`` options (nested brackets included) of a usage line."""
    previous = None
    while previous != command:
        previous, command = command, re.sub(r"\s*\[[^\[\]]*\]", "", command)
    return command


def optional_flags(command: str) -> set[str]:
    return set(re.findall(r"\[(-{1,2}[\w-]+)", command))


def argv(command: str) -> list[str]:
    words = shlex.split(command)
    program = {"websim": "websim_crawler", "scrapy": "scrapy"}[words[0]]
    return [sys.executable, "-m", program, *words[1:]]


def run(command: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a README command as a user in a checkout would (the project's settings)."""
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    return subprocess.run(
        argv(command), cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )


def check_flags_in_help(command: str, cwd: Path) -> None:
    words = shlex.split(command)
    help_command = " ".join(words[:2]) + " --help"
    if words[0] == "scrapy":
        help_command = f"scrapy {words[1]} --help"
    shown = run(help_command, cwd).stdout
    missing = [flag for flag in optional_flags(command) if flag not in shown]
    assert missing == [], (command, missing)


@pytest.fixture(scope="module")
def sites() -> Iterator[dict[str, str]]:
    server, static = serve_directory(ROOT / "tests" / "support" / "site")
    with DemoSite() as demo:
        yield {
            "demo": demo.url,
            "port": demo.url.rsplit(":", 1)[1].rstrip("/"),
            "static": static + "/",
            "record_a": demo.url + "record/1",
            "record_b": demo.url + "record/2",
        }
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``websim demo`` once: its output folder and what it printed."""
    folder = tmp_path_factory.mktemp("demo")
    finished = run("websim demo -o demo-output", folder)
    assert finished.returncode == 0, finished.stderr[-2000:]
    return folder / "demo-output", finished.stdout


def test_make_blocks_name_the_makefile_targets() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for first_line in ("make demo   # creates .venv", "make test     # lint"):
        for command in commands(block(first_line)):
            assert re.search(rf"^{command.split()[1]}:", makefile, re.MULTILINE), command
    assert re.search(r"^demo:.*\n\t.*-m websim_crawler demo$", makefile, re.MULTILINE)


def test_the_demo_block_serves_and_the_demo_output_reads_as_shown(
    demo_run: tuple[Path, str], tmp_path: Path
) -> None:
    lines = commands(block("make demo                       # or: websim demo"))
    assert lines == ["make demo", "websim demo --render", "websim demo --serve"]
    check_flags_in_help("websim demo [-o demo-output] [--n-clusters auto|K]", tmp_path)
    server = subprocess.Popen(
        argv(lines[2]), cwd=tmp_path, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert re.fullmatch(r"demo site at http://127\.0\.0\.1:\d+/ \(Ctrl-C stops it\)\n", first)
    # ``websim demo --render`` crawls with Chromium: tests/adapters/browser/test_rendering.py
    # runs it.
    shown = block("crawled 50 pages (40 record, 10 results)").splitlines()
    printed = demo_run[1].splitlines()[2:]  # after "demo site at ..." and "crawling it: ..."

    def shape(line: str) -> str:
        line = re.sub(r"\d+(\.\d+)?", "N", line)
        return re.sub(r"(pages  ).*$|(:\s+).*(/demo-output/)", r"\1\2\3", line)

    assert [shape(line) for line in printed] == [shape(line) for line in shown]


def test_the_demo_crawl_command_runs_as_written(sites: dict[str, str], tmp_path: Path) -> None:
    [command] = commands(block("scrapy crawl deepweb -a start_url=http://127.0.0.1:PORT/"))
    finished = run(command.replace("PORT", sites["port"]), tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    clusters = json.loads((tmp_path / "demo-output" / "clusters.json").read_text())
    assert len(clusters["documents"]) == 40
    assert (tmp_path / "demo-output" / "clusters.html").is_file()


def test_the_deepweb_blocks_run_as_written(sites: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "queries.txt").write_text("# the reader's queries\nbread\nvolcano\n")
    library = "https://library.example.org/"
    for command in commands(block("scrapy crawl deepweb -a start_url=" + library)):
        command = command.replace(f"{library}find?q={{query}}", sites["demo"] + "search?q={query}")
        finished = run(command.replace(library, sites["demo"]), tmp_path)
        assert finished.returncode == 0, (command, finished.stderr[-2000:])
        pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
        assert {page["kind"] for page in pages} >= {"results"}
        assert all(page["url"].startswith(sites["demo"]) for page in pages)


def test_the_site_block_runs_as_written(sites: dict[str, str], tmp_path: Path) -> None:
    [command] = commands(block("scrapy crawl site -a start_url=https://docs.example.org/"))
    check_flags_in_help(command, tmp_path)  # scrapy crawl --help: -a, -s (max_pages, render)
    assert set(re.findall(r"\[-a (\w+)=", command)) <= {"max_pages", "render"}
    runnable = required_part(command).replace("https://docs.example.org/", sites["static"])
    finished = run(runnable, tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    pages = (tmp_path / "pages.jsonl").read_text().splitlines()
    assert len(pages) >= 5 and all(json.loads(page)["kind"] == "page" for page in pages)


def test_the_page_analysis_block_runs(
    sites: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"html_bytes": urllib_get(sites["record_a"])}
    exec(block("from websim_crawler import AnalysisParams"), namespace)
    analysis = namespace["analysis"]
    printed = capsys.readouterr().out
    assert analysis.main_text in printed and len(analysis.keywords) >= 10
    text = analysis.main_text.lower()
    read_as_words = [
        word for word in analysis.keywords if re.search(rf"\b{re.escape(word)}\b", text)
    ]
    assert len(read_as_words) >= 0.95 * len(analysis.keywords)  # words of the text, not stems


def test_the_extract_block_runs(sites: dict[str, str], tmp_path: Path) -> None:
    [command] = commands(block("websim extract page.html"))
    check_flags_in_help(command, tmp_path)
    page = urllib_get(sites["record_a"])
    (tmp_path / "page.html").write_bytes(page)
    (tmp_path / "saved_pages").mkdir()
    (tmp_path / "saved_pages" / "b.html").write_bytes(urllib_get(sites["record_b"]))
    runnable = required_part(command).replace("https://example.com/article", sites["record_b"])
    finished = run(runnable, tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(record["main_text"] for record in records)


def urllib_get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read())


def test_the_cluster_block_runs(demo_run: tuple[Path, str], tmp_path: Path) -> None:
    [command] = commands(block("websim cluster pages.jsonl [more.jsonl ...]"))
    check_flags_in_help(command, tmp_path)
    (tmp_path / "pages.jsonl").write_bytes((demo_run[0] / "pages.jsonl").read_bytes())
    finished = run(required_part(command), tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert json.loads((tmp_path / "clusters.json").read_text())["clusters"]


def test_the_pipeline_settings_blocks_build_their_pipelines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy.utils.misc import build_from_crawler, load_object
    from scrapy.utils.test import get_crawler

    monkeypatch.chdir(tmp_path)
    for stage in ("clustering", "similarity"):
        text = next(
            text
            for first, kind in BLOCKS.items()
            if kind == "python" and first.endswith(stage)
            for text in [block(first)]
        )
        settings: dict[str, Any] = {}
        exec(text, {}, settings)
        crawler = get_crawler(settings_dict=settings)
        for path in settings["ITEM_PIPELINES"]:
            assert build_from_crawler(load_object(path), crawler) is not None


def test_the_stage_weights_block_of_the_docs_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README links this block (docs/similarity.md, "Fitted stage weights")."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    labels = np.array([1, 0] * 20)
    stage_scores = np.clip(rng.normal(0.3 + 0.4 * labels[:, None], 0.1, (40, 4)), 0, 1)
    exec(
        block(
            "from websim_crawler import StageCombiner",
            (ROOT / "docs" / "similarity.md").read_text(encoding="utf-8"),
        ),
        {"stage_scores": stage_scores, "labels": labels},
    )
    weights = json.loads((tmp_path / "weights.json").read_text())
    assert weights and "my labelled pairs" in json.dumps(weights)


def test_the_reference_index_python_block_of_the_docs_runs(
    sites: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/reference-index.md, "From Python": a page finds itself among the references."""
    monkeypatch.chdir(tmp_path)
    login = urllib_get(sites["record_a"])
    found: list[Any] = []
    exec(
        block(
            "from websim_crawler import ReferenceIndex",
            (ROOT / "docs" / "reference-index.md").read_text(encoding="utf-8"),
        ),
        {
            "login_html": login,
            "login_png": None,
            "html": login,
            "url": sites["record_a"],
            "print": lambda *values: found.append(values),
        },
    )
    assert (tmp_path / "refs.idx").is_file()
    assert found[0][0] == "https://bank.example/login" and found[0][2] == "similar"


def test_the_compare_block_runs(
    sites: dict[str, str], demo_run: tuple[Path, str], tmp_path: Path
) -> None:
    lines = commands(block("websim compare A B").replace("\n               [", " ["))
    assert [line.split()[:2] for line in lines] == [
        ["websim", "compare"],
        ["websim", "similar"],
        ["scrapy", "crawl"],
    ]
    (tmp_path / "A").write_bytes(urllib_get(sites["record_a"]))
    (tmp_path / "B").write_bytes(urllib_get(sites["record_b"]))
    (tmp_path / "pages.jsonl").write_bytes((demo_run[0] / "pages.jsonl").read_bytes())
    for command in lines:
        if command.startswith("websim"):
            check_flags_in_help(command, tmp_path)
        runnable = required_part(command)
        runnable = runnable.replace("url1=URL", f"url1={sites['record_a']}")
        runnable = runnable.replace("url2=URL", f"url2={sites['record_b']}")
        finished = run(runnable, tmp_path)
        assert finished.returncode in (0, 1), (runnable, finished.stderr[-2000:])  # 1: dissimilar
        assert "Traceback" not in finished.stderr
    assert json.loads((tmp_path / "pairs.json").read_text())["pages"] > 40
    assert (tmp_path / "report.jsonl").read_text().strip()


def test_the_reference_index_block_runs(sites: dict[str, str], tmp_path: Path) -> None:
    lines = commands(block("websim index protected/"))
    assert [line.split()[:2] for line in lines] == [
        ["websim", "index"],
        ["websim", "match"],
        ["websim", "serve"],
    ]
    lines, serve = lines[:2], lines[2]
    (tmp_path / "protected").mkdir()
    for number in (2, 3, 4):
        page = urllib_get(f"{sites['demo']}record/{number}")
        (tmp_path / "protected" / f"record-{number}.html").write_bytes(page)
    (tmp_path / "suspicious.html").write_bytes(urllib_get(f"{sites['demo']}record/3"))
    for command in lines:
        check_flags_in_help(command, tmp_path)
        runnable = required_part(command).replace("https://bank.example/login", sites["record_a"])
        finished = run(runnable, tmp_path)
        assert finished.returncode == 0, (runnable, finished.stderr[-2000:])  # 0: similar found
        assert "Traceback" not in finished.stderr
    matched = json.loads(finished.stdout.splitlines()[0])
    assert matched["matches"][0]["url"].endswith("protected/record-3.html")
    assert matched["matches"][0]["verdict"] == "similar"
    check_flags_in_help(serve, tmp_path)
    server = subprocess.Popen(
        [*argv(required_part(serve)), "--port", "0"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:  # the banner is printed once it listens: "websim serve: refs.idx on http://.../ (...)"
        assert server.stderr is not None
        base = server.stderr.readline().split(" on ", 1)[1].split("/ ", 1)[0]
        suspicious = (tmp_path / "suspicious.html").resolve()
        sent = urllib.request.Request(
            f"{base}/match?url={suspicious.as_uri()}", data=suspicious.read_bytes()
        )
        with urllib.request.urlopen(sent, timeout=120) as answer:
            assert json.loads(answer.read()) == matched
    finally:
        server.terminate()
        server.wait(60)


def test_the_neardup_block_runs(demo_run: tuple[Path, str], tmp_path: Path) -> None:
    (tmp_path / "pages.jsonl").write_bytes((demo_run[0] / "pages.jsonl").read_bytes())
    (tmp_path / "big").mkdir()
    for command in commands(block("websim neardup pages.jsonl -o neardup.json  ")):
        check_flags_in_help(command, tmp_path)
        # /big/tmp stands for a folder on a large disk of the reader's
        finished = run(required_part(command).replace("/big/tmp", "big"), tmp_path)
        assert finished.returncode == 0, (command, finished.stderr[-2000:])
        assert json.loads((tmp_path / "neardup.json").read_text())["stats"]["pages"]["seen"] > 40


DATA_KEYED = {"skipped", "dropped"}  # keyed by data (reasons counted), not by the schema


def keys(value: Any) -> Any:
    """Return the nested key structure of JSON data (lists: the union over their objects)."""
    if isinstance(value, dict):
        return {
            key: None if key in DATA_KEYED else keys(item)
            for key, item in value.items()
            if key != "..."
        }
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            if isinstance(item, dict):
                merged.update(keys(item))
        return merged or None
    return None


def missing_keys(shown: Any, real: Any, path: str = "") -> list[str]:
    """Return the paths of keys the README example shows that the real report lacks."""
    if not isinstance(shown, dict):
        return []
    if not isinstance(real, dict):
        return [path or "/"]
    missing = []
    for key, value in shown.items():
        if key not in real:
            missing.append(f"{path}/{key}")
        else:
            missing += missing_keys(value, real[key], f"{path}/{key}")
    return missing


def test_the_json_examples_show_the_real_reports_keys(
    demo_run: tuple[Path, str], tmp_path: Path
) -> None:
    clusters = json.loads((demo_run[0] / "clusters.json").read_text())
    shown = json.loads(block('{\n  "params"'))
    assert missing_keys(keys(shown), keys(clusters)) == []
    assert set(shown) == set(clusters)
    (tmp_path / "pages.jsonl").write_bytes((demo_run[0] / "pages.jsonl").read_bytes())
    assert run("websim neardup pages.jsonl -o neardup.json", tmp_path).returncode == 0
    neardup = json.loads((tmp_path / "neardup.json").read_text())
    shown = json.loads(block('{"pairs"'))
    assert missing_keys(keys(shown), keys(neardup)) == []
    assert set(shown) == set(neardup)


def test_the_distributed_block_s_flags_exist(tmp_path: Path) -> None:
    for command in commands(block("# 1. a Redis reachable by every machine")):
        if command.startswith("redis-server"):
            continue
        words = shlex.split(command)
        flags = {word.split("=")[0] for word in words if word.startswith("--")}
        help_text = run(" ".join(words[:2]) + " --help", tmp_path).stdout
        assert flags <= set(re.findall(r"--[\w-]+", help_text)), command
    assert "WEBSIM_REDIS_URL" in block("# 1. a Redis reachable by every machine")


def test_the_jobdir_block_runs_as_written(sites: dict[str, str], tmp_path: Path) -> None:
    [command] = commands(block("scrapy crawl deepweb -a start_url=URL -a queries=Q1,Q2"))
    runnable = command.replace("start_url=URL", f"start_url={sites['demo']}")
    finished = run(runnable.replace("queries=Q1,Q2", "queries=bread,bees"), tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert (tmp_path / "crawls" / "run1").is_dir()
    assert len(json.loads((tmp_path / "clusters.json").read_text())["documents"]) >= 8
