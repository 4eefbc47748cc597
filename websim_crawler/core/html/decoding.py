"""Decode page bytes the way browsers do (WHATWG Encoding): BOM, header, meta charset, detection."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from email.message import Message

from charset_normalizer import from_bytes
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    to_unicode,
)

from websim_crawler.errors import PageError

_BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b")
_BINARY_TEXT_MAGIC = tuple(magic.decode("latin-1") for magic in _BINARY_MAGIC)
_MAX_REPLACEMENT_RATIO = 0.001
_BROWSER_DEFAULT_ENCODING = "cp1252"
# How sure a decoding is (the ``encoding_confidence`` item field): a BOM or a declaration the
# bytes agree with; detection on a clean text; or doubtful (undecodable bytes or a messy guess).
DECLARED, DETECTED, DOUBTFUL = "declared", "detected", "doubtful"
_WIDE_ENCODINGS = frozenset(
    ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
# UTF-16/32 without a BOM: the NUL share of the code-unit bytes that ASCII leaves zero, and the
# most the other byte may have.
_MIN_WIDE_NUL_SHARE = 0.3
_MAX_WIDE_LOW_NUL_SHARE = 0.05
# charset-normalizer's own threshold: a guess messier than this is doubtful.
_MAX_DETECTION_CHAOS = 0.2
# A guess is weak when a decoding that reads otherwise is within this much chaos of it: on a
# few accented letters cp775, mac_latin2 and windows-1252 all look clean ("cafķ" vs "café").
_CLEAR_GUESS_MARGIN = 0.05
_SNIFF_BYTES = 4096


@dataclass(frozen=True)
class DecodedPage:
    """A page's text, the encoding it was decoded with and how sure that is."""

    text: str
    encoding: str
    confidence: str


def decode_html(data: bytes, content_type: str | None = None, encoding: str | None = None) -> str:
    """Decode page bytes (see ``decode_page``) and return the text; raise ``PageError``."""
    return decode_page(data, content_type, encoding).text


def decode_page(
    data: bytes, content_type: str | None = None, encoding: str | None = None
) -> DecodedPage:
    """Decode page bytes by BOM, header, declared charset or detection, the WHATWG way.

    ``encoding`` overrides the header. A UTF-16/32 header is believed only when the bytes are
    laid out that way (no BOM and ASCII-like bytes: not UTF-16); a ``<meta>`` that names UTF-16
    means UTF-8 (it was read from ASCII-compatible bytes) and one naming UTF-32 is ignored, as
    in browsers. A declared charset that the bytes contradict (many undecodable sequences) is
    overruled by detection (charset-normalizer). Raise ``PageError`` for empty or binary pages.
    """
    if not data or data.isspace():
        raise PageError("empty", "the page has no content")
    bom_encoding, bom = read_bom(data)
    if bom_encoding is not None and bom is not None:
        return DecodedPage(data[len(bom) :].decode(bom_encoding, "replace"), bom_encoding, DECLARED)
    head = data[:_SNIFF_BYTES]
    header = _codec_name(encoding) if encoding else _header_encoding(content_type)
    if header is not None and _codec_name(header) in _WIDE_ENCODINGS:
        layout = _wide_layout(head, 4 if _codec_name(header).startswith("utf-32") else 2)
        if layout is not None:
            return _checked(data.decode(layout, "replace"), layout, DECLARED)
        header = None  # no BOM and ASCII-like bytes: the header is wrong
    if head.lstrip().startswith(_BINARY_MAGIC) or b"\x00" in head:
        raise PageError("binary", "the page is binary data, not HTML")
    declared = header or _meta_encoding(data)
    if declared is not None:
        text = to_unicode(data, declared)
        if not _has_many_replacements(text):
            return _checked(text, declared, DECLARED)
    guess, chaos, clear = _detect_encoding(data)
    detected = _codec_name(guess) if guess else None
    if detected is None:
        return _checked(to_unicode(data, declared or "utf-8"), declared or "utf-8", DOUBTFUL)
    text = data.decode(detected, errors="replace")
    sure = clear and chaos <= _MAX_DETECTION_CHAOS
    return _checked(text, detected, DETECTED if sure else DOUBTFUL)


