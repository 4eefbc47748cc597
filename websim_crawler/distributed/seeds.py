"""Feed a worker its spider's seeds from Redis and stop it once there is no work left.

Seeds are the entries of the list ``PREFIX:SPIDER:seeds`` (``websim seed`` pushes them): JSON
objects such as ``{"url": "https://example.org/"}`` (``site``) or ``{"query": "volcanoes"}``
(``deepweb``), or a bare string taken as the spider's ``seed_field``. When the worker has
nothing to do it leases up to ``WEBSIM_REDIS_SEED_BATCH`` seeds (moved into its in-flight seeds
``PREFIX:SPIDER:inflight-seeds:WORKER`` in one script, released once their requests are queued,
requeued like its requests if it dies) and asks the spider to turn each into requests
(``spider.seed_requests(seed)``); those go through the shared duplicate filter, so a start URL
seeded twice, or reached first as a link by another worker, is fetched once.

The worker stops when it has had no seed, no shared request and nothing in progress for
``WEBSIM_REDIS_MAX_IDLE`` seconds (scrapy-redis' own spiders wait forever by default), and no
other worker holds leased requests (they come back to the queue if that worker dies).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured

from websim_crawler._imports import require
from websim_crawler.config import websim_config
from websim_crawler.config.distributed import DistributedParams
from websim_crawler.distributed.outage import (
    TIMEOUTS_STAT,
    check_reachable,
    is_timeout,
    redis_client,
)
from websim_crawler.errors import InputFormatError, WebsimError

logger = logging.getLogger(__name__)


class SeededSpider(Protocol):
    """What a spider offers to read seeds: the field of a bare seed and the request maker."""

    name: str
    seed_field: str

    def seed_requests(self, seed: Mapping[str, Any]) -> Iterable[Request]: ...


class SeedLeases(Protocol):
    """The worker scheduler's seed leases (``distributed.scheduler.WorkerScheduler``)."""

    def take_seeds(self, count: int) -> list[tuple[str, bytes]]: ...

    def seeds_scheduled(self, leases: list[str]) -> None: ...


def seed_leases(crawler: Crawler) -> SeedLeases:
    """Return the crawl's scheduler, which leases seeds; ``WebsimError`` if it cannot."""
    scheduler = getattr(getattr(crawler.engine, "_slot", None), "scheduler", None)
    if not callable(getattr(scheduler, "take_seeds", None)):
        raise WebsimError(
            "WEBSIM_REDIS_URL needs the worker scheduler (SCHEDULER = "
            f"websim_crawler.distributed.scheduler.WorkerScheduler), not {type(scheduler).__name__}"
        )
    return scheduler  # type: ignore[return-value]


