"""Decoding the way browsers do: WHATWG rules for UTF-16/32 declarations, checked headers,
and a confidence on every decoding (never silent garbage)."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from websim_crawler.core.html import decode_page
from websim_crawler.decoding import CONFIDENCE_META, PageDecodingMiddleware
from websim_crawler.errors import PageError
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
    response = HtmlResponse(url=url, body=source.encode("utf-8"), request=request)
    assert response.text != source  # Scrapy believes the meta: UTF-16 garbage
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
    assert stats.get_value("websim/pages/encoding/redecoded") == 2
    plain_request = Request(url)
    plain = HtmlResponse(url=url, body=page("utf-8").encode("utf-8"), request=plain_request)
    assert middleware.process_response(plain_request, plain) is plain  # nothing to change
    assert stats.get_value("websim/pages/encoding/declared") == 2
    spider = SiteSpider.from_crawler(crawler, start_url=url)
    (item,) = [entry for entry in spider.parse_page(fixed) if not isinstance(entry, Request)]
    assert (item["title"], item["encoding_confidence"]) == ("Notes", "declared")
    assert item["html"] == source
