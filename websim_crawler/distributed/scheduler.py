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
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_redis.scheduler import Scheduler
from twisted.internet.task import LoopingCall

from websim_crawler.config import websim_config
from websim_crawler.config.distributed import DistributedParams
from websim_crawler.distributed import BUDGET, WORKER_LOCAL
from websim_crawler.distributed.leases import RedisLeases, Requeued
from websim_crawler.frontier.release import LEASE, release_when_done

logger = logging.getLogger(__name__)


class WorkerScheduler(Scheduler):
    """The shared Redis frontier with leases; ``websim_worker_local`` requests stay local."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.local: deque[Request] = deque()
        self.params = DistributedParams()
        self.crawler: Crawler | None = None
        self.leases: RedisLeases | None = None
        self.heartbeat: LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerScheduler:
        """Build the scheduler; keep the crawler (engine, stats) and the distributed settings."""
        scheduler: WorkerScheduler = super().from_crawler(crawler)
        scheduler.crawler = crawler
        scheduler.params = websim_config(crawler).distributed
        return scheduler

    def open(self, spider: Spider) -> None:
        """Open the shared queue, requeue dead workers' requests, start the heartbeat."""
        super().open(spider)
        assert self.crawler is not None
        self.leases = RedisLeases(
            self.server,
            self.params.keys(spider.name),
            self.params.lease,
            self.params.max_attempts,
        )
        self.leases.beat()
        self._count(self.leases.requeue_dead())
        release_when_done(self.crawler, self._release)
        self.crawler.signals.connect(self._response_received, signal=signals.response_received)
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
        if self.leases is not None:
            returned = self.leases.give_back()
            if returned.requests:
                self._stats_inc("websim/redis/returned", returned.requests)
        super().close(reason)

    def enqueue_request(self, request: Request) -> bool:
        """Queue a worker-local request here, any other one in Redis (filtered, budgeted)."""
        request.meta.pop(LEASE, None)  # a retry or redirect of a leased request is a new one
        if request.meta.get(WORKER_LOCAL):
            self.local.append(request)
            return True
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        if not self._within_budget(request):
            return False
        self._stats_inc("scheduler/enqueued/redis")
        self.queue.push(request)
        return True

    def next_request(self) -> Request | None:
        """Return the next local request first, then lease one from the shared queue."""
        if self.local:
            return self.local.popleft()
        assert self.leases is not None
        taken = self.leases.take()
        if taken is None:
            return None
        lease, data = taken
        request: Request = self.queue._decode_request(data)
        request.meta[LEASE] = lease
        self._stats_inc("scheduler/dequeued/redis")
        self._stats_inc("websim/redis/leased")
        return request

    def has_pending_requests(self) -> bool:
        """Tell whether a local or shared request (or a requeued suspect) waits."""
        return len(self) > 0

    def __len__(self) -> int:
        suspects = self.leases.suspects_waiting() if self.leases is not None else 0
        return len(self.local) + int(super().__len__()) + suspects

    def _release(self, request: Request) -> None:
        assert self.leases is not None
        if self.leases.release(str(request.meta[LEASE])):
            self._stats_inc("websim/redis/released")
        else:  # this worker was taken for dead meanwhile: another worker has the request
            self._stats_inc("websim/redis/lease_lost")

    def _response_received(self, response: Response, request: Request) -> None:
        if LEASE in request.meta and self.leases is not None:
            self.leases.mark_handling(str(request.meta[LEASE]))

    def _beat(self) -> None:
        assert self.leases is not None
        try:
            self.leases.beat()
            self._count(self.leases.requeue_dead())
        except Exception:  # Redis away for a moment: the next beat tries again
            logger.exception("worker %s: heartbeat failed", self.leases.worker)

    def _count(self, requeued: Requeued) -> None:
        if requeued.requests:
            self._stats_inc("websim/redis/requeued", requeued.requests)
        if requeued.workers:
            self._stats_inc("websim/redis/dead_workers", requeued.workers)
            logger.warning(
                "requeued %d in-flight requests of %d dead worker(s)",
                requeued.requests,
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

    def _within_budget(self, request: Request) -> bool:
        budget = request.meta.get(BUDGET)
        if not budget or not self.params.global_limits or self.leases is None:
            return True
        name, limit = budget
        used = int(self.server.hincrby(self.leases.keys.budgets, str(name), 1))
        if used <= int(limit):
            return True
        self._stats_inc("websim/redis/budget_refused")
        return False

    def _stats_inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)
