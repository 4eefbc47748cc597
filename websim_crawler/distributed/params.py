"""Settings of distributed crawling (``WEBSIM_REDIS_*``) and the Redis keys a crawl uses."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError


@dataclass(frozen=True)
class DistributedParams:
    """How crawler processes share one frontier, one duplicate filter and their seeds."""

    redis_url: str | None = setting(
        None,
        "WEBSIM_REDIS_URL",
        "share one frontier and duplicate filter through this Redis (redis://host:6379/0) and "
        "read the spiders' seeds from it; unset: a normal single-process crawl",
    )
    key_prefix: str = setting(
        "websim",
        "WEBSIM_REDIS_PREFIX",
        "prefix of the crawl's Redis keys: PREFIX:SPIDER:requests, :dupefilter and :seeds",
    )
    max_idle: float = setting(
        30.0,
        "WEBSIM_REDIS_MAX_IDLE",
        "a worker stops after this many seconds with no seed, no shared request and nothing "
        "in progress (replaces scrapy-redis' MAX_IDLE_TIME_BEFORE_CLOSE, whose 0 waits forever)",
        minimum=0.1,
        maximum=86_400.0,
    )
    poll_interval: float = setting(
        1.0,
        "WEBSIM_REDIS_POLL_INTERVAL",
        "seconds between an idle worker's looks at the shared frontier (Scrapy's own: 5)",
        minimum=0.05,
        maximum=5.0,
    )
    seed_batch: int = setting(
        8,
        "WEBSIM_REDIS_SEED_BATCH",
        "seeds an idle worker takes from Redis at a time",
        minimum=1,
        maximum=10_000,
    )

    def __post_init__(self) -> None:
        validate(self)
        if self.redis_url is not None and not self.redis_url.startswith(
            ("redis://", "rediss://", "unix://")
        ):
            raise ConfigError(
                "WEBSIM_REDIS_URL must look like redis://host:6379/0 (or rediss://, unix://), "
                f"got {self.redis_url!r}"
            )
        if not self.key_prefix or any(char.isspace() or char == "%" for char in self.key_prefix):
            raise ConfigError(
                "WEBSIM_REDIS_PREFIX must be a non-empty word without spaces or '%', "
                f"got {self.key_prefix!r}"
            )

    def keys(self, spider_name: str) -> RedisKeys:
        """Return the Redis keys of ``spider_name``'s crawl."""
        return RedisKeys.of(self.key_prefix, spider_name)


@dataclass(frozen=True)
class RedisKeys:
    """The keys of one distributed crawl: shared request queue, seen fingerprints, seeds."""

    requests: str
    dupefilter: str
    seeds: str

    @classmethod
    def of(cls, prefix: str, spider_name: str) -> RedisKeys:
        """Return the keys of spider ``spider_name`` under ``prefix``."""
        base = f"{prefix}:{spider_name}"
        return cls(f"{base}:requests", f"{base}:dupefilter", f"{base}:seeds")

    def all(self) -> tuple[str, str, str]:
        """Return every key (to delete them before a fresh crawl)."""
        return (self.requests, self.dupefilter, self.seeds)


def redacted_url(url: str) -> str:
    """Return a Redis URL fit for logs and messages (its password replaced by ``***``)."""
    scheme, separator, rest = url.partition("://")
    if "@" not in rest:
        return url
    credentials, _, location = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}{separator}{user}:***@{location}"
