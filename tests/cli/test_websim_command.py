"""The ``websim`` command line: one reader of inputs, one config door, exit codes and messages."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import analysed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.cli._flags import COMMAND_FLAGS
from websim_crawler.cli._inputs import find_inputs
from websim_crawler.cli._settings import command_flags
from websim_crawler.cli._sources import FeedReader, read_page
from websim_crawler.config import (
    InputParams,
    WebsimConfig,
    declared_setting_fields,
)
from websim_crawler.core.clustering import DocumentCollector
from websim_crawler.core.io import atomic_write_text
from websim_crawler.core.neardup import NearDuplicateFinder
from websim_crawler.core.similarity.collection import PageCollector, record_problem
from websim_crawler.errors import ConfigError, InputFormatError, OutputPathError, PageError
from websim_crawler.pipelines import PageAnalysisPipeline
from websim_crawler.pipelines.clustering import ClusteringPipeline
from websim_crawler.pipelines.neardup import NearDuplicatePipeline
from websim_crawler.pipelines.similarity import SimilarityPipeline

REPO = Path(__file__).resolve().parents[2]
PAGES = Path(__file__).resolve().parents[1] / "support" / "pages_site"
COMMANDS = ("extract", "cluster", "compare", "similar", "neardup", "seed", "demo")
INDEX_COMMANDS = ("index", "match", "serve")  # tested in test_index_and_match.py, tests/service


def page_html(topic: str, number: int) -> str:
    words = {
        "volcano": "volcano lava magma eruption crater ash",
        "bread": "bread dough flour oven yeast crust",
    }[topic]
    return (
        f"<html><head><title>{topic} {number}</title></head><body>"
        "<div class='nav'><a href='/'>Home</a> <a href='/about'>About</a></div>"
        f"<div class='main'><p>{words} {words} story number {number} about {topic}.</p>"
        f"<p>More on {words} and the {topic} people who love it, part {number}.</p></div>"
        "</body></html>"
    )


def write_feed(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    """A feed of six pages without ``kind`` (as a user's spider writes), two topics."""
    records = [
        {"url": f"http://site.test/{topic}/{n}", "html": page_html(topic, n)}
        for topic in ("volcano", "bread")
        for n in range(3)
    ]
    return write_feed(tmp_path / "pages.jsonl", records)


def run_module(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m websim_crawler`` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "websim_crawler", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- the reader of pages and feeds --------------------------------------------------------------


def test_folders_expand_sorted_and_bounded_by_max_files(tmp_path: Path) -> None:
    for name in ("b.html", "a.htm", "c.html.gz", "notes.txt", "sub/d.html"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"<p>x</p>" if name != "notes.txt" else b"notes")
    found = find_inputs([str(tmp_path)], WebsimConfig.from_settings({}))
    assert [Path(p).name for p in found.of_kind("html")] == [
        "a.htm",
        "b.html",
        "c.html.gz",
        "d.html",
    ]
    assert found.left_out == 0 and found.not_inputs == 1  # told by content, not by name
    bounded = find_inputs(
        [str(tmp_path), "http://127.0.0.1:1/x"],
        WebsimConfig.from_settings({"WEBSIM_MAX_INPUT_FILES": 2}),
    )
    assert [Path(p).name for p, _kind in bounded.sources] == ["a.htm", "b.html"]
    assert bounded.left_out == 3
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFormatError, match=r"empty holds no \.html"):
        find_inputs([str(tmp_path / "empty")], WebsimConfig.from_settings({}))


def test_pages_are_read_from_gzip_files_and_loopback_urls(tmp_path: Path, site_url: str) -> None:
    html = (PAGES / "rivers.html").read_bytes()
    (tmp_path / "a.html.gz").write_bytes(gzip.compress(html))
    (tmp_path / "b.html").write_bytes(gzip.compress(html))  # gzip bytes without the suffix
    config = WebsimConfig()
    assert read_page(str(tmp_path / "a.html.gz"), config).body == html
    assert read_page(str(tmp_path / "b.html"), config).body == html
    fetched = read_page(f"{site_url}/rivers.html", config)
    assert fetched.body == html and fetched.url == f"{site_url}/rivers.html"
    assert fetched.content_type is not None and "text/html" in fetched.content_type


def test_page_reads_are_bounded_and_failures_have_reasons(tmp_path: Path) -> None:
    config = WebsimConfig.from_settings({"WEBSIM_MAX_PAGE_BYTES": "1000"})
    (tmp_path / "big.html").write_bytes(b"<p>" + b"a" * 5000 + b"</p>")
    (tmp_path / "bomb.html.gz").write_bytes(gzip.compress(b"a" * 1_000_000))  # 1 KB packed
    for name in ("big.html", "bomb.html.gz"):
        with pytest.raises(PageError) as caught:
            read_page(str(tmp_path / name), config)
        assert caught.value.reason == "too_large"
    with pytest.raises(PageError) as caught:
        read_page(str(tmp_path / "missing.html"), config)
    assert caught.value.reason == "unreadable"
    with pytest.raises(PageError) as caught:
        read_page("http://127.0.0.1:9/closed", config)  # the discard port: nothing listens
    assert caught.value.reason == "unreachable"


def test_feeds_are_checked_before_reading(tmp_path: Path, feed: Path) -> None:
    (tmp_path / "page.html").write_text("<!DOCTYPE html><html><p>hi</p></html>")
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "folder").mkdir()
    reader = FeedReader(
        [str(feed), str(tmp_path / "page.html"), str(tmp_path / "binary.jsonl")], InputParams()
    )
    assert len(list(reader)) == 6
    assert reader.paths == [str(feed)]
    assert [line.split(" ")[1:3] for line in reader.failed] == [["is", "an"], ["is", "binary"]]
    for bad, message in (
        ("folder", "is a folder"),
        ("missing.jsonl", "cannot read"),
        ("page.html", "websim extract"),
    ):
        with pytest.raises(InputFormatError, match=message):
            FeedReader([str(tmp_path / bad)], InputParams())


def test_feed_lines_over_the_record_limit_are_skipped_and_counted(tmp_path: Path) -> None:
    path = write_feed(
        tmp_path / "f.jsonl", [{"url": "http://a.test/1"}, {"url": "x" * 500}, {"url": "b"}]
    )
    reader = FeedReader([str(path)], InputParams(max_record_bytes=100))
    assert [record["url"] for record in reader] == ["http://a.test/1", "b"]
    assert reader.report.skipped == {"too_large": 1}


# --- exit codes and one-line messages ------------------------------------------------------------


def only_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("command", ["cluster", "similar", "neardup"])
def test_an_html_page_given_to_a_collection_command_is_read_as_a_page(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: Any
) -> None:
    page = tmp_path / "page.jsonl"  # named like a feed: its content tells what it is
    lines = (f"<p>Lava line {number} flows from the volcano crater.</p>\n" for number in range(600))
    page.write_text("<html><body>" + "".join(lines) + "</body></html>")
    output = tmp_path / "out.json"
    assert main([command, str(page), "-o", str(output)]) == 0  # one page, with keywords
    captured = capsys.readouterr()
    assert "error" not in captured.err and "Traceback" not in captured.err
    assert not [record for record in caplog.records if "line skipped" in record.getMessage()]
    assert output.exists()


@pytest.mark.parametrize("command", ["cluster", "similar", "neardup"])
def test_binary_and_empty_feeds_are_usage_errors(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary, empty = tmp_path / "b.jsonl", tmp_path / "e.jsonl"
    # Binary from its first byte: random bytes may begin with "<" or "{" (about 1 in 100 runs),
    # which would rightly make them a page or a feed.
    binary.write_bytes(b"\x00" + random.Random(5).randbytes(3000))
    empty.write_bytes(b"")
    objects = write_feed(tmp_path / "o.jsonl", [[1, 2], "text", 3])
    for path, message in (
        (binary, "is binary data, not a JSON Lines feed"),
        (empty, "is empty: no page to work on"),
        (objects, "no JSON Lines record (3 line(s) are not JSON objects)"),
    ):
        assert main([command, str(path), "-o", str(tmp_path / "out.json")]) == 2
        assert message in only_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["cluster", "similar", "neardup", "extract", "compare"])
def test_unwritable_outputs_stop_before_the_work(
    command: str, tmp_path: Path, feed: Path, capsys: Any
) -> None:
    page = str(PAGES / "rivers.html")
    source = {"extract": [page], "compare": [page, page]}.get(command, [str(feed)])
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main([command, *source, "-o", str(folder)]) == 2
    line = only_line(capsys.readouterr().err)
    assert f"{folder} is a folder: give a file name" in line
    assert main([command, *source, "-o", "/proc/websim/out.json"]) == 2
    assert "cannot write /proc/websim/out.json" in only_line(capsys.readouterr().err)
    assert list(folder.iterdir()) == []


