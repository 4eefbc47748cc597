"""``websim index`` and ``websim match`` as a user runs them: exit codes like grep's, --add,
an index of another version refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest
from support.imitations import imitate

from websim_crawler.core.reference_index import INDEX_FORMAT

SITE = Path(__file__).resolve().parents[1] / "support" / "site"
PAGES = ("about.html", "help.html", "index.html", "noform.html", "post.html")


def websim(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "websim_crawler", *arguments, "-s", "WEBSIM_ANALYSIS_WORKERS=1"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def references(tmp_path: Path) -> Path:
    folder = tmp_path / "protected"
    folder.mkdir()
    for name in PAGES:
        (folder / name).write_bytes((SITE / name).read_bytes())
    finished = websim("index", "protected", "-o", "refs.idx", cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert "5 page(s) added, 0 skipped; 5 references" in finished.stderr
    return tmp_path


def match_lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.slow
def test_an_imitation_matches_its_reference_and_exits_0(references: Path) -> None:
    original = (SITE / "help.html").read_bytes()
    copy = imitate(original, "http://127.0.0.1/help.html", seed=3)
    (references / "suspicious.html").write_text(copy.html, encoding="utf-8")
    finished = websim(
        "match", "suspicious.html", "--index", "refs.idx", "--top", "2", cwd=references
    )
    assert finished.returncode == 0, finished.stderr
    [line] = match_lines(finished.stdout)
    assert line["question"] == "looks-alike"
    matches = line["matches"]
    assert isinstance(matches, list) and len(matches) == 2
    assert matches[0]["url"].endswith("/protected/help.html")
    assert matches[0]["verdict"] == "similar"
    assert matches[0]["score"] >= matches[1]["score"]


@pytest.mark.slow
def test_a_page_like_no_reference_exits_1(references: Path) -> None:
    (references / "other.html").write_text(
        "<html><body><table><tr><td>" + "<b>quarterly figures</b>" * 40 + "</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    finished = websim(
        "match", "other.html", "--index", "refs.idx", "-o", "out.jsonl", cwd=references
    )
    assert finished.returncode == 1, finished.stderr
    [line] = match_lines((references / "out.jsonl").read_text())
    assert all(match["verdict"] != "similar" for match in line["matches"])


@pytest.mark.slow
def test_an_unreadable_page_or_index_exits_2_in_one_line(references: Path) -> None:
    finished = websim("match", "missing.html", "--index", "refs.idx", cwd=references)
    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    finished = websim("match", "protected", "--index", "protected/help.html", cwd=references)
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and "not a websim index" in finished.stderr


@pytest.mark.slow
def test_an_index_of_another_version_is_refused_in_one_line(references: Path) -> None:
    index = references / "refs.idx"
    with zipfile.ZipFile(index) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(index, "w") as archive:
        for info, data in members:
            if info.filename == "meta.json":
                meta = orjson.loads(data)
                meta.update(format=meta["format"] + 1, websim_version="9.0")
                data = orjson.dumps(meta)
            archive.writestr(info, data)
    for command in (
        ("match", "protected", "--index", "refs.idx"),
        ("index", "x", "-o", "refs.idx", "--add"),
    ):
        finished = websim(*command, cwd=references)
        assert finished.returncode == 2
        assert finished.stderr.count("\n") == 1, finished.stderr
        assert f"format {INDEX_FORMAT + 1}" in finished.stderr
        assert "rebuild it with websim index" in finished.stderr


@pytest.mark.slow
def test_add_grows_the_index_and_counts_what_it_skips(references: Path) -> None:
    (references / "more").mkdir()
    (references / "more" / "results.html").write_bytes((SITE / "results.html").read_bytes())
    (references / "more" / "help.html").write_bytes((SITE / "help.html").read_bytes())
    (references / "more" / "empty.html").write_bytes(b"")
    finished = websim("index", "more", "-o", "refs.idx", "--add", cwd=references)
    assert finished.returncode == 0  # an empty file is no page (told), as for every command
    assert "2 page(s) added, 0 skipped; 7 references" in finished.stderr
    assert "1 file(s) in folders are no page, feed or archive: not read" in finished.stderr
    finished = websim(
        "match", "more/results.html", "--index", "refs.idx", "--top", "1", cwd=references
    )
    assert finished.returncode == 0
    assert match_lines(finished.stdout)[0]["matches"][0]["url"].endswith("more/results.html")


@pytest.mark.slow
def test_add_without_an_index_and_no_page_at_all_are_errors(tmp_path: Path) -> None:
    (tmp_path / "empty.html").write_bytes(b"")
    finished = websim("index", "empty.html", "-o", "refs.idx", "--add", cwd=tmp_path)
    assert finished.returncode == 2 and "build it first" in finished.stderr
    finished = websim("index", "empty.html", "-o", "refs.idx", cwd=tmp_path)
    assert finished.returncode == 2 and "empty.html is empty" in finished.stderr
    assert not (tmp_path / "refs.idx").exists()


@pytest.mark.slow
def test_a_screenshot_beside_a_page_is_indexed_and_an_oversized_page_is_left_out(
    tmp_path: Path,
) -> None:
    from PIL import Image

    from websim_crawler.core.reference_index import ReferenceIndex

    folder = tmp_path / "protected"
    folder.mkdir()
    (folder / "help.html").write_bytes((SITE / "help.html").read_bytes())
    Image.new("RGB", (64, 48), (200, 30, 30)).save(folder / "help.png")
    (folder / "big.html").write_bytes(b"<html><body>" + b"<p>x</p>" * 40_000 + b"</body></html>")
    finished = websim(
        "index", "protected", "-o", "refs.idx", "-s", "WEBSIM_MAX_PAGE_BYTES=100000", cwd=tmp_path
    )
    assert finished.returncode == 1
    assert "1 page(s) added, 1 skipped" in finished.stderr
    assert "unreadable_too_large" in finished.stderr
    index = ReferenceIndex.load(tmp_path / "refs.idx")
    assert index.urls == [(folder / "help.html").resolve().as_uri()]
    assert index.reference(0).signature is not None


@pytest.mark.slow
@pytest.mark.parametrize("question", ["same-site", "same-template"])
def test_match_and_compare_agree_on_a_pair(references: Path, question: str) -> None:
    # A copy of a reference without its one absolute link, against a reference without it
    # too: same-site judges the pair by layout and text (no links on either side), so the index
    # must find it by them; same-template by the class names both use, kept in the index.
    twin = (SITE / "results.html").read_bytes().replace(b"https://elsewhere.example.org/", b"/x")
    (references / "twin").mkdir()
    (references / "twin" / "results.html").write_bytes(twin)
    assert websim("index", "twin", "-o", "refs.idx", "--add", cwd=references).returncode == 0
    (references / "query.html").write_bytes(twin)
    finished = websim(
        "match",
        "query.html",
        "--index",
        "refs.idx",
        "--question",
        question,
        "--top",
        "6",
        cwd=references,
    )
    [line] = match_lines(finished.stdout)
    [best] = [match for match in line["matches"] if match["url"].endswith("/twin/results.html")]
    compared = websim(
        "compare", "query.html", "twin/results.html", "--question", question, cwd=references
    )
    report = json.loads(compared.stdout)
    assert best["verdict"] == report["verdict"] == "similar"
    assert finished.returncode == compared.returncode == 0
    assert best["decided_by"] == report["decided_by"]
    assert best["stages"] == {
        stage["stage"]: None if stage["score"] is None else round(stage["score"], 6)
        for stage in report["stages"]
    }


# --- one reader: index and match read every input as the other commands do ----------------------


def two_pages() -> list[tuple[str, bytes]]:
    return [(f"http://site.test/{name}", (SITE / name).read_bytes()) for name in PAGES[:2]]


def written_inputs(tmp_path: Path) -> dict[str, Path]:
    """The same two pages as a two-capture WARC, a crawl feed and a folder."""
    from tests.support.warc_archives import write_warc

    responses = [
        (url, body, [("Content-Type", "text/html; charset=utf-8")], "200 OK")
        for url, body in two_pages()
    ]
    folder = tmp_path / "folder"
    folder.mkdir()
    for url, body in two_pages():
        (folder / url.rsplit("/", 1)[1]).write_bytes(body)
    feed = tmp_path / "pages.jsonl"
    feed.write_text(
        "".join(json.dumps({"url": url, "html": body.decode()}) + "\n" for url, body in two_pages())
    )
    return {
        "warc": write_warc(tmp_path / "pages.warc.gz", responses, with_requests=True),
        "feed": feed,
        "folder": folder,
    }


@pytest.mark.parametrize("kind", ["warc", "feed", "folder"])
def test_index_and_match_read_archives_feeds_and_folders_page_by_page(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A two-capture WARC is two pages (it was read as one HTML page: "1 page(s) added")."""
    from websim_crawler.cli import main

    source = written_inputs(tmp_path)[kind]
    index, workers = str(tmp_path / "refs.idx"), ["-s", "WEBSIM_ANALYSIS_WORKERS=1"]
    assert main(["index", str(source), "-o", index, *workers]) == 0, capsys.readouterr().err
    assert "2 page(s) added, 0 skipped; 2 references" in capsys.readouterr().err
    assert main(["match", str(source), "--index", index, "--top", "1", *workers]) == 0
    lines = match_lines(capsys.readouterr().out)
    assert len(lines) == 2
    for line in lines:
        [best] = line["matches"]  # each capture's best reference is itself
        assert best["url"] == line["url"] and best["verdict"] == "similar", line


def test_match_on_no_page_exits_2_in_one_line_and_keeps_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty feed exited 1 printing nothing (read as "no match"); a binary file exited 1
    with its problem inside the JSON."""
    from websim_crawler.cli import main

    source = written_inputs(tmp_path)["folder"]
    index, output = str(tmp_path / "refs.idx"), tmp_path / "out.jsonl"
    workers = ["-s", "WEBSIM_ANALYSIS_WORKERS=1"]
    assert main(["index", str(source), "-o", index, *workers]) == 0
    assert main(["match", str(source), "--index", index, "-o", str(output), *workers]) == 0
    capsys.readouterr()
    before = output.read_bytes()
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "bin.dat").write_bytes(b"\x00\x01\x02" + bytes(range(256)) * 8)
    for name, said in (("empty.jsonl", "is empty"), ("bin.dat", "is binary data")):
        argv = ["match", str(tmp_path / name), "--index", index, "-o", str(output), *workers]
        assert main(argv) == 2, name
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and said in captured.err, captured.err
        assert captured.out == "" and output.read_bytes() == before
