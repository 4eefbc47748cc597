"""The surfacing journal shared by a crawl's workers through Redis.

Every worker appends what it chose and saw (the events of ``frontier.surfacing_journal``) to one
Redis list and replays, before each choice, the events it has not read yet, its own included:
all workers' answers feed the same statistics. A query is chosen once: a worker claims it in a
Redis set before submitting it, and one that another worker claimed first is passed over. The
requests go to the shared queue, so a query chosen by one worker is fetched by any, and a worker
killed mid-round loses nothing: its events are in Redis and its leased requests come back.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from websim_crawler.config.distributed import DistributedParams
from websim_crawler.core.surfacing import SurfacingEvent, journal_event
from websim_crawler.distributed.outage import redis_client

logger = logging.getLogger(__name__)


class SharedSurfacingJournal:
    """The surfacing events and chosen queries of one spider, in Redis."""

    shared = True

    def __init__(self, server: Any, events_key: str, chosen_key: str) -> None:
        self.server = server
        self.events_key = events_key
        self.chosen_key = chosen_key
        self._read = 0  # events of the list already replayed by this worker

    @classmethod
    def of(cls, params: DistributedParams, spider_name: str) -> SharedSurfacingJournal:
        """Return the shared journal of spider ``spider_name`` under ``WEBSIM_REDIS_PREFIX``."""
        assert params.redis_url is not None
        keys = params.keys(spider_name)
        server = redis_client(params.redis_url, params.socket_timeout)
        return cls(server, keys.surfacing_events, keys.surfacing_chosen)

    def append(self, event: SurfacingEvent) -> None:
        """Add one event at the end of the shared list."""
        self.server.rpush(self.events_key, orjson.dumps(event))

    def new_events(self) -> list[SurfacingEvent]:
        """Return the events appended since this worker last read (every worker's)."""
        raw = self.server.lrange(self.events_key, self._read, -1)
        self._read += len(raw)
        events: list[SurfacingEvent] = []
        for line in raw:
            try:
                event = journal_event(orjson.loads(line))
            except orjson.JSONDecodeError:
                logger.warning("surfacing journal %s: an unreadable event skipped", self.events_key)
                continue
            if event is not None:
                events.append(event)
        return events

    def claim(self, query: str) -> bool:
        """Claim ``query`` for this worker; ``False`` when another worker chose it first."""
        return bool(self.server.sadd(self.chosen_key, query))

    def close(self) -> None:
        """Nothing to close: the client's connections go with it."""
