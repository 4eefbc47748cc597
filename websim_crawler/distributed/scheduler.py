"""scrapy-redis' shared scheduler plus a local queue for requests only this worker may run.

A deep-web worker must fetch the search-form page itself (it learns the form and the site
template from it); through the shared queue another worker could take that request, or the
shared duplicate filter could drop it as already fetched by the first worker.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from scrapy import Request
from scrapy_redis.scheduler import Scheduler

from websim_crawler.distributed import WORKER_LOCAL


class WorkerScheduler(Scheduler):
    """The shared Redis frontier; requests whose meta holds ``websim_worker_local`` stay local."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.local: deque[Request] = deque()

    def enqueue_request(self, request: Request) -> bool:
        """Queue a worker-local request here, any other one in Redis (through the filter)."""
        if request.meta.get(WORKER_LOCAL):
            self.local.append(request)
            return True
        return bool(super().enqueue_request(request))

    def next_request(self) -> Request | None:
        """Return the next local request first, then one from the shared queue."""
        if self.local:
            return self.local.popleft()
        request: Request | None = super().next_request()
        return request

    def has_pending_requests(self) -> bool:
        """Tell whether a local or shared request waits."""
        return bool(self.local) or bool(super().has_pending_requests())

    def __len__(self) -> int:
        return len(self.local) + int(super().__len__())
