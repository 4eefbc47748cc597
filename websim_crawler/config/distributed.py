"""Settings of distributed crawling (``WEBSIM_REDIS_*``) and the Redis keys a crawl uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    lease: float = setting(
        30.0,
        "WEBSIM_REDIS_LEASE",
        "seconds a worker's heartbeat lives (refreshed every third of it): a worker silent this "
        "long is dead, and any other worker puts its in-flight requests back on the queue",
        minimum=1.0,
        maximum=3_600.0,
    )
    socket_timeout: float = setting(
        2.0,
        "WEBSIM_REDIS_SOCKET_TIMEOUT",
        "seconds a worker waits for Redis to answer one call; a call that times out (a hung "
        "or overloaded Redis) is an outage, ridden out like a lost connection; at most half of "
        "WEBSIM_REDIS_LEASE",
        minimum=0.05,
        maximum=600.0,
    )
    max_attempts: int = setting(
        3,
        "WEBSIM_REDIS_MAX_ATTEMPTS",
        "a request in flight on this many workers that died goes to the dead-letter list "
        "PREFIX:SPIDER:dead instead of back on the queue (a poison page)",
        minimum=1,
        maximum=1_000,
    )
    global_limits: bool = setting(
        True,
        "WEBSIM_REDIS_GLOBAL_LIMITS",
        "count CLOSESPIDER_PAGECOUNT and the site spider's max_pages over all workers "
        "(atomically in Redis); off: each worker counts its own",
    )

    dupefilter: str = setting(
        "set",
        "WEBSIM_REDIS_DUPEFILTER",
        "how the shared duplicate filter keeps fingerprints: set (exact, about 90 bytes a URL) "
        "or bloom (a scalable Bloom filter, a few bytes a URL, false positives at "
        "WEBSIM_REDIS_DUPEFILTER_ERROR_RATE); a crawl begun with set moves to bloom at start",
        choices=("set", "bloom"),
    )
    dupefilter_error_rate: float = setting(
        0.001,
        "WEBSIM_REDIS_DUPEFILTER_ERROR_RATE",
        "bloom: the chance that a new URL is taken for seen (and so never fetched), over "
        "all layers of the filter",
        minimum=1e-9,
        maximum=0.1,
    )
    dupefilter_capacity: int = setting(
        1_000_000,
        "WEBSIM_REDIS_DUPEFILTER_CAPACITY",
        "bloom: URLs the first layer holds (each further layer holds twice the last)",
        minimum=1_000,
        maximum=1_000_000_000,
    )

    def __post_init__(self) -> None:
        validate(self)
        if self.socket_timeout > self.lease / 2:
            raise ConfigError(
                f"WEBSIM_REDIS_SOCKET_TIMEOUT ({self.socket_timeout:g} s) must be at most half of "
                f"WEBSIM_REDIS_LEASE ({self.lease:g} s): a call blocked longer would let this "
                "worker's heartbeat expire while it waits"
            )
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
    """The keys of one distributed crawl under ``base`` (``PREFIX:SPIDER``)."""

    base: str

    @classmethod
    def of(cls, prefix: str, spider_name: str) -> RedisKeys:
        """Return the keys of spider ``spider_name`` under ``prefix``."""
        return cls(f"{prefix}:{spider_name}")

    @property
    def requests(self) -> str:
        """The shared request queue (a sorted set, scrapy-redis' priority queue)."""
        return f"{self.base}:requests"

    @property
    def dupefilter(self) -> str:
        """The fingerprints of every request ever queued (a set)."""
        return f"{self.base}:dupefilter"

    @property
    def bloom_filter(self) -> str:
        """The compact duplicate filter's counts (a hash); its layers' bits are ``...:bloom:I``."""
        return f"{self.dupefilter}:bloom"

    def bloom_layers(self, server: Any) -> list[str]:
        """Return the keys of the compact duplicate filter's layers that exist in ``server``."""
        return [key.decode() for key in server.scan_iter(match=f"{self.bloom_filter}:*")]

    @property
    def seeds(self) -> str:
        """The seeds waiting for a worker (a list)."""
        return f"{self.base}:seeds"

    @property
    def surfacing_events(self) -> str:
        """What a surfacing crawl's workers chose and saw, in order (a list of JSON events)."""
        return f"{self.base}:surfacing:events"

    @property
    def surfacing_chosen(self) -> str:
        """The queries a surfacing crawl's workers chose (a set): each is chosen once."""
        return f"{self.base}:surfacing:chosen"

    @property
    def workers(self) -> str:
        """The ids of the workers that may hold leases (a set)."""
        return f"{self.base}:workers"

    def in_flight(self, worker: str) -> str:
        """The requests ``worker`` holds, lease id to ``score\ndata`` (a hash)."""
        return f"{self.base}:inflight:{worker}"

    def seeds_in_flight(self, worker: str) -> str:
        """The seeds ``worker`` took whose requests are not queued yet: lease id to seed."""
        return f"{self.base}:inflight-seeds:{worker}"

    def heartbeat(self, worker: str) -> str:
        """The key whose expiry tells that ``worker`` is dead."""
        return f"{self.base}:alive:{worker}"

    @property
    def run_marker(self) -> str:
        """A random id set by the crawl's first worker: gone if Redis lost the crawl's state.

        Not among :meth:`all`: ``websim seed --reset`` under running workers gives them a new
        crawl to work on, it does not stop them.
        """
        return f"{self.base}:run"

    @property
    def lease_counter(self) -> str:
        """The counter that numbers leases."""
        return f"{self.base}:leases"

    @property
    def attempts(self) -> str:
        """How often each request (by the SHA-1 of its data) was held by a dead worker (a hash)."""
        return f"{self.base}:attempts"

    @property
    def suspects(self) -> str:
        """Requeued requests that were being handled when a worker died (a sorted set)."""
        return f"{self.base}:suspects"

    @property
    def requeued(self) -> str:
        """How many requests of dead workers were put back on the queue, over the crawl."""
        return f"{self.base}:requeued"

    @property
    def dead_letter(self) -> str:
        """The requests given up after ``WEBSIM_REDIS_MAX_ATTEMPTS`` dead workers (a list)."""
        return f"{self.base}:dead"

    @property
    def page_count(self) -> str:
        """Responses received by all workers (``CLOSESPIDER_PAGECOUNT`` over the crawl)."""
        return f"{self.base}:pages"

    @property
    def budgets(self) -> str:
        """Pages requested per budget (the site spider's start URL), over all workers (a hash)."""
        return f"{self.base}:budgets"

    def all(self) -> tuple[str, ...]:
        """Return every fixed key (to delete them before a fresh crawl; see ``worker keys``)."""
        return (
            self.requests,
            self.dupefilter,
            self.bloom_filter,
            self.seeds,
            self.workers,
            self.lease_counter,
            self.attempts,
            self.suspects,
            self.requeued,
            self.dead_letter,
            self.page_count,
            self.budgets,
            self.surfacing_events,
            self.surfacing_chosen,
        )


def redacted_url(url: str) -> str:
    """Return a Redis URL fit for logs and messages (its password replaced by ``***``)."""
    scheme, separator, rest = url.partition("://")
    if "@" not in rest:
        return url
    credentials, _, location = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}{separator}{user}:***@{location}"
