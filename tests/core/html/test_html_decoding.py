"""Decoding the way browsers do: WHATWG rules for UTF-16/32 declarations, checked headers,
and a confidence on every decoding (never silent garbage)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import analysed
from scrapy.http import HtmlResponse, Request
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.core.html import decode_page
from websim_crawler.core.page import analyse_page
from websim_crawler.errors import PageError
from websim_crawler.middlewares.response_decoding import CONFIDENCE_META, PageDecodingMiddleware
from websim_crawler.pipelines import PageAnalysisPipeline
from websim_crawler.spiders.site import SiteSpider

TEXT = "Grüße aus Köln: the archive keeps notes on bees, bread and volcanoes."


def page(charset: str | None = None, text: str = TEXT) -> str:
    meta = f"<meta charset='{charset}'>" if charset else ""
    return f"<html><head>{meta}<title>Notes</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize("label", ["utf-16", "UTF-16LE", "utf-16be"])
def test_a_utf16_meta_on_ascii_compatible_bytes_means_utf8(label: str) -> None:
    source = page(label)
    decoded = decode_page(source.encode("utf-8"))
    assert decoded.text == source  # not CJK-looking garbage
    assert (decoded.encoding, decoded.confidence) == ("utf-8", "declared")


def test_a_utf32_meta_is_ignored_and_the_bytes_decide() -> None:
    source = page("utf-32", text="plain ASCII text only, on a page that names UTF-32")
    decoded = decode_page(source.encode("ascii"))
    assert decoded.text == source
    assert decoded.confidence == "detected"


def test_a_utf16_header_on_ascii_bytes_is_not_believed() -> None:
    source = page(text="plain ASCII text only, served with a UTF-16 header")
    decoded = decode_page(source.encode("ascii"), "text/html; charset=UTF-16")
    assert decoded.text == source
    assert not decoded.encoding.startswith("utf-16")
    both = decode_page(page("utf-8").encode("utf-8"), "text/html; charset=utf-16")
    assert (both.text, both.encoding) == (page("utf-8"), "utf-8")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_wide_header_on_wide_bytes_without_bom_is_believed(codec: str) -> None:
    source = page(text="東京と大阪 " + TEXT)
    label = codec[:6].upper()  # UTF-16 / UTF-32: the byte order comes from the bytes
    decoded = decode_page(source.encode(codec), f"text/html; charset={label}")
    assert decoded.text == source
    assert (decoded.encoding, decoded.confidence) == (codec, "declared")


def test_bom_wins_over_a_header_and_a_meta() -> None:
    source = page("iso-8859-1")
    data = b"\xff\xfe" + source.encode("utf-16-le")
    decoded = decode_page(data, "text/html; charset=windows-1252")
    assert (decoded.text, decoded.encoding, decoded.confidence) == (source, "utf-16-le", "declared")


def test_a_declaration_the_bytes_contradict_is_overruled_by_detection() -> None:
    text = "Größere Häuser für Familien in München und Köln sind teurer geworden."
    decoded = decode_page(page("utf-8", text).encode("cp1252"))
    assert text in decoded.text and "\ufffd" not in decoded.text
    assert decoded.confidence == "detected"


# A UTF-16 <meta> (read as UTF-8) over Latin-1 bytes with a few accented letters: UTF-8 is
# overruled, and cp775, mac_latin2 and windows-1252 all decode the letters without a flaw.
LATIN1_UNDER_UTF16_META = (
    '<html><head><meta charset="utf-16"><title>Menu</title></head><body><p>Un café très bon, à '
    "côté de la gare.</p><p>Le menu du jour est servi.</p></body></html>"
).encode("latin-1")


def test_a_weak_guess_after_an_overruled_declaration_is_doubtful() -> None:
    decoded = decode_page(LATIN1_UNDER_UTF16_META)
    # charset-normalizer's best guess is cp775 ("cafķ trĶs"), a hair cleaner than windows-1252:
    # within the margin windows-1252 wins, as in browsers, and the guess is flagged as weak.
    assert "Un café très bon, à côté" in decoded.text
    assert (decoded.encoding, decoded.confidence) == ("cp1252", "doubtful")


def test_a_clear_guess_is_detected() -> None:
    text = "Größere Häuser für Familien in München und Köln sind teurer geworden. " * 20
    decoded = decode_page(page(None, text).encode("cp1252"))
    assert text in decoded.text and (decoded.encoding, decoded.confidence) == ("cp1252", "detected")


def test_undecodable_bytes_are_flagged_doubtful() -> None:
    data = b"<html><body><p>" + bytes(range(0x80, 0x100)) * 40 + b"</p></body></html>"
    decoded = decode_page(data, "text/html; charset=utf-8")
    assert decoded.confidence == "doubtful"
    with pytest.raises(PageError):  # NUL bytes without a wide declaration: binary, not text
        decode_page(page().encode("utf-16-le"))


def test_the_middleware_gives_spiders_the_browsers_text_and_counts_confidence() -> None:
    crawler = get_crawler(SiteSpider)
    middleware = PageDecodingMiddleware.from_crawler(crawler)
    url = "http://127.0.0.1:8000/a.html"
    source = page("utf-16")
    request = Request(url)
    # Scrapy before w3lib 2.6 believes the meta and reads UTF-16 garbage; the middleware's text
    # is the browser's whichever w3lib is installed.
    response = HtmlResponse(url=url, body=source.encode("utf-8"), request=request)
    scrapy_was_wrong = response.text != source
    fixed = middleware.process_response(request, response)
    assert fixed.text == source
    assert fixed.meta[CONFIDENCE_META] == "declared"
    header = HtmlResponse(
        url=url,
        body=page().encode("utf-8"),
        headers={"Content-Type": "text/html; charset=utf-16"},
        request=Request(url),
    )
    assert middleware.process_response(header.request, header).text == page()
    stats = crawler.stats
    assert stats is not None
    # The header case is garbage in Scrapy with any w3lib: UTF-8 bytes read as UTF-16.
    assert stats.get_value("websim/pages/encoding/redecoded") == 1 + scrapy_was_wrong
    plain_request = Request(url)
    plain = HtmlResponse(url=url, body=page("utf-8").encode("utf-8"), request=plain_request)
    assert middleware.process_response(plain_request, plain) is plain  # nothing to change
    assert stats.get_value("websim/pages/encoding/declared") == 2
    spider = SiteSpider.from_crawler(crawler, start_url=url)
    (item,) = [entry for entry in spider.parse_page(fixed) if not isinstance(entry, Request)]
    assert (item["title"], item["encoding_confidence"]) == ("Notes", "declared")
    assert item["html"] == source


def test_the_page_record_says_how_its_bytes_were_decoded() -> None:
    source = page("utf-8", "Volcano notes: lava, ash and gas over the villages of the valley.")
    record = analyse_page(source.encode("utf-8"), "http://a.org/").to_dict()
    assert (record["encoding"], record["encoding_confidence"]) == ("utf-8", "declared")
    assert list(record)[-2:] == ["encoding", "encoding_confidence"]  # fields only added
    doubtful = analyse_page(LATIN1_UNDER_UTF16_META, "http://a.org/m")
    assert (doubtful.encoding, doubtful.encoding_confidence) == ("cp1252", "doubtful")
    assert "café très" in doubtful.main_text
    given_text = analyse_page(source, "http://a.org/")  # decoded by the caller: not ours to say
    assert (given_text.encoding, given_text.encoding_confidence) == (None, None)
    garbled = analyse_page(source.replace("lava", "\ufffd" * 5), "http://a.org/")
    assert (garbled.encoding, garbled.encoding_confidence) == (None, "doubtful")


def test_the_analysis_pipeline_writes_and_counts_a_doubtful_decoding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(settings_dict={"WEBSIM_ANALYSIS_WORKERS": 0})
    pipeline = build_from_crawler(PageAnalysisPipeline, crawler)
    with caplog.at_level(logging.WARNING):
        item = analysed(pipeline, {"url": "http://a.org/m", "html": LATIN1_UNDER_UTF16_META})
    assert item["encoding_confidence"] == "doubtful"
    assert "http://a.org/m: doubtful decoding (cp1252)" in caplog.text
    # A spider's own confidence (the middleware's) stands and is not counted twice.
    spider_said = {"url": "http://a.org/n", "html": page(), "encoding_confidence": "declared"}
    assert analysed(pipeline, spider_said)["encoding_confidence"] == "declared"
    clean = analysed(pipeline, {"url": "http://a.org/o", "html": page("utf-8").encode("utf-8")})
    assert clean["encoding_confidence"] == "declared"
    assert crawler.stats is not None
    counted = crawler.stats.get_stats()
    assert (
        counted["websim/pages/encoding/doubtful"],
        counted["websim/pages/encoding/declared"],
    ) == (
        1,
        1,
    )


def test_extract_output_carries_the_decoding(tmp_path: Path, capsys: Any) -> None:
    saved = tmp_path / "menu.html"
    saved.write_bytes(LATIN1_UNDER_UTF16_META)
    assert main(["extract", str(saved)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["encoding"], record["encoding_confidence"]) == ("cp1252", "doubtful")
