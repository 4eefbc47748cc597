"""Adversarial page and feed generators, each of a size ``n`` that the tests and
``benchmarks/hostile.py`` double: shapes of markup and text that made page algorithms
super-linear (a regex retried from every character, a stack scanned per closing tag)."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable

FILLER = "<p>Lava flows slowly down the volcano while the village sleeps below it.</p>"


def deep_nesting(n: int) -> str:
    """``n`` nested divs (past libxml2's depth limit: the flattening repair runs)."""
    return "<html><body>" + "<div>" * n + FILLER + "</div>" * n


def deep_nesting_unclosed_tags(n: int) -> str:
    """3,000 nested divs, then ``n`` ``<a x`` that no ``>`` ever closes (issue 25's 28 s page)."""
    return "<html><body>" + "<div>" * 3000 + FILLER + "<a x" * n


def wide_nesting(n: int) -> str:
    """``n`` sibling elements, each with a link and a sentence."""
    return "<html><body>" + "<div><a href='/x'>x</a> One small sentence here.</div>" * n


def stray_closing_tags(n: int) -> str:
    """Deep nesting followed by ``n`` closing tags that close nothing open."""
    return "<html><body>" + "<div>" * 1500 + FILLER + "</span></b>" * n


def punctuation_run(n: int) -> str:
    """A main text with a run of ``n`` dots and question marks inside a sentence."""
    return f"<html><body><article><p>Lava{'.?' * (n // 2)}flows slowly.</p>{FILLER * 5}"


def giant_attribute(n: int) -> str:
    """An element whose class attribute holds ``n`` characters of furniture-like words."""
    return f"<html><body><div class='{'nav menu ' * (n // 9)}'>{FILLER * 5}</div>"


def edge_marks_label(n: int) -> str:
    """A pager link whose label is ``n`` arrows and dots around a word."""
    return f"<html><body>{FILLER * 5}<a href='/2'>{'» .' * (n // 3)}next x</a>"


PAGE_GENERATORS: dict[str, Callable[[int], str]] = {
    "deep_nesting": deep_nesting,
    "deep_nesting_unclosed_tags": deep_nesting_unclosed_tags,
    "wide_nesting": wide_nesting,
    "stray_closing_tags": stray_closing_tags,
    "punctuation_run": punctuation_run,
    "giant_attribute": giant_attribute,
    "edge_marks_label": edge_marks_label,
}


def nested_feed_line(n: int) -> bytes:
    """A feed record nested ``n`` arrays deep."""
    return b'{"url": "http://s.test/d", "x": ' + b"[" * n + b"]" * n + b"}\n"


def huge_number_feed_line(n: int) -> bytes:
    """A feed record whose keyword count has ``n`` digits."""
    return b'{"url": "http://s.test/n", "keywords": {"lava": 1' + b"0" * n + b"}}\n"


def many_values_feed_line(n: int) -> bytes:
    """A feed record of ``n`` empty objects (3 bytes each, about 64 bytes each once decoded)."""
    return json.dumps({"url": "http://s.test/v", "x": [{}] * n}).encode() + b"\n"


FEED_GENERATORS: dict[str, Callable[[int], bytes]] = {
    "nested_feed_line": nested_feed_line,
    "huge_number_feed_line": huge_number_feed_line,
    "many_values_feed_line": many_values_feed_line,
}


def identical_pages(n: int) -> list[str]:
    """``n`` copies of one page."""
    return ["<html><body>" + "<div class='post'><p>t</p><span>u</span></div>" * 20] * n


def blank_png(width: int, height: int) -> bytes:
    """A 1-bit black PNG of ``width`` x ``height`` pixels: a few KB that decode to gigabytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\0" * (1 + (width + 7) // 8)  # filter byte, then the packed bits
    compressor = zlib.compressobj(9)
    pixels = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )
