"""Riding out a Redis outage: probes with exponential backoff, bounded by the worker's lease.

A worker whose Redis call fails does not stop at once: it holds the follow-up requests it finds
and the leases it finishes in memory, and probes Redis again after 0.1 s, 0.2 s, 0.4 s ... (at
most every 2 s). Once Redis answers, the worker writes what it held back (see
:mod:`websim_crawler.distributed.scheduler`). An outage longer than ``WEBSIM_REDIS_LEASE``
stops the worker (exit code 1): by then the other workers may have taken it for dead and
requeued its requests. Its leases stay in Redis and come back to the queue when its heartbeat
expires, so stopping loses no page.

A Redis that accepts connections but does not answer (stopped, swapping, blocked by a long
script) is an outage too: every client of a worker gives up on a reply after
``WEBSIM_REDIS_SOCKET_TIMEOUT`` seconds (scrapy-redis' own default is 30 s, redis-py 8's 5 s)
instead of blocking the reactor, and the timeout takes the same path as a lost connection.

The Redis client of a worker retries nothing by itself (redis-py's default retries a failed
command up to 10 times, blocking the reactor, and replays commands whose reply was lost):
retrying is done here, on the reactor's clock.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from websim_crawler._imports import require
from websim_crawler.config.distributed import redacted_url
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

FIRST_PROBE_DELAY = 0.1
"""Seconds before the first probe of a Redis that failed; doubled after each failed probe."""
MAX_PROBE_DELAY = 2.0
"""The longest wait between two probes."""
CONNECT_TIMEOUT = 5.0
"""Seconds a worker waits to connect to Redis (a host that drops packets, not one refusing)."""

_PASSWORD_ASKED = ("NOAUTH", "WRONGPASS", "HELLO must be called with the client already auth")
"""How Redis says it wants a (right) password; redis-py raises some of them as plain errors."""


class RedisUnavailableError(WebsimError):
    """Redis cannot be reached, or refuses this client (a wrong password, a wrong database)."""


@dataclass
class Outage:
    """One Redis outage: when it began, when to probe next, when to give up."""

    began: float
    limit: float
    error: str
    next_probe: float = 0.0
    delay: float = FIRST_PROBE_DELAY
    probes: int = 0

    def __post_init__(self) -> None:
        self.next_probe = self.began + self.delay

    def probe_failed(self, now: float, error: str) -> None:
        """Note a failed probe; wait twice as long (at most ``MAX_PROBE_DELAY``) for the next."""
        self.probes += 1
        self.error = error
        self.delay = min(self.delay * 2, MAX_PROBE_DELAY)
        self.next_probe = now + self.delay

    def probe_due(self, now: float) -> bool:
        """Tell whether the next probe's time has come."""
        return now >= self.next_probe

    def too_long(self, now: float) -> bool:
        """Tell whether the outage has lasted longer than its limit."""
        return now - self.began > self.limit


TIMEOUTS_STAT = "websim/redis/timeouts"
"""Stats key: Redis calls that got no reply within ``WEBSIM_REDIS_SOCKET_TIMEOUT``."""


def is_timeout(error: Exception) -> bool:
    """Tell whether a Redis error is a call that got no reply in time (a hung Redis)."""
    return isinstance(error, require("redis").TimeoutError)


def redis_client(url: str, socket_timeout: float) -> Any:
    """Return a client of ``url`` that fails at once instead of retrying by itself, and gives
    up on a reply after ``socket_timeout`` seconds (``WEBSIM_REDIS_SOCKET_TIMEOUT``)."""
    redis = require("redis")
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        retry=Retry(NoBackoff(), 0),
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=socket_timeout,
    )


def without_retries(server: Any) -> None:
    """Make an existing client (scrapy-redis' own) fail at once instead of retrying."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    server.set_retry(Retry(NoBackoff(), 0))


def check_reachable(url: str, socket_timeout: float) -> None:
    """Ping Redis and write a probe key that expires in a second; raise
    :class:`RedisUnavailableError` (one line) if it does not answer or refuses writes (full at
    ``maxmemory`` with ``noeviction``, a read-only replica)."""
    redis = require("redis")
    try:
        client = redis_client(url, socket_timeout)
        client.ping()
        client.set(f"websim:probe:{uuid.uuid4().hex}", 1, px=1000)
    except redis.RedisError as exc:
        message = str(exc)
        if isinstance(exc, redis.AuthenticationError) or any(
            sign in message for sign in _PASSWORD_ASKED
        ):
            why = "it refuses this client: give its password in the URL, redis://:PASSWORD@host"
        elif isinstance(exc, (redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError)):
            why = (
                f"it refuses writes ({message.rstrip('.')}); the crawl's queue needs a writable "
                "Redis with free memory (maxmemory, or a primary rather than a replica)"
            )
        else:
            why = f"{message.rstrip('.')}; start redis-server there or fix the URL"
        raise RedisUnavailableError(
            f"cannot use Redis at {redacted_url(url)} (WEBSIM_REDIS_URL): {why}"
        ) from None
