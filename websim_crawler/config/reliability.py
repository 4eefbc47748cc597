"""Settings of the reliability components (``middlewares.retry_after``, ``extensions``,
``feeds``): Retry-After waits, the stats file, feeds synced to the disk."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class ReliabilityParams:
    """How long a 429/503 retry may wait, where the final crawl stats go, how feeds are synced."""

    retry_after_max: float = setting(
        60.0,
        "WEBSIM_RETRY_AFTER_MAX",
        "longest Retry-After (seconds) a 429/503 retry waits for; longer asks give up",
        minimum=0.0,
    )
    stats_output: str | None = setting(
        None,
        "WEBSIM_STATS_OUTPUT",
        "write the crawl's final stats (failures by reason, websim/redis/*, ...) as JSON here; "
        "one file per worker",
    )
    feed_fsync: bool = setting(
        False,
        "WEBSIM_FEED_FSYNC",
        "force each exported item to the disk (fsync), not only to the operating system: feeds "
        "then survive a machine crash, not only a killed crawl",
    )

    def __post_init__(self) -> None:
        validate(self)