class RedisSeeds:
    """Extension: seeds from Redis on idle, and the idle timeout that ends a worker."""

    def __init__(self, crawler: Crawler, params: DistributedParams) -> None:
        self.crawler = crawler
        self.params = params
        assert params.redis_url is not None
        self.server = redis_client(params.redis_url, params.socket_timeout)
        self.redis_errors: tuple[type[Exception], ...] = (require("redis").RedisError,)
        self.key = ""
        self.idle_since: float | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisSeeds:
        """Build the extension; ``NotConfigured`` unless ``WEBSIM_REDIS_URL`` is set.

        Redis is pinged here, before the engine starts, so an unreachable or refusing Redis
        ends the crawl with one line (``RedisUnavailableError``) and exit code 1.
        """
        params = websim_config(crawler).distributed
        if params.redis_url is None:
            raise NotConfigured("WEBSIM_REDIS_URL is not set")
        check_reachable(params.redis_url, params.socket_timeout)
        extension = cls(crawler, params)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(extension.response_received, signal=signals.response_received)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        """Find the spider's seed list; make the idle engine look for shared work more often."""
        self.key = self.params.keys(spider.name).seeds
        engine = self.crawler.engine
        # Scrapy re-checks an idle scheduler every 5 s (a private class constant, read when the
        # engine starts): a worker waiting for requests pushed by others should check sooner.
        if engine is not None and hasattr(engine, "_SLOT_HEARTBEAT_INTERVAL"):
            engine._SLOT_HEARTBEAT_INTERVAL = self.params.poll_interval
        if isinstance(getattr(spider, "seed_field", None), str):
            try:
                waiting = str(self.server.llen(self.key))
            except self.redis_errors as exc:
                waiting = f"Redis failed: {exc}"
            logger.info(
                "%s worker: seeds from Redis list %s (%s waiting)", spider.name, self.key, waiting
            )
        else:
            logger.info("%s worker: this spider reads no seeds from Redis", spider.name)

    def response_received(self) -> None:
        """Note that the worker is busy (it restarts the idle clock)."""
        self.idle_since = None
        self._stats().set_value("websim/redis/last_response_time", datetime.now(UTC))

    def spider_idle(self, spider: Spider) -> None:
        """Schedule the next seeds; keep the worker open until it has idled long enough.

        A Redis that fails here keeps the worker open: the scheduler rides out the outage.
        """
        try:
            scheduled = 0
            if isinstance(getattr(spider, "seed_field", None), str):
                scheduled = self._schedule_seeds(spider)  # type: ignore[arg-type]
            held = self._held_by_workers(spider.name)
        except self.redis_errors as exc:
            if is_timeout(exc):
                self._stats().inc_value(TIMEOUTS_STAT)
            self.idle_since = None
            raise DontCloseSpider from None
        now = time.monotonic()
        if scheduled or held:
            # Requests other workers hold may come back to the queue if those workers die.
            self.idle_since = None
            raise DontCloseSpider
        if self.idle_since is None:
            self.idle_since = now
        if now - self.idle_since < self.params.max_idle:
            raise DontCloseSpider
        self._stats().set_value("websim/redis/idle_close", True)
        logger.info(
            "%s worker: no seed, no shared request and nothing in progress for %.1f s: stopping",
            spider.name,
            now - self.idle_since,
        )

    def _held_by_workers(self, spider_name: str) -> int:
        """Return the requests and seeds leased by all workers (they return if one dies)."""
        keys = self.params.keys(spider_name)
        workers = self.server.smembers(keys.workers)
        with self.server.pipeline(transaction=False) as pipe:
            for member in workers:
                worker = member.decode() if isinstance(member, bytes) else member
                pipe.hlen(keys.in_flight(worker))
                pipe.hlen(keys.seeds_in_flight(worker))
            return sum(int(count) for count in pipe.execute())

    def _schedule_seeds(self, spider: SeededSpider) -> int:
        """Lease a batch of seeds and crawl their requests; return how many were scheduled.

        The scheduler leases the seeds (moved from the list into this worker's in-flight seeds
        in one script) and releases them once their requests are in the shared queue: a worker
        killed in between gives them back with its requests.
        """
        scheduler = seed_leases(self.crawler)
        taken = scheduler.take_seeds(self.params.seed_batch)
        stats = self._stats()
        engine = self.crawler.engine
        assert engine is not None
        scheduled = 0
        for _, raw in taken:
            stats.inc_value("websim/redis/seeds/taken")
            try:
                seed = parse_seed(raw, spider.seed_field)
                requests = list(spider.seed_requests(seed))
            except WebsimError as exc:
                stats.inc_value("websim/redis/seeds/invalid")
                logger.warning("%s worker: seed %r skipped: %s", spider.name, raw[:200], exc)
                continue
            for request in requests:
                engine.crawl(request)
                scheduled += 1
        scheduler.seeds_scheduled([lease for lease, _ in taken])
        if scheduled:
            stats.inc_value("websim/redis/seeds/requests", scheduled)
        return scheduled

    def _stats(self) -> Any:
        assert self.crawler.stats is not None
        return self.crawler.stats


def parse_seed(raw: bytes | str, bare_field: str) -> dict[str, Any]:
    """Read one seed: a JSON object, or a bare string that becomes ``{bare_field: string}``."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"not UTF-8 text: {exc}") from exc
    text = text.strip()
    if not text:
        raise InputFormatError("empty seed")
    if not text.startswith("{"):
        return {bare_field: text}
    try:
        seed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"not valid JSON: {exc}") from exc
    if not isinstance(seed, dict):
        raise InputFormatError("a JSON seed must be an object")
    return seed


def seed_entry(field: str, value: str) -> str:
    """Return the JSON text ``websim seed`` pushes for one URL or query."""
    return json.dumps({field: value}, ensure_ascii=False)
