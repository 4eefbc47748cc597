"""Result files are replaced atomically: a crash or a kill never leaves a half-written file."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import websim_crawler
from websim_crawler.cli import main
from websim_crawler.core.io import (
    atomic_write_json,
    atomic_write_pair,
    atomic_write_report,
    atomic_writer,
)

PACKAGE = Path(websim_crawler.__file__).resolve().parent
# Files opened for writing outside the atomic helpers of core/io/: the near-duplicate spill index
# is a working file in a temporary folder, not a result.
# Besides the atomic helpers: journals appended line by line (a stage's JOBDIR journal), the
# near-duplicate index's spill files.
WRITERS_ALLOWED = {
    "core/io/atomic.py",
    "core/io/pair_journal.py",
    "core/neardup/index.py",
    "frontier/surfacing_journal.py",  # an append-only journal: a cut last line is skipped
    "pipelines/_collection.py",
    "service/pages.py",  # a posted archive's scratch copy for the archive reader, then deleted
}
WRITING = re.compile(
    r"(?<!atomic_)write_text\(|(?<!atomic_)write_bytes\(|json\.dump\(|open\([^)]*[\"'][wa]b?\+?[\"']"
)


def test_an_error_while_writing_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "clusters.json"
    atomic_write_json(target, {"version": 1})
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write('{"version": 2, "clusters": [')
        raise RuntimeError("crash half-way")
    assert target.read_text(encoding="utf-8") == '{\n  "version": 1\n}\n'
    assert [path.name for path in tmp_path.iterdir()] == ["clusters.json"]  # no temp left


def test_a_killed_writer_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "pages.jsonl"
    target.write_text("old\n", encoding="utf-8")
    script = (
        "import sys, time\n"
        "from websim_crawler.core.io import atomic_writer\n"
        "with atomic_writer(sys.argv[1]) as out:\n"
        "    out.write('half a record'); out.flush(); print('writing', flush=True)\n"
        "    time.sleep(60)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert target.read_text(encoding="utf-8") == "old\n"
    (temporary,) = [path for path in tmp_path.iterdir() if path != target]
    assert temporary.name.startswith(".pages.jsonl.")  # hidden, and never the result


def test_extract_output_appears_only_when_complete(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Volcanoes erupt lava and ash.</p></body></html>", "utf-8")
    output = tmp_path / "out.jsonl"
    assert main(["extract", str(page), str(tmp_path / "missing.html"), "-o", str(output)]) == 1
    first, second = output.read_text(encoding="utf-8").splitlines()  # 1: a page failed
    assert "Volcanoes" in first and '"error"' in second
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl", "page.html"]


def test_result_files_are_written_only_through_the_atomic_helpers() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in WRITERS_ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if WRITING.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def test_the_next_write_removes_the_temporary_files_of_killed_writers(tmp_path: Path) -> None:
    target = tmp_path / "clusters.json"
    dead = tmp_path / ".clusters.json.999999999.abc.tmp"  # no such PID: its writer is gone
    alive = tmp_path / f".clusters.json.{os.getpid()}.abc.tmp"  # a writer still running
    other = tmp_path / ".other.json.999999999.abc.tmp"  # another file's: not ours to remove
    for path in (dead, alive, other):
        path.write_bytes(b"x" * 1000)
    atomic_write_json(target, {"version": 2})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["clusters.json", alive.name, other.name]
    )


PAIR_WRITER = """
import os, signal, sys
from websim_crawler.core.io import atomic_write_pair
renames = []
real_replace = os.replace
def replace(source, target):
    if str(target).endswith(".html") and not str(source).endswith(".pair.json"):
        os.kill(os.getpid(), signal.SIGKILL)  # killed between the two renames
    real_replace(source, target)
os.replace = replace
atomic_write_pair((sys.argv[1], "new json"), (sys.argv[2], "new html"))
"""


def test_a_report_and_its_html_are_replaced_as_a_pair(tmp_path: Path) -> None:
    report, html = tmp_path / "clusters.json", tmp_path / "view" / "clusters.html"
    atomic_write_pair((report, "old json"), (html, "old html"))
    assert (report.read_text("utf-8"), html.read_text("utf-8")) == ("old json", "old html")
    writer = subprocess.run([sys.executable, "-c", PAIR_WRITER, str(report), str(html)])
    assert writer.returncode == -signal.SIGKILL
    assert (report.read_text("utf-8"), html.read_text("utf-8")) == ("new json", "old html")
    # The next write of the report rolls the pair forward first: both new, then its own text.
    with pytest.raises(RuntimeError), atomic_writer(report) as handle:
        handle.write("half")
        raise RuntimeError("crash")
    assert (report.read_text("utf-8"), html.read_text("utf-8")) == ("new json", "new html")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "clusters.html",
        "clusters.json",
    ]
    # The helper the clustering stages call writes the report and its HTML as such a pair.
    atomic_write_report(report, {"n": 1}, html, "<p>1</p>")
    assert json.loads(report.read_text("utf-8")) == {"n": 1}
    assert html.read_text("utf-8") == "<p>1</p>"
