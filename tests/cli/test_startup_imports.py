"""Start-up stays light: a command imports only its own module, and the page analysis neither
NLTK nor SciPy (each takes longer to import than analysing a page)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from websim_crawler import cli

PAGE = (
    "<html><head><title>Telescopes</title></head><body><div><h1>Telescopes</h1>"
    "<p>Amateur astronomers choose telescopes by aperture, mount and the night sky they "
    "observe; refracting telescopes suit planets, reflecting ones faint galaxies.</p>"
    "</div></body></html>"
)


def modules_after(code: str) -> set[str]:
    """Run ``code`` in a fresh interpreter and return the modules it imported."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_help_imports_no_subcommand() -> None:
    modules = modules_after(
        "import contextlib\nfrom websim_crawler.cli import main\n"
        "with contextlib.suppress(SystemExit):\n    main(['--help'])"
    )
    assert "websim_crawler.cli" in modules
    assert sorted(m for m in modules if m.startswith("websim_crawler.cli.")) == []
    assert "numpy" not in modules


def test_extract_imports_only_its_subcommand_and_no_heavy_library(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    output = tmp_path / "out.jsonl"
    modules = modules_after(
        "from websim_crawler.cli import main\n"
        f"assert main(['extract', {str(page)!r}, '-o', {str(output)!r}]) == 0"
    )
    record = json.loads(output.read_text(encoding="utf-8"))
    assert "telescop" in record["keyword_stems"] and "telescop" not in record["keywords"]
    commands = {m for m in modules if m.startswith("websim_crawler.cli.") and "._" not in m}
    assert commands == {"websim_crawler.cli.extract"}
    heavy = {"nltk", "scipy", "scrapy", "twisted", "sklearn", "ot"}
    assert heavy & modules == set()
    # One page is analysed in a budgeted worker (pebble), with no progress bar, no HTTP client.
    assert {"tqdm", "urllib.request"} & modules == set()


# The similarity stack: optimal transport (POT), scikit-learn, faiss, SciPy; and numpy under them.
SIMILARITY_STACK = {"ot", "sklearn", "faiss", "scipy", "numpy"}


def command_after(argv: list[str], cwd: Path) -> tuple[int, str, set[str]]:
    """Run ``main(argv)`` in a fresh interpreter in ``cwd``; return its exit code, stderr and
    the modules imported by then."""
    script = (
        "import contextlib, io, json, sys\nfrom websim_crawler.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        code = main({argv!r})\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        "print(json.dumps([code, sorted(sys.modules)]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=cwd
    )
    code, modules = json.loads(result.stdout.splitlines()[-1])
    return code, result.stderr, set(modules)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["index", "--help"], ""),
        (["match", "--help"], ""),
        (["index", "page.html"], "required: -o/--output"),
        (["index", "page.html", "-o", "refs.idx", "--add"], "--add: no index at refs.idx"),
        (["match", "page.html"], "give the index: --index INDEX"),
        (["match", "page.html", "--index", "missing.idx"], "no index at missing.idx"),
    ],
)
def test_index_and_match_answer_help_and_a_missing_index_before_heavy_imports(
    argv: list[str], said: str, tmp_path: Path
) -> None:
    """A script calling ``websim match`` per page pays start-up every time: a missing index is
    told before the similarity stack is imported (it was about 1 s of CPU, 3 s on a busy box)."""
    (tmp_path / "page.html").write_text(PAGE, encoding="utf-8")
    code, err, modules = command_after(argv, tmp_path)
    assert code == (0 if not said else 2)
    assert said in (err.splitlines() or [""])[-1], err  # argparse prints its usage above
    assert SIMILARITY_STACK & modules == set(), argv
    assert "websim_crawler.core.reference_index.index" not in modules


# What no command's ``--help`` imports: the similarity stack, SciPy, NLTK, Scrapy, Twisted, Dask.
HEAVY = {"ot", "sklearn", "faiss", "scipy", "nltk", "scrapy", "twisted", "dask", "distributed"}


@pytest.mark.parametrize("command", [name for name, _ in cli._subcommands()])
def test_every_command_answers_help_before_heavy_imports(command: str, tmp_path: Path) -> None:
    """``websim compare --help`` took 1.3 s of CPU importing POT and scikit-learn."""
    code, _, modules = command_after([command, "--help"], tmp_path)
    assert code == 0
    assert {module.split(".")[0] for module in modules} & HEAVY == set()


def test_nltk_is_imported_only_for_its_stemmer() -> None:
    snowball = modules_after(
        "from websim_crawler.core.text import keyword_tokens\n"
        "assert keyword_tokens('Telescopes observing', 'en') == ['telescop', 'observ']"
    )
    nltk = modules_after(
        "from websim_crawler.core.text import keyword_tokens\n"
        "assert keyword_tokens('generously', 'en', stemmer_name='nltk') == ['gener']"
    )
    assert "nltk" not in snowball
    assert "nltk" in nltk


def test_a_chosen_command_reads_no_other_command_s_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other commands' one-line summaries (each an ``ast`` parse of its module) show only in
    the top-level help, so a command named on the command line does not read them."""
    summarised: list[str] = []
    monkeypatch.setattr(cli, "_summary", lambda path: summarised.append(path) or "summary")
    cli.build_parser(["extract", "page.html"])
    assert summarised == []
    for argv in (["--help"], ["extrac"], []):
        summarised.clear()
        cli.build_parser(argv)
        assert len(summarised) == len(cli._subcommands()), argv


def _threads_after_command(argv: list[str], environment: dict[str, str]) -> tuple[str, int]:
    """Run ``main(argv)`` in a fresh interpreter, import numpy, and return OPENBLAS_NUM_THREADS
    and the process's thread count (Linux's /proc) then."""
    script = (
        "import contextlib, os\nfrom websim_crawler.cli import main\n"
        f"with contextlib.suppress(SystemExit):\n    main({argv!r})\n"
        "import numpy\nnumpy.ones((64, 64)) @ numpy.ones((64, 64))\n"
        "chosen = os.environ.get('OPENBLAS_NUM_THREADS', '')\n"
        "print(repr(chosen), len(os.listdir('/proc/self/task')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    chosen, threads = result.stdout.splitlines()[-1].split()
    return chosen.strip("'"), int(threads)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_commands_but_cluster_start_numpy_with_one_blas_thread(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    extract = ["extract", str(page), "-o", str(tmp_path / "out.jsonl"), "--workers", "0"]
    assert _threads_after_command(extract, environment) == ("1", 1)
    assert _threads_after_command(["settings", "WEBSIM_MAX_ELEMENTS"], environment) == ("1", 1)
    chosen, _threads = _threads_after_command(["cluster", "--help"], environment)
    assert chosen == ""  # fuzzy c-means multiplies matrices: numpy's own choice
    # What the user set stays.
    environment["OPENBLAS_NUM_THREADS"] = "2"
    assert _threads_after_command(extract, environment)[0] == "2"


def test_a_caller_that_imported_numpy_keeps_its_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Past numpy's import the thread setting would only reach child processes: ``main`` called
    from such a process (this test run) leaves the environment as it was."""
    import numpy  # noqa: F401  (imported, as by any caller of numpy)

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert cli.main(["settings", "WEBSIM_MAX_ELEMENTS"]) == 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ
