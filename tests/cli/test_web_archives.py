"""Every ``websim`` command reads WARC and WACZ, told by content; commands compose and say
what they skipped; a wget WARC of the demo site gives the crawl's own clusters and pairs."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.warc_archives import (
    http_payload,
    raw_record,
    wacz,
    wacz_bomb,
    write_warc,
)
from websim_crawler.cli import main
from websim_crawler.cli.demo import crawl_demo
from websim_crawler.demo.site import DemoSite

TOPICS = {
    "volcano": "Magma rises through the crust and erupts as lava from the volcano crater. ",
    "bread": "Knead the dough with flour and yeast, let it rise, then bake the bread loaf. ",
    "bees": "The queen bee lays eggs in the hive while worker bees gather nectar for honey. ",
}


def topic_pages(count: int = 4) -> list[tuple[str, bytes, list[tuple[str, str]], str]]:
    """Article pages on three topics, as 200 HTML responses."""
    responses = []
    for topic, sentence in TOPICS.items():
        for number in range(count):
            body = (
                f"<html><head><title>{topic} {number}</title></head><body><nav><a href='/'>Home"
                f"</a></nav><article class='note'><h1>{topic} note {number}</h1><p>"
                f"{sentence * (8 + number)}</p><p>{_own_sentences(topic, number)}</p></article>"
                "</body></html>"
            )
            responses.append(
                (f"http://notes.example/{topic}/{number}", body.encode(),
                 [("Content-Type", "text/html; charset=utf-8")], "200 OK")
            )  # fmt: skip
    responses.append(
        ("http://notes.example/style.css", b"p{}", [("Content-Type", "text/css")], "200 OK")
    )
    responses.append(
        ("http://notes.example/gone", b"<html>", [("Content-Type", "text/html")], "404 Not Found")
    )
    return responses


def _own_sentences(topic: str, number: int) -> str:
    """Sentences only this page says (so that only its copies share them), in its topic's words."""
    words = TOPICS[topic].rstrip(". ").lower()
    return " ".join(
        f"Entry {number * 7 + line} of the {topic} notes: {words}, as seen on day {line + 1}."
        for line in range(4)
    )


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    # Named like a feed: the reader goes by the bytes, not the name.
    return write_warc(tmp_path / "notes.jsonl", topic_pages(), with_requests=True)


