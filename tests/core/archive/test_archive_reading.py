"""The WARC/WACZ reader: pages, what is skipped by class, decoding, bounds; both libraries."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import brotli
import pytest

from tests.support.warc_archives import (
    endless_gzip_member,
    html_responses,
    http_payload,
    huge_record,
    length_beyond_file,
    page_html,
    raw_record,
    tiny_records,
    wacz,
    wacz_bomb,
    write_warc,
)
from websim_crawler.core.archive.reading import ArchiveReport, iter_archive_pages

ENGINES = ["fastwarc", "warcio"]
LIMIT = 1_000_000


def read(path: Path, engine: str, limit: int = LIMIT) -> tuple[list, ArchiveReport]:
    report = ArchiveReport()
    pages = list(iter_archive_pages(str(path), report, max_page_bytes=limit, engine=engine))
    return pages, report


def mixed_responses() -> list[tuple[str, bytes, list[tuple[str, str]], str]]:
    body = page_html("Caf\u00e9 de Flore").replace(b"\xc3\xa9", b"\xe9")  # Latin-1 bytes
    gzipped = gzip.compress(body)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(gzipped), gzipped)
    html = [("Content-Type", "text/html")]
    return [
        ("http://a.example/plain", page_html("Plain"), html, "200 OK"),
        (
            "http://a.example/latin1",
            chunked,
            [
                ("Content-Type", "text/html; charset=iso-8859-1"),
                ("Content-Encoding", "gzip"),
                ("Transfer-Encoding", "chunked"),
            ],
            "200 OK",
        ),
        (
            "http://a.example/br",
            brotli.compress(page_html("Brotli")),
            [("Content-Type", "text/html"), ("Content-Encoding", "br")],
            "200 OK",
        ),
        (
            "http://a.example/deflate",
            zlib.compress(page_html("Deflate")),
            [("Content-Type", "application/xhtml+xml"), ("Content-Encoding", "deflate")],
            "200 OK",
        ),
        ("http://a.example/sniffed", page_html("Sniffed"), [], "200 OK"),
        (
            "http://a.example/style.css",
            b"body{color:red}",
            [("Content-Type", "text/css")],
            "200 OK",
        ),
        ("http://a.example/moved", b"", [("Location", "/plain")], "301 Moved Permanently"),
        ("http://a.example/missing", page_html("Not found"), html, "404 Not Found"),
        ("http://a.example/error", page_html("Oops"), html, "500 Internal Server Error"),
        (
            "http://a.example/bad-gzip",
            b"not gzip at all",
            [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
            "200 OK",
        ),
        (
            "http://a.example/blob",
            b"\x00\x01binary",
            [("Content-Type", "application/octet-stream")],
            "200 OK",
        ),
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("gzip_records", [True, False])
def test_html_responses_are_pages_and_the_rest_is_counted_by_class(
    engine: str, gzip_records: bool, tmp_path: Path
) -> None:
    path = write_warc(
        tmp_path / "mixed.warc", mixed_responses(), gzip_records=gzip_records, with_requests=True
    )
    pages, report = read(path, engine)
    by_url = {page.url: page for page in pages}
    assert list(by_url) == [
        "http://a.example/plain",
        "http://a.example/latin1",
        "http://a.example/br",
        "http://a.example/deflate",
        "http://a.example/sniffed",
    ]
    latin = by_url["http://a.example/latin1"]
    assert latin.body == page_html("Caf\u00e9 de Flore").replace(b"\xc3\xa9", b"\xe9")
    assert latin.content_type == "text/html; charset=iso-8859-1"  # the charset travels on
    assert by_url["http://a.example/br"].body == page_html("Brotli")
    assert by_url["http://a.example/deflate"].body == page_html("Deflate")
    assert report.skipped == {
        "not_html": 2, "redirect": 1, "error_status": 2, "bad_encoding": 1,
    }  # fmt: skip
    assert report.other_records == {"warcinfo": 1, "request": 11}
    assert (report.records, report.pages) == (23, 5)
    assert report.failed == []


@pytest.mark.parametrize("engine", ENGINES)
def test_each_page_leads_back_to_its_record(engine: str, tmp_path: Path) -> None:
    path = write_warc(tmp_path / "pages.warc.gz", html_responses(5))
    pages, _report = read(path, engine)
    assert len(pages) == 5
    for page in pages:
        with open(path, "rb") as handle:  # a record-level gzip member starts at the offset
            handle.seek(page.offset)
            member = gzip.GzipFile(fileobj=handle).read(2000)
        assert member.startswith(b"WARC/1.")
        assert f"WARC-Target-URI: {page.url}".encode() in member
        assert f"WARC-Record-ID: {page.record_id}".encode() in member
        assert page.warc_date and page.file == str(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_revisit_truncated_and_angle_bracket_uris(engine: str, tmp_path: Path) -> None:
    good = http_payload(page_html("good"))
    data = (
        raw_record(good).replace(b"http://h.example/x", b"<http://h.example/wget>")
        + raw_record(good, record_type="revisit")
        + raw_record(good, extra=b"WARC-Truncated: length\r\n")
    )
    (tmp_path / "r.warc").write_bytes(data)
    pages, report = read(tmp_path / "r.warc", engine)
    assert [page.url for page in pages] == ["http://h.example/wget"]  # wget's <...> removed
    assert report.skipped == {"revisit": 1, "truncated": 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wacz_gives_the_pages_of_its_warcs(engine: str, tmp_path: Path) -> None:
    first = write_warc(tmp_path / "a.warc.gz", html_responses(3, "http://a.example"))
    second = write_warc(
        tmp_path / "b.warc", html_responses(2, "http://b.example"), gzip_records=False
    )
    package = wacz(
        tmp_path / "site.wacz", {"a.warc.gz": first.read_bytes(), "b.warc": second.read_bytes()}
    )
    pages, report = read(package, engine)
    assert len(pages) == 5 and report.failed == []
    assert {page.file for page in pages} == {
        f"{package}!archive/a.warc.gz",
        f"{package}!archive/b.warc",
    }


def test_the_two_libraries_read_the_same_pages(tmp_path: Path) -> None:
    path = write_warc(tmp_path / "m.warc.gz", mixed_responses(), with_requests=True)
    fast, fast_report = read(path, "fastwarc")
    slow, slow_report = read(path, "warcio")
    assert fast == slow
    assert fast_report == slow_report


# Hostile archives: each read ends with its counts, bounded in memory and linear in time.


@pytest.mark.parametrize("engine", ENGINES)
def test_a_length_beyond_the_file_is_a_truncated_record(engine: str, tmp_path: Path) -> None:
    pages, report = read(length_beyond_file(tmp_path / "l.warc", 3), engine)
    assert len(pages) == 3 and report.skipped == {"truncated": 1}


def test_odd_header_encodings_are_read_or_counted(tmp_path: Path) -> None:
    body = http_payload(page_html("odd"))
    latin = raw_record(body).replace(
        b"http://h.example/x", "http://h.example/caf\u00e9".encode("latin-1")
    )
    binary_header = raw_record(body, extra=b"X-Odd: \xff\xfe\x00\x01\r\n")
    http_latin = raw_record(
        b"HTTP/1.1 200 \xc9tat\r\nContent-Type: text/html; charset=\xe9\r\n\r\n" + page_html("x")
    )
    (tmp_path / "odd.warc").write_bytes(latin + binary_header + http_latin)
    for engine in ENGINES:
        pages, report = read(tmp_path / "odd.warc", engine)
        assert report.records == 3, engine
        assert len(pages) + sum(report.skipped.values()) == 3, (engine, report)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_payload_that_is_another_warc_is_not_opened(engine: str, tmp_path: Path) -> None:
    inner = raw_record(http_payload(page_html("inner"))) * 3
    outer = raw_record(http_payload(inner, b"application/warc")) + raw_record(
        http_payload(inner, b"text/html")
    )
    (tmp_path / "nested.warc").write_bytes(outer)
    pages, report = read(tmp_path / "nested.warc", engine)
    assert report.records == 2  # the inner records are bytes of a payload, never records
    assert report.skipped == {"not_html": 1} and len(pages) == 1
    assert pages[0].body == inner  # served as HTML: analysed as the text it is


PEAK_MEMORY = """
import json, resource, sys, time
from websim_crawler.core.archive.reading import ArchiveReport, iter_archive_pages
report = ArchiveReport()
started = time.process_time()
pages = sum(1 for _ in iter_archive_pages(sys.argv[1], report, max_page_bytes=int(sys.argv[2]),
                                          engine=sys.argv[3]))
