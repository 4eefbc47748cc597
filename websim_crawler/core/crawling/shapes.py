"""The pattern of a URL: what the record links of one result list have in common."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit


def url_shape(url: str) -> str:
    """Return a URL's pattern: path with digits as ``0`` and the last segment as ``*``, query keys.

    ``/record/12`` and ``/record/7`` share the shape ``/record/*``; ``/item?id=3`` is ``/item?id``.
    """
    parts = urlsplit(url)
    segments = re.sub(r"\d+", "0", parts.path).split("/")
    if len(segments) > 1 and segments[-1]:
        segments[-1] = "*"
    keys = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return "/".join(segments) + ("?" + "&".join(keys) if keys else "")


def coarse_url_shape(url: str) -> str:
    """Return a URL's outline: its path's segments all left open, its query keys.

    ``/library/77/`` and ``/howto/12/`` share the outline ``/*/*/``; ``/record/7`` is ``/*/*``.
    """
    parts = urlsplit(url)
    segments = ["*" if segment else "" for segment in parts.path.split("/")]
    keys = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return "/".join(segments) + ("?" + "&".join(keys) if keys else "")


def shapes_nest(shape: str, other: str) -> bool:
    """Tell whether two URL patterns are one list's, ids of one holding more path segments: the
    same query keys, and the shorter pattern's fixed segments (those before its first open
    one, ``*`` or ``0``) leading the longer one's path.

    ``/wiki/Page/*`` and ``/wiki/*`` nest (a title with "/" among titles without); so do
    ``/item/0/photos/*`` and ``/item/0/*``; ``/help/*`` and ``/wiki/*`` do not.
    """
    path, _, keys = shape.partition("?")
    other_path, _, other_keys = other.partition("?")
    if keys != other_keys:
        return False
    short, long = sorted((path.split("/"), other_path.split("/")), key=len)
    if len(long) == len(short):
        return short == long
    open_segments = [number for number, segment in enumerate(short) if segment in ("*", "0")]
    if not open_segments:
        return False  # the shorter is one page (``/wiki``), not a pattern of ids
    fixed = open_segments[0]
    return long[:fixed] == short[:fixed]