def _codec_name(label: str) -> str:
    """Return Python's name of an encoding label (``UTF16`` -> ``utf-16``), else the label."""
    try:
        return codecs.lookup(label).name
    except LookupError:
        return label.lower()


def _header_encoding(content_type: str | None) -> str | None:
    """Return the Content-Type charset: a UTF-16/32 label as written (WHATWG, and w3lib from
    2.6, drop UTF-32, whose layout ``decode_page`` checks itself), any other by WHATWG labels."""
    if not content_type:
        return None
    header = Message()
    header["content-type"] = content_type
    label = header.get_param("charset")
    if isinstance(label, str) and _codec_name(label.strip()) in _WIDE_ENCODINGS:
        return label.strip()
    return http_content_type_encoding(content_type)


def _meta_encoding(data: bytes) -> str | None:
    """Return the charset of the page's markup, mapped by the WHATWG prescan rules."""
    declared = html_body_declared_encoding(data)
    if declared is None:
        return None
    name = _codec_name(declared)
    if name.startswith("utf-16"):
        return "utf-8"
    return None if name.startswith("utf-32") else declared


def _wide_layout(head: bytes, width: int) -> str | None:
    """Return ``utf-16-le``/``-be`` (or ``utf-32``) when NUL bytes sit where ASCII code units
    of that width put them, else ``None`` (ASCII-compatible bytes are not UTF-16)."""
    head = head[: len(head) - len(head) % width]
    units = len(head) // width
    if units < 2:
        return None
    nul_share = [head[offset::width].count(0) / units for offset in range(width)]
    family = f"utf-{8 * width}"
    high = nul_share[1:] if width == 4 else nul_share[1:2]
    if min(high) >= _MIN_WIDE_NUL_SHARE and nul_share[0] < _MAX_WIDE_LOW_NUL_SHARE:
        return f"{family}-le"
    low = nul_share[:3] if width == 4 else nul_share[:1]
    if min(low) >= _MIN_WIDE_NUL_SHARE and nul_share[-1] < _MAX_WIDE_LOW_NUL_SHARE:
        return f"{family}-be"
    return None


def doubtful_text(text: str) -> bool:
    """Tell whether text decoded elsewhere holds many replacement characters (bytes that its
    decoding could not read)."""
    return _has_many_replacements(text)


def _has_many_replacements(text: str) -> bool:
    return "\ufffd" in text and text.count("\ufffd") > _MAX_REPLACEMENT_RATIO * len(text) + 2


def _checked(text: str, encoding: str, confidence: str) -> DecodedPage:
    """Mark a decoding doubtful when replacement characters remain in the text."""
    doubtful = confidence == DOUBTFUL or _has_many_replacements(text)
    return DecodedPage(text, encoding, DOUBTFUL if doubtful else confidence)


def _detect_encoding(data: bytes) -> tuple[str | None, float, bool]:
    """Guess the encoding, its chaos (0 = clean) and whether it is clear: no decoding that reads
    otherwise is nearly as clean (``_CLEAR_GUESS_MARGIN``); windows-1252 wins near ties.

    Short texts often decode without a flaw in several single-byte encodings; browsers fall
    back to windows-1252 for undeclared Western pages (WHATWG Encoding), so it wins ties.
    """
    matches = from_bytes(data[:200_000])
    best = matches.best()
    if best is None:
        return None, 1.0, False
    near = [match for match in matches if match.chaos <= best.chaos + _CLEAR_GUESS_MARGIN]
    clear = len(near) == 1  # charset-normalizer keeps one match per distinct decoding
    for match in near:
        if _BROWSER_DEFAULT_ENCODING in (match.encoding, *match.could_be_from_charset):
            return _BROWSER_DEFAULT_ENCODING, match.chaos, clear
    return str(best.encoding), best.chaos, clear


def looks_binary(text: str) -> bool:
    """Tell whether decoded text is binary data: a NUL or a file signature (PDF, PNG...) first."""
    head = text[:_SNIFF_BYTES]
    return "\x00" in head or head.lstrip().startswith(_BINARY_TEXT_MAGIC)