print(json.dumps({"pages": pages, "skipped": report.skipped, "failed": len(report.failed),
                  "records": report.records, "cpu": time.process_time() - started,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def read_in_process(path: Path, limit: int, engine: str = "fastwarc") -> dict:
    finished = subprocess.run(
        [sys.executable, "-c", PEAK_MEMORY, str(path), str(limit), engine],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(finished.stdout)


def test_a_huge_record_is_skipped_by_the_page_budget_in_bounded_memory(tmp_path: Path) -> None:
    results = []
    for size in (50_000_000, 100_000_000, 200_000_000):
        path = huge_record(tmp_path / f"huge-{size}.warc.gz", size)
        results.append(read_in_process(path, 4_000_000))
        path.unlink()
    for result in results:
        assert result["pages"] == 2 and result["skipped"] == {"too_large": 1}
    # Memory does not grow with the record (the page budget is 4 MB; the record up to 200 MB).
    assert results[-1]["peak_kb"] < results[0]["peak_kb"] * 1.25 + 20_000


def test_a_gzip_member_that_never_ends_stops_in_bounded_memory(tmp_path: Path) -> None:
    results = []
    for size in (32 << 20, 64 << 20, 128 << 20):
        path = endless_gzip_member(tmp_path / f"endless-{size}.warc.gz", size)
        results.append(read_in_process(path, 4_000_000))
    for result in results:
        assert result["pages"] == 1
        assert set(result["skipped"]) <= {"too_large", "truncated", "malformed"}
        assert sum(result["skipped"].values()) == 1
    assert results[-1]["peak_kb"] < results[0]["peak_kb"] * 1.25 + 20_000


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_many_tiny_records_take_time_linear_in_their_number(engine: str, tmp_path: Path) -> None:
    sizes = (50_000, 100_000, 200_000)
    results = [
        read_in_process(tiny_records(tmp_path / f"tiny-{n}.warc", n), LIMIT, engine) for n in sizes
    ]
    for n, result in zip(sizes, results, strict=True):
        assert result["records"] == n + 1 and result["pages"] == 1
    # Doubling the records about doubles the time (quadratic work would quadruple it).
    per_record = [result["cpu"] / n for n, result in zip(sizes, results, strict=True)]
    assert max(per_record[1:]) < 2.5 * per_record[0]


def test_a_wacz_zip_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    for size in (64 << 20, 128 << 20):
        pages, report = read(wacz_bomb(tmp_path / f"bomb-{size}.wacz", size), "fastwarc")
        assert [page.body for page in pages] == [page_html("good")]
        assert report.skipped == {"zip_bomb": 1}
        assert "zip bomb" in report.failed[0]
