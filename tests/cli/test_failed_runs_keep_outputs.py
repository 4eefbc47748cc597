"""A ``websim`` run that fails, reads nothing or finds only bad lines leaves the output it was to
replace byte for byte (write beside, then rename), and exits 2 with one line saying why."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from websim_crawler.cli import main

PAGES = Path(__file__).resolve().parents[1] / "support" / "pages_site"
WORDS = {
    "volcano": "volcano lava magma eruption crater ash",
    "bread": "bread dough flour oven yeast crust",
}
WORKERS = ["-s", "WEBSIM_ANALYSIS_WORKERS=1"]
# Inputs no command can use: each must leave the previous output as it was.
BAD_INPUTS = {
    "empty.jsonl": "",
    "array.json": '[{"url": "http://site.test/a", "html": "<p>a</p>"}]\n',
    "objects.jsonl": '{"foo": 1}\n{"foo": 2}\n',
    "types.jsonl": '{"url": 1, "html": 2}\n{"url": "http://site.test/b", "html": 3}\n',
    "no_html.jsonl": '{"url": "http://site.test/c"}\n{"url": "http://site.test/d"}\n',
    "missing.html": None,
}


def page_html(topic: str, number: int) -> str:
    words = WORDS[topic]
    return (
        f"<html><head><title>{topic} {number}</title></head><body>"
        "<div class='nav'><a href='/'>Home</a> <a href='/about'>About</a></div>"
        f"<div class='main'><p>{words} {words} story number {number} about {topic}.</p>"
        f"<p>More on {words} and the {topic} people who love it, part {number}.</p></div>"
        "</body></html>"
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A good feed of six pages on two topics, and every bad input beside it."""
    records = [
        {"url": f"http://site.test/{topic}/{n}", "html": page_html(topic, n)}
        for topic in WORDS
        for n in range(3)
    ]
    (tmp_path / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    for name, text in BAD_INPUTS.items():
        if text is not None:
            (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Return every file of ``folder`` (hidden temporaries too) with its bytes."""
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


def fails_and_keeps(
    argv: list[str], folder: Path, outputs: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    """Run ``argv`` (a failing run), assert exit 2 and the outputs unchanged; return stderr."""
    before = snapshot(folder)
    assert all(before[name] for name in outputs), "the good run wrote every output"
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert snapshot(folder) == before, argv  # byte for byte, and no temporary left
    assert "Traceback" not in err and err.count("\n") == 1, (argv, err)  # one line says why
    return err


@pytest.mark.parametrize(
    ("command", "options", "outputs"),
    [
        ("extract", [], ["out.json"]),
        ("cluster", ["--n-clusters", "2", "--html", "{folder}/report.html"], ["out.json"]),
        ("similar", [], ["out.json"]),
        ("neardup", [], ["out.json"]),
    ],
)
def test_a_run_on_inputs_it_cannot_use_keeps_the_previous_output(
    command: str, options: list[str], outputs: list[str], folder: Path, capsys: Any
) -> None:
    options = [option.format(folder=folder) for option in options]
    if "--html" in options:
        outputs = [*outputs, "report.html"]
    output = str(folder / "out.json")
    good = main([command, str(folder / "pages.jsonl"), "-o", output, *options])
    assert good == 0, capsys.readouterr().err
    capsys.readouterr()
    for name in BAD_INPUTS:
        argv = [command, str(folder / name), "-o", output, *options]
        fails_and_keeps(argv, folder, outputs, capsys)


def test_cluster_on_records_without_html_is_an_input_error(folder: Path, capsys: Any) -> None:
    """Not an empty report with exit 0 ("0 page(s) in 0 cluster(s)")."""
    output = str(folder / "out.json")
    assert main(["cluster", str(folder / "pages.jsonl"), "-o", output, "--n-clusters", "2"]) == 0
    capsys.readouterr()
    argv = ["cluster", str(folder / "no_html.jsonl"), "-o", output]
    err = fails_and_keeps(argv, folder, ["out.json"], capsys)
    assert err.count("\n") == 1 and "no page to cluster" in err and "2 no_keywords" in err


def test_index_keeps_its_file_when_no_page_is_added(folder: Path, capsys: Any) -> None:
    index = str(folder / "refs.idx")
    pages = [str(PAGES / "rivers.html"), str(PAGES / "volcanoes.html")]
    assert main(["index", *pages, "-o", index, *WORKERS]) == 0
    capsys.readouterr()
    for name in BAD_INPUTS:
        for add in ([], ["--add"]):
            argv = ["index", str(folder / name), "-o", index, *add, *WORKERS]
            fails_and_keeps(argv, folder, ["refs.idx"], capsys)


def test_compare_refuses_what_is_no_page_and_keeps_its_report(folder: Path, capsys: Any) -> None:
    """A binary file was compared as a page: a full "dissimilar" report, exit 1."""
    output = str(folder / "report.json")
    pages = [str(PAGES / "rivers.html"), str(PAGES / "volcanoes.html")]
    assert main(["compare", *pages, "-o", output, *WORKERS]) in (0, 1)
    capsys.readouterr()
    (folder / "bin.dat").write_bytes(b"\x00\x01\x02" + bytes(range(256)) * 8)
    for name, said in (
        ("bin.dat", "bin.dat is binary data or plain text, not an HTML page"),
        ("empty.jsonl", "empty.jsonl is empty"),
        ("pages.jsonl", "is a crawl feed (JSON Lines), not an HTML page; give --from"),
        ("missing.html", "cannot read"),
    ):
        for argv in ([str(folder / name), pages[0]], [pages[0], str(folder / name)]):
            err = fails_and_keeps(["compare", *argv, "-o", output], folder, ["report.json"], capsys)
            assert err.count("\n") == 1 and said in err, err


def test_a_killed_extract_leaves_the_previous_output(folder: Path) -> None:
    """``extract -o`` streams its lines into a temporary file beside the output: a SIGKILL half
    way leaves the previous output byte for byte; the next run removes the temporary file."""
    output = folder / "out.jsonl"
    output.write_bytes(b'{"url": "http://site.test/previous"}\n')
    records = [
        {"url": f"http://site.test/{topic}/{n}", "html": page_html(topic, n)}
        for n in range(4000)
        for topic in WORDS
    ]
    (folder / "many.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    command = [sys.executable, "-m", "websim_crawler", "extract", str(folder / "many.jsonl")]
    run = subprocess.Popen(
        [*command, "-o", str(output), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size for p in folder.glob(".out.jsonl.*.tmp")):  # lines written
            assert run.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert output.read_bytes() == b'{"url": "http://site.test/previous"}\n'
    assert main(["extract", str(PAGES / "rivers.html"), "-o", str(output), *WORKERS]) == 0
    assert json.loads(output.read_text())["title"] == "Where rivers begin"
    assert not list(folder.glob(".out.jsonl.*"))  # the killed run's temporary file removed