def test_extract_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["extract", str(tmp_path / "empty")]) == 2
    assert "holds no .html" in only_line(capsys.readouterr().err)
    assert main(["extract", str(tmp_path / "missing.html")]) == 2  # nothing readable at all
    captured = capsys.readouterr()
    assert "no page could be read of " in only_line(captured.err) and captured.out == ""
    page = str(PAGES / "rivers.html")
    output = tmp_path / "out.jsonl"
    assert main(["extract", page, str(tmp_path / "missing.html"), "-o", str(output)]) == 1
    assert "1 of 2 pages failed (1 unreadable)" in capsys.readouterr().err
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert records[0]["title"] == "Where rivers begin" and records[1]["error"] == "unreadable"


def test_compare_reads_gzip_pages_like_extract(tmp_path: Path, capsys: Any) -> None:
    html = (PAGES / "rivers.html").read_bytes()
    for name in ("a.html.gz", "b.html.gz"):
        (tmp_path / name).write_bytes(gzip.compress(html))
    code = main(["compare", str(tmp_path / "a.html.gz"), str(tmp_path / "b.html.gz")])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["verdict"]) == (0, "similar")
    assert report["stages"][0]["score"] == pytest.approx(1.0)


def test_mistakes_through_real_subprocesses(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("<html><body>" + "<p>x</p>\n" * 600 + "</body></html>")
    (tmp_path / "b.bin").write_bytes(b"\x00\x01" * 2000)
    (tmp_path / "empty").mkdir()
    cases = [
        (["cluster", "b.bin", "-o", "c.json"], "b.bin is binary data"),
        (["extract", "empty"], "empty holds no .html"),
        (["extract", "page.html", "-o", "/proc/x"], "cannot write /proc/x"),
        (["cluster", "page.html", "-s", "WEBSIM_CLUSTER_OUTPUT=c.json"], "did you mean"),
    ]
    for arguments, message in cases:
        finished = run_module(*arguments, cwd=tmp_path)
        assert finished.returncode == 2, finished.stderr
        assert message in only_line(finished.stderr)
    assert not (tmp_path / "c.json").exists()


def test_a_closed_pipe_ends_extract_quietly(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    for number in range(40):  # far more JSON than a pipe buffer holds
        (pages / f"{number:02d}.html").write_bytes((PAGES / "volcanoes.html").read_bytes())
    process = subprocess.Popen(
        [sys.executable, "-m", "websim_crawler", "extract", str(pages)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    assert json.loads(process.stdout.readline())["title"]  # like `| head -1`
    process.stdout.close()
    assert process.wait(timeout=120) == 141
    assert "Traceback" not in process.stderr.read()


# --- one door for settings --------------------------------------------------------------------


def test_every_flag_aliases_a_declared_setting_once_per_command() -> None:
    declared = declared_setting_fields()
    for flag in COMMAND_FLAGS:
        assert flag.setting in declared, flag
        assert set(flag.commands) <= {*COMMANDS, *INDEX_COMMANDS}, flag
    for command in COMMANDS:
        names = [name for flag in command_flags(command) for name in flag.flags]
        assert len(names) == len(set(names)), command
        settings_of = [flag.setting for flag in command_flags(command)]
        assert len(settings_of) == len(set(settings_of)), command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_settings_and_refuses_unknown_names(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = {"compare": ["a", "b"], "seed": ["site"], "demo": []}.get(command, ["in"])
    assert main([command, *arguments, "-s", "WEBSIM_CLUSTER_OUTPUT=x"]) == 2
    assert only_line(capsys.readouterr().err) == (
        f"websim {command}: error: unknown setting WEBSIM_CLUSTER_OUTPUT "
        "(did you mean WEBSIM_CLUSTERS_OUTPUT?)"
    )


def test_unknown_websim_settings_stop_a_crawl_config() -> None:
    with pytest.raises(ConfigError, match="did you mean WEBSIM_NEARDUP_OUTPUT"):
        WebsimConfig.from_settings(Settings({"WEBSIM_NEARDUP_OUTPT": "n.json"}))
    with pytest.raises(ConfigError, match=r"unknown setting WEBSIM_ZZZ$"):
        WebsimConfig.from_settings({"WEBSIM_ZZZ": 1})
    assert WebsimConfig.from_settings(Settings({"OTHER_SETTING": 1})) == WebsimConfig()


def test_a_flag_beats_s_which_beats_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    page = str(PAGES / "rivers.html")

    def extract(*arguments: str) -> dict[str, Any]:
        assert main(["extract", page, *arguments]) == 0
        return dict(json.loads(capsys.readouterr().out))

    assert "chunks" in extract()
    assert "chunks" not in extract("-s", "WEBSIM_CHUNK_DETAIL=none")
    assert "chunks" not in extract("--chunks", "none", "-s", "WEBSIM_CHUNK_DETAIL=full")
    assert len(extract("--chunks", "full", "-s", "WEBSIM_CHUNK_DETAIL=main")["chunks"]) > len(
        extract("-s", "WEBSIM_CHUNK_DETAIL=main")["chunks"]
    )
    assert extract("-s", "WEBSIM_LANGUAGE=fr")["language"] == "fr"
    assert extract("--language", "de", "-s", "WEBSIM_LANGUAGE=fr")["language"] == "de"
    assert main(["extract", page, "--chunks", "some"]) == 2  # argparse: the setting's choices
    capsys.readouterr()


def test_a_bad_flag_value_names_the_flag(capsys: pytest.CaptureFixture[str], feed: Path) -> None:
    assert main(["cluster", str(feed), "-o", "c.json", "-m", "0.5"]) == 2
    assert "error: --fuzziness must be >= 1.01, got 0.5" in capsys.readouterr().err
    assert main(["cluster", str(feed), "-o", "c.json", "-s", "WEBSIM_CLUSTERS_FUZZINESS=0.5"]) == 2
    assert "error: WEBSIM_CLUSTERS_FUZZINESS must be >= 1.01" in capsys.readouterr().err
    assert main(["cluster", str(feed)]) == 2
    assert "-o FILE (or -s WEBSIM_CLUSTERS_OUTPUT=FILE)" in capsys.readouterr().err


def test_extract_and_the_pipeline_write_the_same_record(capsys: Any) -> None:
    settings = {"WEBSIM_CHUNK_DETAIL": "main", "WEBSIM_HYPERLINK_THRESHOLD": "0.3"}
    page = PAGES / "volcanoes.html"
    pairs = [part for name, value in settings.items() for part in ("-s", f"{name}={value}")]
    assert main(["extract", str(page), *pairs]) == 0
    extracted = json.loads(capsys.readouterr().out)
    in_process = {**settings, "WEBSIM_ANALYSIS_WORKERS": "0"}
    pipeline = build_from_crawler(PageAnalysisPipeline, get_crawler(settings_dict=in_process))
    item = analysed(pipeline, {"url": page.resolve().as_uri(), "html": page.read_text()})
    fields = ("title", "language", "main_text", "keywords", "links", "chunks")
    written = json.loads(json.dumps({name: item[name] for name in fields}))  # as a feed holds it
    assert written == {name: extracted[name] for name in fields}
    assert extracted["chunks"] and all(chunk["is_main"] for chunk in extracted["chunks"])
    assert main(["extract", str(page), "--chunks", "full"]) == 0  # other settings, another record
    assert json.loads(capsys.readouterr().out)["chunks"] != extracted["chunks"]


def test_cluster_analyses_pages_with_the_settings_given(
    tmp_path: Path, feed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "c.json"
    assert main(["cluster", str(feed), "-o", str(output), "--n-clusters", "2"]) == 0
    report = json.loads(output.read_text())
    assert len(report["documents"]) == 6  # pages without a kind are ordinary pages
    assert sorted(cluster["size"] for cluster in report["clusters"]) == [3, 3]
    capsys.readouterr()
    before = output.read_bytes()
    code = main(["cluster", str(feed), "-o", str(output), "-s", "WEBSIM_MAX_PAGE_BYTES=100"])
    assert code == 1  # every analysis failed under the small limit, reported
    assert output.read_bytes() == before  # a run that clustered nothing replaces nothing
    assert "(left out: 6 analysis_too_large)" in capsys.readouterr().err


# --- input validation, each URL once ---------------------------------------------------------


MALFORMED = [
    {"url": "http://a.test/1", "html": 42},
    {"url": {"href": "http://a.test/2"}, "html": "<p>x</p>"},
    {"url": "http://a.test/3", "html": "<p>x</p>", "links": ["http://b.test/", None]},
    {"url": "http://a.test/4", "html": "<p>x</p>", "keywords": {"word": math.nan}},
    {"url": "http://a.test/5", "html": "<p>x</p>", "keywords": ["word"]},
    {"url": "http://a.test/6", "html": "<p>x</p>", "links": "http://b.test/"},
    {"url": "http://a.test/7", "html": "<p>x</p>", "screenshot": 7},
    {"url": "http://a.test/8", "html": "<p>x</p>", "keywords": {"word": True}},
    {"html": "<p>no url</p>"},
]


def test_similar_skips_malformed_records_by_reason(tmp_path: Path, capsys: Any) -> None:
    good = [{"url": f"http://s.test/{n}", "html": page_html("volcano", n)} for n in range(3)]
    lines = [json.dumps(record, allow_nan=True) for record in [*good, good[0], *MALFORMED]]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(lines) + "\n")
    output = tmp_path / "pairs.json"
    assert main(["similar", str(path), "-o", str(output)]) == 1
    assert "8 record(s) with fields of the wrong type skipped" in capsys.readouterr().err
    report = json.loads(output.read_text())
    assert report["pages"] == 3
    assert report["skipped_pages"] == {"no_url": 1}
    assert report["skipped_lines"] == {  # each URL once, as it is read; wrong types as read
        "duplicate_url": 1,
        "bad_html": 1,
        "bad_keywords": 3,
        "bad_links": 2,
        "bad_screenshot": 1,
        "bad_url": 1,
    }
    assert report["pairs"] and all(pair["url_1"] != pair["url_2"] for pair in report["pairs"])


@pytest.mark.parametrize("command", ["cluster", "similar", "neardup"])
def test_every_feed_command_skips_hostile_lines_with_one_summary_line_and_exit_1(
    tmp_path: Path, capsys: Any, command: str
) -> None:
    """Nested 200k deep, a 5,000-digit integer, 10**400, wrong field types: skipped, exit 1."""
    good = [
        {"url": f"http://s.test/{n}", "html": page_html("volcano", n), "keywords": {"lava": 2}}
        for n in range(4)
    ]
    hostile = [
        '{"url": "http://s.test/d", "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
        '{"url": "http://s.test/i", "keywords": {"lava": ' + "7" * 5000 + "}}",
        json.dumps({"url": "http://s.test/p", "keywords": {"lava": 10**400}}),
        json.dumps({"url": 5, "html": "<p>x</p>"}),
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join([*map(json.dumps, good), *hostile]) + "\n")
    output = tmp_path / "out.json"
    assert main([command, str(path), "-o", str(output), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "1 feed line(s) skipped: too deep" in err
    assert "2 feed line(s) skipped: huge number" in err
    assert "1 record(s) with fields of the wrong type skipped (1 bad_url)" in err
    assert output.exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["url", "html", "links", "keywords", "screenshot", "kind"]),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=True)
            | st.text(max_size=30)
            | st.just("<html><body><p>one small page of text</p></body></html>"),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
            max_leaves=6,
        ),
    )
)
def test_any_record_is_kept_or_skipped_with_a_reason(record: dict[str, Any]) -> None:
    collector = PageCollector()
    reason = collector.add(record)
    if reason is not None:
        assert collector.skipped == {reason: 1} and not collector.pages
    else:
        assert record_problem(record) is None and len(collector.pages) == 1
    documents = DocumentCollector("all")
    documents.add(record)
    assert documents.report.pages == 1


def test_every_command_counts_each_url_once(tmp_path: Path, capsys: Any) -> None:
    text = " ".join(
        f"Sentence number {n} about the long history of volcanoes and their eruptions here."
        for n in range(12)
    )
    html = f"<html><body><div><p>{text}</p></div></body></html>"
    records = [{"url": "http://a.test/same", "html": html}] * 3
    records.append({"url": "http://b.test/other", "html": html})
    path = write_feed(tmp_path / "f.jsonl", records)
    for command in ("similar", "neardup"):
        output = tmp_path / f"{command}.json"
        assert main([command, str(path), "-o", str(output)]) == 0
        pairs = json.loads(output.read_text())["pairs"]
        ends = [(p.get("url_1", p.get("a")), p.get("url_2", p.get("b"))) for p in pairs]
        assert len(ends) == 1 and ends[0][0] != ends[0][1], (command, ends)
    assert (
        main(
            ["cluster", str(path), "-o", str(tmp_path / "c.json"), "-s", "WEBSIM_CLUSTERS_MIN_DF=1"]
        )
        == 0
    )
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["input"]["skipped"]["duplicate_url"] == 2
    capsys.readouterr()


# --- outputs ----------------------------------------------------------------------------------


def test_outputs_follow_the_umask_and_stale_temporaries_go(tmp_path: Path) -> None:
    stale = tmp_path / ".out.json.999999999.abcd1234.tmp"
    stale.write_text("left by a killed run")
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "out.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


def test_progress_bars_only_on_request_when_not_a_terminal(
    feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = str(tmp_path / "c.json")
    assert main(["cluster", str(feed), "-o", output]) == 0
    assert "page/s" not in capsys.readouterr().err  # stderr is not a terminal here
    assert main(["cluster", str(feed), "-o", output, "--progress"]) == 0
    assert "reading: " in capsys.readouterr().err
    assert main(["cluster", str(feed), "-o", output, "--no-progress"]) == 0
    assert capsys.readouterr().err == "websim cluster: 6 page(s) read, 0 left out\n"


@pytest.mark.parametrize(
    ("pipeline", "setting"),
    [
        (ClusteringPipeline, "WEBSIM_CLUSTERS_OUTPUT"),
        (ClusteringPipeline, "WEBSIM_CLUSTERS_HTML"),
        (SimilarityPipeline, "WEBSIM_SIMILARITY_OUTPUT"),
        (NearDuplicatePipeline, "WEBSIM_NEARDUP_OUTPUT"),
    ],
)
def test_a_crawl_checks_its_output_paths_at_start(
    pipeline: type, setting: str, tmp_path: Path
) -> None:
    settings = {"WEBSIM_CLUSTERS_OUTPUT": str(tmp_path / "c.json"), setting: str(tmp_path)}
    with pytest.raises(OutputPathError, match=f"{tmp_path} is a folder"):
        build_from_crawler(pipeline, get_crawler(settings_dict=settings))


def test_neardup_analyses_items_with_the_settings_given() -> None:
    item = {"url": "http://a.test/", "html": page_html("volcano", 1)}
    with NearDuplicateFinder() as finder:
        assert finder.add(item) is None
    small = WebsimConfig.from_settings({"WEBSIM_MAX_PAGE_BYTES": "100"}).analysis
    with NearDuplicateFinder(analysis_params=small) as finder:
        assert finder.add(item) == "too_large"
        assert finder.analysis_params.noise_filter is False  # chunks only: filters off


def test_demo_refuses_settings_it_sets_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "-s", "WEBSIM_CLUSTERS_HTML=x.html"]) == 2
    assert only_line(capsys.readouterr().err) == (
        "websim demo: error: websim demo writes WEBSIM_CLUSTERS_HTML into -o FOLDER; leave it unset"
    )


@pytest.mark.parametrize(
    ("pages", "flags", "expected_workers"),
    [
        (1, [], 1),
        (1, ["--workers", "0"], 0),
        (1, ["--workers", "2"], 1),
        (3, ["--workers", "2"], 2),
        (2, ["--workers", "5"], 2),
    ],
)
def test_extract_analyses_even_a_single_page_in_a_budgeted_worker_unless_workers_are_0(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pages: int,
    flags: list[str],
    expected_workers: int,
) -> None:
    """One page too gets the crawl's per-page time and memory budget; no idle workers."""
    import websim_crawler.cli.extract as extract_command

    created: list[int] = []
    real_pool = extract_command.AnalysisPool

    def recording_pool(params: Any, pool_params: Any, **options: Any) -> Any:
        created.append(pool_params.workers)
        return real_pool(params, replace(pool_params, workers=0), **options)

    monkeypatch.setattr(extract_command, "AnalysisPool", recording_pool)
    sources = []
    for number in range(pages):
        page = tmp_path / f"page{number}.html"
        page.write_text(
            f"<html lang='en'><body><p>Page {number} about honey bees.</p></body></html>"
        )
        sources.append(str(page))
    output = tmp_path / "out.jsonl"
    assert main(["extract", *sources, "-o", str(output), *flags]) == 0
    assert created == [expected_workers]
    assert len(output.read_text().splitlines()) == pages
