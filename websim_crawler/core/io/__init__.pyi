"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .atomic import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_report,
    atomic_write_text,
    atomic_writer,
    check_output_path,
    json_text,
)
from .feed_reader import (
    FeedLine,
    ReadReport,
    iter_feeds,
    iter_jsonl,
)
from .feed_writer import (
    FeedFile,
    incomplete_marker,
    open_feed,
)
from .pair_journal import atomic_write_pair

__all__ = [
    "FeedFile",
    "FeedLine",
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
