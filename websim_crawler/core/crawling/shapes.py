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
