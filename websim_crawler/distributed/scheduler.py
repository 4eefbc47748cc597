"""scrapy-redis' shared scheduler with leases, shared budgets, and a queue of worker-local requests.

Each request taken from the shared queue is leased (:mod:`websim_crawler.distributed.leases`):
it stays in this worker's in-flight hash in Redis until the engine is done with it, and goes back
on the queue if the worker dies first. A heartbeat (a ``LoopingCall`` every third of
``WEBSIM_REDIS_LEASE``) keeps this worker's leases alive and requeues the requests of dead
workers.

A deep-web worker must fetch the search-form page itself (it learns the form and the site
template from it); through the shared queue another worker could take that request, or the
shared duplicate filter could drop it as already fetched by the first worker: requests whose meta
holds ``websim_worker_local`` stay in a local queue (they yield no item, and a replacement worker
fetches its own).

A request whose meta holds ``websim_budget`` (a name and a limit) is counted
in Redis when the shared duplicate filter lets it through, and refused once the name's count
passes the limit: the site spider's ``max_pages`` per start URL over all workers.

A Redis outage (:mod:`websim_crawler.distributed.outage`) does not lose what the worker is doing:
the follow-up requests found meanwhile wait in memory, and the leases of the requests it finishes
are released only after those follow-ups are in Redis (a lease released earlier would lose them
if the worker died before Redis came back). When Redis answers again the worker checks the run
marker (a Redis that came back empty stops it with exit code 1), queues what it held, releases
what it finished, and requeues any lease in its hash that it does not hold.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro
from scrapy_redis.scheduler import Scheduler
from twisted.internet.task import LoopingCall

from websim_crawler._imports import require
from websim_crawler.config import websim_config
from websim_crawler.config.distributed import DistributedParams, redacted_url
from websim_crawler.distributed import BUDGET, WORKER_LOCAL
from websim_crawler.distributed.leases import CrawlStateLost, RedisLeases, Requeued
from websim_crawler.distributed.outage import (
    TIMEOUTS_STAT,
    Outage,
    RedisUnavailableError,
    is_timeout,
    without_retries,
)
from websim_crawler.frontier.release import LEASE, held_leases, release_when_done

logger = logging.getLogger(__name__)

MAX_HELD_REQUESTS = 100_000
"""Follow-up requests a worker keeps in memory during a Redis outage before it stops."""

REDIS_UNAVAILABLE = "redis_unavailable"
"""Finish reason of a worker whose Redis stayed away longer than its lease."""
REDIS_STATE_LOST = "redis_state_lost"
"""Finish reason of a worker whose Redis came back without the crawl (no run marker)."""


class WorkerScheduler(Scheduler):
    """The shared Redis frontier with leases; ``websim_worker_local`` requests stay local."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.local: deque[Request] = deque()
        self.params = DistributedParams()
        self.crawler: Crawler | None = None
        self.leases: RedisLeases | None = None
        self.heartbeat: LoopingCall | None = None
        self.outage: Outage | None = None
        self.held: deque[Request] = deque()  # follow-ups found during an outage
        self.finished: list[str] = []  # leases finished during an outage, not yet released
        self.stopping: str | None = None
        self.redis_errors: tuple[type[Exception], ...] = (require("redis").RedisError,)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerScheduler:
        """Build the scheduler; keep the crawler (engine, stats) and the distributed settings."""
        scheduler: WorkerScheduler = super().from_crawler(crawler)
        scheduler.crawler = crawler
        scheduler.params = websim_config(crawler).distributed
        without_retries(scheduler.server)
        return scheduler

    def open(self, spider: Spider) -> None:
        """Open the shared queue, requeue dead workers' requests, start the heartbeat.

        The start-up check (``check_reachable``) pinged Redis and wrote to it; one that fails
        in the moment since (stopped, full) ends the crawl as ``RedisUnavailableError``, named
        in the crawl command's last line, instead of a bare Redis error.
        """
        assert self.crawler is not None
        try:
            super().open(spider)
            self.leases = RedisLeases(
                self.server,
                self.params.keys(spider.name),
                self.params.lease,
                self.params.max_attempts,
            )
            self.leases.join_run()
            self.leases.beat()
            self._count(self.leases.requeue_dead())
        except self.redis_errors as exc:
            raise RedisUnavailableError(
                f"Redis at {redacted_url(self.params.redis_url or '')} (WEBSIM_REDIS_URL) refused "
                f"the worker's queue as it opened: {exc}"
            ) from None
        release_when_done(self.crawler, self._release)
        self.crawler.signals.connect(self._response_received, signal=signals.response_received)
        self.crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        self.heartbeat = LoopingCall(self._beat)
        self.heartbeat.start(self.params.lease / 3, now=False)
        logger.info(
            "worker %s: leases of %.0f s, dead-letter after %d dead workers",
            self.leases.worker,
            self.params.lease,
            self.params.max_attempts,
        )

    def close(self, reason: str) -> None:
        """Stop the heartbeat; give back any request still held (none after a clean stop)."""
        if self.heartbeat is not None and self.heartbeat.running:
            self.heartbeat.stop()
        if self.leases is not None and self.stopping != REDIS_STATE_LOST:
            if self.outage is not None:
                self._recover(time.monotonic(), force=True)
            if self.outage is not None:
                logger.warning(
                    "worker %s: Redis is still away; this worker's leased requests go back to "
                    "the queue when its heartbeat expires (%.0f s)",
                    self.leases.worker,
                    self.params.lease,
                )
            else:
                try:
                    returned = self.leases.give_back()
                except self.redis_errors as exc:
                    logger.warning(
                        "worker %s: could not give back its leases (%s); they go back to the "
                        "queue when its heartbeat expires",
                        self.leases.worker,
                        exc,
                    )
                else:
                    if returned.requests:
                        self._stats_inc("websim/redis/returned", returned.requests)
        super().close(reason)

    def enqueue_request(self, request: Request) -> bool:
        """Queue a worker-local request here, any other one in Redis (filtered, budgeted)."""
        request.meta.pop(LEASE, None)  # a retry or redirect of a leased request is a new one
        if request.meta.get(WORKER_LOCAL):
            self.local.append(request)
            return True
        if self.stopping or not self._redis_up():
            return self._hold(request)
        try:
            return self._push(request)
        except CrawlStateLost as exc:
            self._stop(REDIS_STATE_LOST, str(exc))
            return False
        except self.redis_errors as exc:
            self._outage_began(exc)
            return self._hold(request)

    def next_request(self) -> Request | None:
        """Return the next local request first, then lease one from the shared queue."""
        if self.local:
            return self.local.popleft()
        if self.stopping or not self._redis_up():
            return None
        assert self.leases is not None
        try:
            taken = self.leases.take()
        except CrawlStateLost as exc:
            self._stop(REDIS_STATE_LOST, str(exc))
            return None
        except self.redis_errors as exc:
            self._outage_began(exc)
            return None
        if taken is None:
            return None
        lease, data = taken
        request: Request = self.queue._decode_request(data)
        request.meta[LEASE] = lease
        self._stats_inc("scheduler/dequeued/redis")
        self._stats_inc("websim/redis/leased")
        return request

    def has_pending_requests(self) -> bool:
        """Tell whether a local or shared request (or a requeued suspect) waits.

        During an outage the answer is yes: the worker must not stop while Redis may hold work.
        """
        if self.outage is not None and not self.stopping:
            return True
        return len(self) > 0

    def __len__(self) -> int:
        if self.outage is not None or self.stopping:
            return len(self.local) + len(self.held)
        try:
            suspects = self.leases.suspects_waiting() if self.leases is not None else 0
            return len(self.local) + int(super().__len__()) + suspects
        except self.redis_errors as exc:
            self._outage_began(exc)
            return len(self.local) + len(self.held)

    def take_seeds(self, count: int) -> list[tuple[str, bytes]]:
        """Lease up to ``count`` seeds from Redis (none during an outage or a stop).

        Hand each lease back through :meth:`seeds_scheduled` once its requests are scheduled;
        a lease not handed back returns its seed to the list (at the next reconciliation, or
        with this worker's requests if it dies).
        """
        if self.stopping or not self._redis_up():
            return []
        assert self.leases is not None
        try:
            return self.leases.take_seeds(count)
        except CrawlStateLost as exc:
            self._stop(REDIS_STATE_LOST, str(exc))
        except self.redis_errors as exc:
            self._outage_began(exc)
        return []

    def seeds_scheduled(self, leases: list[str]) -> None:
        """Release seed leases whose requests went through this scheduler.

        While requests are held in memory (an outage) the leases are released with the
        finished requests, once the held requests are in Redis.
        """
        if self.outage is not None or self.held or self.stopping:
            self.finished.extend(leases)
            return
        assert self.leases is not None
        try:
            self.leases.release_seeds(leases)
        except self.redis_errors as exc:
            self._outage_began(exc)
            self.finished.extend(leases)

    def _push(self, request: Request) -> bool:
        assert self.leases is not None
        fingerprint = None if request.dont_filter else self.df.request_fingerprint(request)
        budget = request.meta.get(BUDGET) if self.params.global_limits else None
        answer = self.leases.push(
            fingerprint,
            -request.priority,
            self.queue._encode_request(request),
            (str(budget[0]), int(budget[1])) if budget else None,
            bloom=getattr(self.df, "bloom", None),  # WEBSIM_REDIS_DUPEFILTER=bloom
        )
        if answer == 0:
            self.df.log(request, self.spider)
            return False
        if answer == 2:
            self._stats_inc("websim/redis/budget_refused")
            return False
        self._stats_inc("scheduler/enqueued/redis")
        return True

    def _hold(self, request: Request) -> bool:
        if len(self.held) >= MAX_HELD_REQUESTS:
            self._stats_inc("websim/redis/outage/held_limit")
            self._stop(
                REDIS_UNAVAILABLE,
                f"{MAX_HELD_REQUESTS} follow-up requests held during the Redis outage: stopping "
                "(the pages that found them return to the queue when this worker's lease expires)",
            )
            return False
        self.held.append(request)
        self._stats_inc("websim/redis/outage/held")
        return True

    def _release(self, request: Request) -> None:
        lease = str(request.meta[LEASE])
        if self.outage is not None or self.held or self.stopping:
            self.finished.append(lease)  # released once its follow-ups are in Redis
            return
        assert self.leases is not None
        try:
            released = self.leases.release(lease)
        except self.redis_errors as exc:
            self._outage_began(exc)
            self.finished.append(lease)
            return
        if released:
            self._stats_inc("websim/redis/released")
        else:  # this worker was taken for dead meanwhile: another worker has the request
            self._stats_inc("websim/redis/lease_lost")

    def _response_received(self, response: Response, request: Request) -> None:
        if LEASE not in request.meta or self.leases is None or self.outage or self.stopping:
            return
        try:
            self.leases.mark_handling(str(request.meta[LEASE]))
        except self.redis_errors as exc:
            self._outage_began(exc)

    def _spider_idle(self) -> None:
        """With nothing in progress, requeue any lease left in this worker's hash."""
        if self.outage is not None or self.stopping or self.leases is None:
            return
        assert self.crawler is not None
        try:
            reconciled = self.leases.reconcile([], held_leases(self.crawler))
        except self.redis_errors as exc:
            self._outage_began(exc)
            raise DontCloseSpider from None
        if reconciled.requeued:
            self._stats_inc("websim/redis/orphans_requeued", reconciled.requeued)
        if reconciled.seeds_requeued:
            self._stats_inc("websim/redis/seeds/requeued", reconciled.seeds_requeued)
        if reconciled.requeued or reconciled.seeds_requeued:
            raise DontCloseSpider

    def _beat(self) -> None:
        assert self.leases is not None
        if self.stopping:
            return
        if not self._redis_up():
            return
        try:
            self.leases.beat()
            self._count(self.leases.requeue_dead())
        except CrawlStateLost as exc:
            self._stop(REDIS_STATE_LOST, str(exc))
        except self.redis_errors as exc:
            self._outage_began(exc)

    # --- outages ---------------------------------------------------------------------------

    def _redis_up(self) -> bool:
        """Return ``True`` unless an outage goes on (probing Redis when a probe is due)."""
        if self.outage is None:
            return True
        return self._recover(time.monotonic())

    def _outage_began(self, error: Exception) -> None:
        self._count_timeout(error)
        if self.outage is not None:
            return
        assert self.leases is not None
        self.outage = Outage(time.monotonic(), self.params.lease, str(error))
        self._stats_inc("websim/redis/outage/count")
        logger.warning(
            "worker %s: Redis at %s failed (%s): holding follow-ups and releases, retrying for "
            "up to %.0f s (WEBSIM_REDIS_LEASE)",
            self.leases.worker,
            redacted_url(str(self.params.redis_url)),
            error,
            self.params.lease,
        )

    def _recover(self, now: float, *, force: bool = False) -> bool:
        """Probe Redis; once it answers, write back what the outage held. ``True`` if done."""
        outage = self.outage
        assert outage is not None and self.leases is not None and self.crawler is not None
        if not force and not outage.probe_due(now):
            self._give_up_if_too_long(now)
            return False
        try:
            self.leases.beat()  # fails if the run marker is gone, before anything is written
            while self.held:
                self._push(self.held[0])
                self.held.popleft()
            reconciled = self.leases.reconcile(self.finished, held_leases(self.crawler))
        except CrawlStateLost as exc:
            self._stop(REDIS_STATE_LOST, str(exc))
            return False
        except self.redis_errors as exc:
            self._count_timeout(exc)
            outage.probe_failed(now, str(exc))
            self._give_up_if_too_long(now)
            return False
        released = len(self.finished)
        self.finished.clear()
        self.outage = None
        self._stats_inc("websim/redis/released", reconciled.released)
        if reconciled.requeued:
            self._stats_inc("websim/redis/orphans_requeued", reconciled.requeued)
        if reconciled.seeds_requeued:
            self._stats_inc("websim/redis/seeds/requeued", reconciled.seeds_requeued)
        self._stats_inc("websim/redis/outage/seconds", round(now - outage.began, 3))
        logger.warning(
            "worker %s: Redis is back after %.1f s (%d probes): %d lease(s) released, %d "
            "unknown lease(s) requeued",
            self.leases.worker,
            now - outage.began,
            outage.probes + 1,
            released,
            reconciled.requeued,
        )
        return True

    def _count_timeout(self, error: Exception) -> None:
        if is_timeout(error):
            self._stats_inc(TIMEOUTS_STAT)

    def _give_up_if_too_long(self, now: float) -> None:
        assert self.outage is not None
        if self.outage.too_long(now) and not self.stopping:
            self._stop(
                REDIS_UNAVAILABLE,
                f"Redis at {redacted_url(str(self.params.redis_url))} has been unreachable for "
                f"{now - self.outage.began:.0f} s, longer than WEBSIM_REDIS_LEASE "
                f"({self.params.lease:.0f} s): stopping; this worker's requests return to the "
                f"queue when its lease expires ({self.outage.error})",
            )

    def _stop(self, reason: str, message: str) -> None:
        """Close the spider with ``reason``, logging ``message`` once."""
        if self.stopping:
            return
        self.stopping = reason
        logger.error("worker %s: %s", self.leases.worker if self.leases else "?", message)
        assert self.crawler is not None and self.crawler.engine is not None
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=reason))

    def _count(self, requeued: Requeued) -> None:
        if requeued.requests:
            self._stats_inc("websim/redis/requeued", requeued.requests)
        if requeued.seeds:
            self._stats_inc("websim/redis/seeds/requeued", requeued.seeds)
        if requeued.workers:
            self._stats_inc("websim/redis/dead_workers", requeued.workers)
            logger.warning(
                "requeued %d in-flight requests and %d seed(s) of %d dead worker(s)",
                requeued.requests,
                requeued.seeds,
                requeued.workers,
            )
        for data in requeued.dead_letter:
            self._stats_inc("websim/redis/dead_letter")
            url = self.queue._decode_request(data).url
            logger.error(
                "%s was in flight on %d workers that died: moved to the dead-letter list %s",
                url,
                self.params.max_attempts,
                self.leases.keys.dead_letter if self.leases else "",
            )

    def _stats_inc(self, key: str, count: float = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)
