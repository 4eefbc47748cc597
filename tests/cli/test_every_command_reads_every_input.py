"""One reader, one count line: every command that takes pages reads every input kind (a saved
page, a folder, a crawl feed, a WARC file, a WACZ package, a URL, a mix) the same way and says
so in one line, "websim COMMAND: N page(s) read, M left out: reasons", with the same numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import serve_directory
from support.warc_archives import wacz, write_warc

from websim_crawler.cli import main

SITE = Path(__file__).resolve().parents[1] / "support" / "site"
PAGES = ("about.html", "help.html", "post.html")
COUNT_LINE = re.compile(r"^websim (\w+): (\d+) page\(s\) read, (\d+) left out(?:: (.*?))?(?:;|$)")
IN_PROCESS = ["-s", "WEBSIM_ANALYSIS_WORKERS=0"]


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The pages on a loopback server."""
    server, url = serve_directory(SITE)
    yield url + "/"
    server.shutdown()
    server.server_close()


def responses(site: str) -> list[tuple[str, bytes, list[tuple[str, str]], str]]:
    """The three pages as captures, and a capture that is no page (a 404)."""
    pages = [
        (site + name, (SITE / name).read_bytes(), [("Content-Type", "text/html")], "200 OK")
        for name in PAGES
    ]
    return [*pages, (site + "gone.html", b"<html>gone</html>", [], "404 Not Found")]


@pytest.fixture(scope="module")
def inputs(
    tmp_path_factory: pytest.TempPathFactory, site: str
) -> dict[str, tuple[list[str], int, dict[str, int]]]:
    """Each input kind: its arguments, the pages in it and what the reader leaves out."""
    folder = tmp_path_factory.mktemp("inputs")
    saved = folder / "saved"
    saved.mkdir()
    for name in PAGES:
        (saved / name).write_bytes((SITE / name).read_bytes())
    (saved / "notes.bin").write_bytes(b"\x00\x01 not a page")  # told apart, not a page left out
    feed = folder / "pages.jsonl"
    lines = [json.dumps({"url": site + name, "html": (SITE / name).read_text()}) for name in PAGES]
    feed.write_text("\n".join([*lines, "{not json"]) + "\n")
    archive = write_warc(folder / "pages.warc.gz", responses(site), with_requests=True)
    package = wacz(folder / "pages.wacz", {"pages.warc.gz": archive.read_bytes()})
    page = str(saved / PAGES[0])
    return {
        "html": ([page], 1, {}),
        "folder": ([str(saved)], 3, {}),
        "feed": ([str(feed)], 3, {"invalid_json": 1}),
        "warc": ([str(archive)], 3, {"error_status": 1}),
        "wacz": ([str(package)], 3, {"error_status": 1}),
        "url": ([site + PAGES[1]], 1, {}),
        # The URL is one the archive holds: read once.
        "mix": ([page, str(archive), site + PAGES[1]], 4, {"duplicate_url": 1, "error_status": 1}),
    }


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("index") / "refs.idx"
    assert main(["index", str(SITE / "index.html"), "-o", str(path), *IN_PROCESS]) == 0
    return str(path)


def command_line(command: str, sources: list[str], out: Path, index: str) -> list[str]:
    if command == "match":
        return ["match", *sources, "--index", index, *IN_PROCESS]
    target = out / ("refs.idx" if command == "index" else f"{command}.out")
    return [command, *sources, "-o", str(target), *IN_PROCESS]


def count_of(command: str, err: str) -> tuple[int, int, dict[str, int]]:
    """Return the one count line's pages read, pages left out and reasons."""
    found = [COUNT_LINE.match(line) for line in err.splitlines()]
    lines = [match for match in found if match and match.group(1) == command]
    assert len(lines) == 1, err
    reasons = lines[0].group(4) or ""
    told = {reason: int(count) for count, reason in re.findall(r"(\d+) (\w+)", reasons)}
    return int(lines[0].group(2)), int(lines[0].group(3)), told


@pytest.mark.parametrize("kind", ["html", "folder", "feed", "warc", "wacz", "url", "mix"])
@pytest.mark.parametrize("command", ["extract", "cluster", "similar", "neardup", "index", "match"])
def test_every_command_counts_every_input_kind_alike(
    command: str,
    kind: str,
    inputs: dict[str, tuple[list[str], int, dict[str, int]]],
    index: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sources, pages, left_out = inputs[kind]
    code = main(command_line(command, sources, tmp_path, index))
    err = capsys.readouterr().err
    # Done (1: a negative answer or some input failed); match, like grep, says 2 when some page
    # or feed line could not be read. Never "nothing read": the pages are counted below.
    assert code in ((0, 1, 2) if command == "match" else (0, 1)), err
    assert count_of(command, err) == (pages, sum(left_out.values()), left_out)


@pytest.mark.parametrize("kind", ["html", "url", "warc", "feed"])
def test_compare_counts_its_two_pages(
    kind: str,
    inputs: dict[str, tuple[list[str], int, dict[str, int]]],
    site: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if kind == "html":
        arguments = [str(SITE / PAGES[0]), str(SITE / PAGES[1])]
    elif kind == "url":
        arguments = [site + PAGES[0], site + PAGES[1]]
    else:  # two pages out of an archive or a feed
        arguments = [site + PAGES[0], site + PAGES[1], "--from", *inputs[kind][0]]
    assert main(["compare", *arguments, *IN_PROCESS]) in (0, 1)
    assert count_of("compare", capsys.readouterr().err) == (2, 0, {})
