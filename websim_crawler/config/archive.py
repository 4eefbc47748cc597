"""Settings of the web archive writer (``archive``): where a crawl keeps what it fetched as WARC."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class ArchiveParams:
    """Where the crawl's WARC files go and how large one grows before the next is started."""

    warc_output: str | None = setting(
        None,
        "WEBSIM_WARC_OUTPUT",
        "write every response the crawl fetches (and its request) as WARC/1.1 files in this "
        "folder; -a warc=FOLDER on the websim spiders",
    )
    warc_max_bytes: int = setting(
        1_000_000_000,
        "WEBSIM_WARC_MAX_BYTES",
        "a WARC file is closed and the next one started once it holds this many (compressed) bytes",
        minimum=1,
        maximum=1 << 40,
    )

    def __post_init__(self) -> None:
        validate(self)
