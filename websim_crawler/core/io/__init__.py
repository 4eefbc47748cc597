"""Files in and out: crawl feeds read and written durably, result files written atomically.

Feeds: ``open_feed`` (``feed_writer``) opens a crawl feed so that each item reaches the operating
system as it is written; ``iter_jsonl`` and ``iter_feeds`` (``feed_reader``) read feeds, a cut
last line skipped quietly and each URL counted once. Results: ``atomic_writer`` and the
``atomic_write_*`` helpers (``atomic``) replace a file through a temporary one;
``atomic_write_pair`` (``pair_journal``) replaces two together. The public names are here.
"""

from __future__ import annotations

from websim_crawler.core.io.atomic import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_report,
    atomic_write_text,
    atomic_writer,
    check_output_path,
    json_text,
)
from websim_crawler.core.io.feed_reader import ReadReport, iter_feeds, iter_jsonl
from websim_crawler.core.io.feed_writer import FeedFile, incomplete_marker, open_feed
from websim_crawler.core.io.pair_journal import atomic_write_pair

__all__ = [
    "FeedFile",
    "ReadReport",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_pair",
    "atomic_write_report",
    "atomic_write_text",
    "atomic_writer",
    "check_output_path",
    "incomplete_marker",
    "iter_feeds",
    "iter_jsonl",
    "json_text",
    "open_feed",
]
