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


def extends_shape(url: str, shape: str) -> bool:
    """Tell whether a URL is of a pattern with more path segments: the same query keys, and the
    pattern's fixed segments (those before its first open one, ``*`` or ``0``) leading its path.

    ``/wiki/Page/Sub`` extends ``/wiki/*``; ``/item/7/photos/2`` extends ``/item/0/*``.
    """
    path, _, keys = shape.partition("?")
    own_path, _, own_keys = url_shape(url).partition("?")
    if keys != own_keys:
        return False
    segments, own_segments = path.split("/"), own_path.split("/")
    if len(own_segments) <= len(segments):
        return False
    fixed = 0
    while fixed < len(segments) - 1 and segments[fixed] not in ("*", "0"):
        fixed += 1
    return own_segments[:fixed] == segments[:fixed]