def test_extract_reads_an_archive_and_each_page_leads_back_to_its_record(
    archive: Path, tmp_path: Path, capsys: Any
) -> None:
    output = tmp_path / "pages.jsonl"
    assert main(["extract", str(archive), "-o", str(output)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one count line
    assert err == (
        "websim extract: 12 page(s) read, 2 left out: 1 error_status, 1 not_html; "
        "29 WARC records, 12 HTML pages; not pages: 14 request, 1 warcinfo\n"
    )
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [record["url"] for record in records] == [url for url, *_ in topic_pages()[:12]]
    for record in records:
        assert record["main_text"] and record["warc_file"] == str(archive)
        with open(archive, "rb") as handle:
            handle.seek(record["warc_offset"])
            head = gzip.GzipFile(fileobj=handle).read(1000)
        assert record["warc_record_id"].encode() in head and record["url"].encode() in head
        assert record["warc_date"]


def test_collection_commands_read_archives_wacz_folders_and_globs(
    archive: Path, tmp_path: Path, capsys: Any
) -> None:
    folder = tmp_path / "archives"
    folder.mkdir()
    half = write_warc(folder / "a.warc", topic_pages()[:6], gzip_records=False)
    rest = write_warc(folder / "b.warc.gz", topic_pages()[6:])
    package = wacz(
        tmp_path / "notes.wacz", {"a.warc": half.read_bytes(), "b.warc.gz": rest.read_bytes()}
    )
    (folder / "notes.txt").write_text("not an input")
    for source in (str(archive), str(folder), str(tmp_path / "archives" / "*.warc*"), str(package)):
        output = tmp_path / "clusters.json"
        assert main(["cluster", source, "-o", str(output), "--n-clusters", "3"]) == 0, source
        clusters = json.loads(output.read_text())["clusters"]
        topics = [{member.split("/")[3] for member in cluster["members"]} for cluster in clusters]
        assert sorted(map(sorted, topics)) == [["bees"], ["bread"], ["volcano"]], source
        assert "12 HTML pages" in capsys.readouterr().err
    output = tmp_path / "near.json"
    assert main(["neardup", str(folder), "-o", str(output)]) == 0
    assert json.loads(output.read_text())["stats"]["pages"]["indexed"] == 12
    assert main(["similar", str(package), "-o", str(output)]) == 0
    assert json.loads(output.read_text())["pages"] == 12


def test_extract_reads_the_pages_of_a_crawl_feed(tmp_path: Path, capsys: Any) -> None:
    feed = tmp_path / "pages.jsonl"
    lines = [
        {"url": url, "html": body.decode(), "kind": "record"}
        for url, body, *_ in topic_pages()[:12]
    ]
    lines.append({"url": "http://notes.example/analysed", "main_text": "no html here"})
    feed.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = tmp_path / "out.jsonl"
    assert main(["extract", str(feed), "-o", str(output)]) == 0
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(records) == 12  # the feed's pages, not the feed as one page
    assert all(
        record["main_text"] and not record["main_text"].startswith("{") for record in records
    )
    assert "left out: 1 no_html" in capsys.readouterr().err


def test_similar_on_extract_output_says_what_it_skipped_and_why(
    archive: Path, tmp_path: Path, capsys: Any
) -> None:
    extracted = tmp_path / "pages.jsonl"
    assert main(["extract", str(archive), "-o", str(extracted)]) == 0
    capsys.readouterr()
    output = tmp_path / "pairs.json"
    assert main(["similar", str(extracted), "-o", str(output)]) == 2  # nothing to compare
    captured = capsys.readouterr()
    assert "left out: 12 no_html" in captured.err  # not "0 skipped" with null scores
    assert "the stages compare pages' HTML" in captured.err and captured.err.count("\n") == 1
    assert not output.exists()  # no empty report that reads as "nothing similar"
    # cluster and neardup use what the records carry (keywords, main text)
    assert main(["cluster", str(extracted), "-o", str(output), "--n-clusters", "3"]) == 0
    assert len(json.loads(output.read_text())["documents"]) == 12


def test_compare_takes_two_pages_of_an_archive_and_says_why(archive: Path, capsys: Any) -> None:
    first, second, other = (
        "http://notes.example/volcano/0", "http://notes.example/volcano/1", "http://notes.example/bread/0",
    )  # fmt: skip
    code = main(["compare", "--from", str(archive), first, second, "--question", "same-content"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (code, report["verdict"]) == (0, "similar")
    assert report["url_1"] == first and report["url_2"] == second
    reason = captured.err.strip().splitlines()[-1]
    assert reason == f"websim compare: {report['reason']}"
    combined = report["combined_score"]
    assert reason.startswith("websim compare: question same-content: similar, combined score ")
    assert f"{combined:.3f} >= threshold" in reason and "text weighed most" in reason
    assert (
        main(["compare", "--from", str(archive), first, other, "--question", "same-content"]) == 1
    )
    assert "< threshold" in capsys.readouterr().err
    assert main(["compare", "--from", str(archive), first, "http://notes.example/none"]) == 2
    assert "no page with HTML for http://notes.example/none" in capsys.readouterr().err


def test_cascade_reason_names_the_stages_judged(archive: Path, capsys: Any) -> None:
    urls = ("http://notes.example/volcano/0", "http://notes.example/bread/0")
    code = main(["compare", "--from", str(archive), *urls, "--mode", "cascade"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == (0 if report["verdict"] == "similar" else 1)
    reason = captured.err.strip().splitlines()[-1]
    assert f"question looks-alike: {report['verdict']} by the stages (cascade" in reason
    for stage in report["stages"]:
        if stage["stage"] in report["decided_by"]:
            relation = ">=" if stage["verdict"] == "similar" else "<"
            assert (
                f"{stage['stage']} {stage['score']:.3f} {relation} {stage['threshold']:g}" in reason
            )


@pytest.mark.parametrize("command", ["extract", "cluster", "similar", "neardup"])
def test_an_archive_with_nothing_useful_is_one_error_line(
    command: str, tmp_path: Path, capsys: Any
) -> None:
    only_css = write_warc(
        tmp_path / "css.warc.gz",
        [("http://x.example/a.css", b"p{}", [("Content-Type", "text/css")], "200 OK")] * 3,
    )
    garbage = tmp_path / "broken.warc"
    garbage.write_bytes(raw_record(http_payload(b"<p>x")).replace(b"Content-Length", b"Bad-Length"))
    empty = tmp_path / "empty.warc"
    empty.write_bytes(b"")
    for source, code in ((only_css, 1), (garbage, 1), (empty, 2)):
        arguments = [command, str(source), "-o", str(tmp_path / "out.json")]
        assert main(arguments) == code, source  # read in vain: 1; nothing readable: 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "no page" in err


def test_a_wacz_zip_bomb_is_counted_and_the_rest_read(tmp_path: Path, capsys: Any) -> None:
    bomb = wacz_bomb(tmp_path / "bomb.wacz", 64 << 20)
    output = tmp_path / "out.jsonl"
    assert main(["extract", str(bomb), "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert "1 zip_bomb" in err and "a zip bomb, not read" in err
    assert len(output.read_text().splitlines()) == 1


def test_the_warc_reader_setting_chooses_the_library(archive: Path, tmp_path: Path) -> None:
    outputs = []
    for engine in ("fastwarc", "warcio"):
        output = tmp_path / f"{engine}.jsonl"
        arguments = [
            "extract",
            str(archive),
            "-o",
            str(output),
            "-s",
            f"WEBSIM_WARC_READER={engine}",
        ]
        assert main(arguments) == 0
        outputs.append([json.loads(line) for line in output.read_text().splitlines()])
    assert outputs[0] == outputs[1]
    assert main(["extract", str(archive), "-s", "WEBSIM_WARC_READER=heritrix"]) == 2


# The demo site crawled by the project and archived by Debian's wget: same clusters and pairs.


def crawl_and_wget(tmp_path: Path) -> tuple[Path, Path, Path]:
    with DemoSite() as site:
        settings = {
            "WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "crawl-similar.json"),
            "WEBSIM_NEARDUP_OUTPUT": str(tmp_path / "crawl-neardup.json"),
        }
        assert crawl_demo(site.url, tmp_path / "crawl", settings) == 0
        pages = [json.loads(line) for line in (tmp_path / "crawl" / "pages.jsonl").open()]
        warcs = []
        for name, kinds in (("records", {"record"}), ("all", {"record", "results"})):
            urls = tmp_path / f"{name}.txt"
            urls.write_text("".join(page["url"] + "\n" for page in pages if page["kind"] in kinds))
            subprocess.run(
                ["wget", "--quiet", "--input-file", str(urls), "--output-document", "/dev/null",
                 "--warc-file", str(tmp_path / name), "--no-warc-keep-log"],
                check=True, timeout=120, cwd=tmp_path,
            )  # fmt: skip
            warcs.append(tmp_path / f"{name}.warc.gz")
    return tmp_path / "crawl" / "clusters.json", warcs[0], warcs[1]


@pytest.mark.skipif(
    shutil.which("wget") is None, reason="needs Debian's wget (apt-get install wget)"
)
@pytest.mark.slow
def test_a_wget_warc_of_the_demo_site_gives_the_crawls_clusters_and_pairs(
    tmp_path: Path, capsys: Any
) -> None:
    crawl_clusters, records, everything = crawl_and_wget(tmp_path)
    output = tmp_path / "offline.json"
    assert main(["cluster", str(records), "-o", str(output)]) == 0
    assert members(output) == members(crawl_clusters)
    assert len(members(output)) == 5

    # The crawl's stage always blocks by MinHash/LSH; so does this run.
    assert main(["similar", str(everything), "-o", str(output), "--blocking-min-pages", "2"]) == 0
    crawl = json.loads((tmp_path / "crawl-similar.json").read_text())
    offline = json.loads(output.read_text())
    assert sorted(map(sorted, offline["groups"])) == sorted(map(sorted, crawl["groups"]))
    assert pair_set(offline) == pair_set(crawl) and pair_set(crawl)

    assert main(["neardup", str(everything), "-o", str(output)]) == 0
    crawl = json.loads((tmp_path / "crawl-neardup.json").read_text())
    offline = json.loads(output.read_text())
    near = {(p["a"], p["b"], p["class"], p["relation"]) for p in crawl["pairs"]}
    assert {(p["a"], p["b"], p["class"], p["relation"]) for p in offline["pairs"]} == near
    assert near  # the demo's result lists quote their records
    assert offline["stats"]["pages"]["indexed"] == crawl["stats"]["pages"]["indexed"] == 50
    assert "50 HTML pages" in capsys.readouterr().err


def members(path: Path) -> list[list[str]]:
    return sorted(sorted(c["members"]) for c in json.loads(path.read_text())["clusters"])


def pair_set(report: dict[str, Any]) -> set[tuple[str, ...]]:
    return {tuple(sorted((pair["url_1"], pair["url_2"]))) for pair in report["pairs"]}


@pytest.mark.slow
def test_many_archives_on_dask_give_the_pairs_and_clusters_of_one_machine(
    tmp_path: Path, capsys: Any
) -> None:
    pytest.importorskip("distributed")
    folder = tmp_path / "warcs"
    folder.mkdir()
    pages = topic_pages()
    copies = [  # a page quoted on another site: near duplicates across two archives
        (url.replace("notes.example", "mirror.example"), body, headers, status)
        for url, body, headers, status in pages[:3]
    ]
    for number, start in enumerate(range(0, len(pages), 5)):
        write_warc(folder / f"part-{number}.warc.gz", pages[start : start + 5])
    write_warc(folder / "mirror.warc", copies, gzip_records=False)
    reports = {}
    for engine in ("memory", "dask"):
        output = tmp_path / f"near-{engine}.json"
        arguments = ["neardup", str(folder), "-o", str(output), "--engine", engine]
        assert main([*arguments, "--dask-workers", "2"] if engine == "dask" else arguments) == 0
        reports[engine] = json.loads(output.read_text())
    pairs = {
        engine: {(p["a"], p["b"], p["class"], p["relation"]) for p in report["pairs"]}
        for engine, report in reports.items()
    }
    assert pairs["dask"] == pairs["memory"]
    copied = {tuple(sorted((url, url.replace("mirror.", "notes.")))) for url, *_ in copies}
    assert copied <= {(first, second) for first, second, *_ in pairs["dask"]}
    assert reports["dask"]["stats"]["pages"]["indexed"] == 15
    assert reports["dask"]["stats"]["pages"]["dropped"] == {"error_status": 1, "not_html": 1}
    clusters = {}
    for engine in ("memory", "dask"):
        output = tmp_path / f"clusters-{engine}.json"
        arguments = ["cluster", str(folder / "part-*.warc.gz"), "-o", str(output)]
        assert main([*arguments, "--n-clusters", "3", "--engine", engine]) == 0
        clusters[engine] = members(output)
    assert clusters["dask"] == clusters["memory"] and len(clusters["dask"]) == 3


def test_a_folder_with_a_file_a_killed_writer_left_open_reads_its_whole_records(
    tmp_path: Path, capsys: Any
) -> None:
    """A crawl's WARC folder may hold ``NAME.warc.gz.open`` (a live writer's, or a killed one's
    not yet recovered): told by its content, its whole records are read and the cut one counted,
    even when the cut falls inside the first bytes the reader sniffs."""
    folder = tmp_path / "warc"
    folder.mkdir()
    body = b"<html><head><title>Page %d</title></head><body><p>cats and dogs %d</p></body></html>"
    pages = [
        (f"http://127.0.0.1/p{n}", body % (n, n), [("Content-Type", "text/html")], "200 OK")
        for n in range(3)
    ]
    cut = write_warc(folder / "crawl-1.warc.gz.open", pages)
    cut.write_bytes(cut.read_bytes()[:-40])  # the last record's gzip member cut by a kill
    output = tmp_path / "pages.jsonl"
    assert main(["extract", str(folder), "-o", str(output)]) == 0
    assert [json.loads(line)["url"] for line in output.read_text().splitlines()] == [
        "http://127.0.0.1/p0",
        "http://127.0.0.1/p1",
    ]
    assert "1 truncated" in capsys.readouterr().err
