"""Page analysis in worker processes, with a budget per page: time, memory and elements.

An adapter around the pure core (it knows processes, not Scrapy): the analysis pipeline and
``websim extract`` hand pages to an :class:`AnalysisPool` and get :class:`PageOutcome` futures
back, in any order. Each worker runs ``workers.tasks.analyse_task``; a page that runs past
``WEBSIM_ANALYSIS_TIMEOUT`` has its worker killed and replaced (pebble), a page that needs more
than ``WEBSIM_WORKER_MEMORY_MB`` fails its allocation (``RLIMIT_AS``) and a worker that dies
is replaced; each case is an outcome with its reason, never a dead crawl.

The per-site template memory stays in the caller's process, with the pool: a task carries the
fingerprints that are template on its site when it is sent (a ``TemplateSnapshot``), and its
outcome the page's fingerprints, recorded when it comes back. Pages analysed at the same time
do not see each other's chunks: a site's template is found a few pages later than when pages
are analysed one by one, never wrongly.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from websim_crawler.config.pool import PoolParams
from websim_crawler.core.page import (
    AnalysisParams,
    SiteTemplateMemory,
    new_template_memory,
    template_key,
)
from websim_crawler.core.urls import host_port_of
from websim_crawler.errors import PageError
from websim_crawler.workers.tasks import (
    PageOutcome,
    PageTask,
    StageTask,
    analyse_task,
    stage_task,
    start_worker,
    warm_up,
    within_cpu_budget,
)

if TYPE_CHECKING:
    from pebble import ProcessPool

    from websim_crawler.core.stages import StagePlan

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Imported once by the fork server instead of by each worker: the analysis, loaded and warmed.
_PRELOAD = ["websim_crawler.workers.warmup"]
# How often pebble's threads look at the pool (``pebble.CONSTS.sleep_unit``, which pebble 5.1
# exposes to be tuned): a closing pool waits for that look, and an idle pool costs about 4 ms of
# CPU a second at 0.02 s (0.5 ms at pebble's 0.1 s).
POOL_POLL_SECONDS = 0.02


@dataclass
class _Attempt:
    """One try at a task, waiting for the pool to admit it or running."""

    function: Callable[..., PageOutcome]
    args: tuple[Any, ...]
    outcome: concurrent.futures.Future[PageOutcome]
    deferred: int = 0
    admitted_at: int = 0  # the pages the pool allowed at once when it admitted this try
    recorded: bool = True  # the outcome recorded in the site memory when it comes back

    @property
    def alone(self) -> bool:
        return self.deferred >= DEFERRAL_RETRIES


# The budget is the CPU time a page's own worker spends on it (``RLIMIT_CPU``, whole seconds:
# a page gets its budget and less than a second more), which a loaded machine does not stretch.
# Wall time only backs it up, for a worker starved of the CPU, at ``WALL_BACKSTOP`` times what the
# CPU limit allows. A page that hits only the backstop was slowed by the crowd, not by itself:
# the pool halves the pages it analyses at once and tries the page again, first with fewer
# pages beside it, then (the last of ``DEFERRAL_RETRIES``) alone, each time with twice the
# backstop; only a page that fails alone is refused.
WALL_BACKSTOP = 3.0
DEFERRAL_RETRIES = 2
# Pages analysed without a deferral, in multiples of the pages allowed at once, before the pool
# allows one more page at once again (additive increase, multiplicative decrease, as TCP's).
CALM_ROUNDS = 4


def wall_backstop(budget: float, deferred: int) -> float | None:
    """Return the wall seconds a page's analysis may take at its ``deferred``-th retry."""
    return WALL_BACKSTOP * (budget + 1) * 2**deferred if budget else None


def _worker_failure(exc: BaseException) -> PageOutcome | None:
    """Return the outcome of a page whose worker died, or ``None`` for another exception."""
    from concurrent.futures.process import BrokenProcessPool

    from pebble import ProcessExpired

    if isinstance(exc, ProcessExpired) and exc.exitcode == -signal.SIGXCPU:
        return PageOutcome(
            dropped="analysis_timeout",
            message="the analysis used over its CPU time (WEBSIM_ANALYSIS_TIMEOUT) in its own "
            "worker; the worker was replaced",
        )
    if isinstance(exc, ProcessExpired):
        return PageOutcome(
            failed="worker_crash",
            message=f"the worker analysing the page died (exit code {exc.exitcode}); "
            "it was replaced",
        )
    if isinstance(exc, BrokenProcessPool):  # workers died before they could take the page
        return PageOutcome(failed="worker_crash", message=f"the workers died: {exc}")
    return None


class AnalysisPool:
    """Analyse pages in ``workers`` processes (0: in the caller's process, one at a time).

    Workers come from a fork server by default: a crawl's process runs threads (the reactor's
    pool, DNS), and forking a process with threads can copy a lock held by one of them.
    ``fork_from_caller`` forks them from the caller instead, for a caller with no threads of
    its own (``websim extract``): no server to start, nothing imported twice.

    The pool owns the per-site template memory (``site_memory``) when the template filter is
    on; a lock guards it against the threads that deliver the workers' results.
    """

    def __init__(
        self,
        params: AnalysisParams,
        pool_params: PoolParams,
        site_memory: SiteTemplateMemory | None = None,
        *,
        fork_from_caller: bool = False,
    ):
        self.params = params
        self.fork_from_caller = fork_from_caller
        self.pool_params = pool_params
        self.chunk_detail = pool_params.chunk_detail
        self.workers = pool_params.worker_count()
        self.site_memory = site_memory if site_memory is not None else new_template_memory(params)
        self._memory_lock = threading.Lock()
        self._pool: ProcessPool | None = None
        # Admission: at most ``_allowed`` tries run at once (``workers`` until a page is deferred
        # for the crowd); a try that must run alone waits at the head of the queue for the
        # others to finish, and none is admitted beside it.
        self._gate = threading.Condition()
        self._queue: deque[_Attempt] = deque()
        self._running = 0
        self._alone_running = False
        self._allowed = self.workers
        self._calm = 0  # tries finished without a deferral since ``_allowed`` last changed

    def _process_pool(self) -> ProcessPool:
        if self._pool is None:  # started on the first page: a crawl without pages forks nothing
            import multiprocessing  # neither is imported by a command that never forks

            import pebble

            # Never coarser than ours: pebble's own default (0.1 s) made every pool's close wait
            # up to that long, 0.09 s of a one-page ``websim extract``'s 0.31 s.
            pebble.CONSTS.sleep_unit = min(pebble.CONSTS.sleep_unit, POOL_POLL_SECONDS)
            context = multiprocessing.get_context("fork" if self.fork_from_caller else "forkserver")
            if self.fork_from_caller:
                warm_up()
            else:
                context.set_forkserver_preload(_PRELOAD)
            self._pool = pebble.ProcessPool(
                max_workers=self.workers,
                initializer=start_worker,
                initargs=(self.pool_params.worker_memory_mb,),
                context=context,
            )
        return self._pool

    def start(self) -> None:
        """Start the worker processes now rather than on the first page (blocks while they
        start: call it from a thread)."""
        if self.workers:
            try:
                self._process_pool().schedule(os.getpid)  # any task starts pebble's pool
            except (OSError, RuntimeError) as exc:  # each page then fails, counted
                logger.error("the analysis workers cannot start: %s", exc)

    def submit(
        self,
        html: str | bytes,
        url: str | None,
        content_type: str | None = None,
        page_kind: str | None = None,
        fields: dict[str, Any] | None = None,
        stage_plan: StagePlan | None = None,
        *,
        in_order: bool = False,
    ) -> concurrent.futures.Future[PageOutcome]:
        """Start analysing a page; the future's result is its outcome (never an exception).

        ``page_kind`` (an item's ``kind``) says which template memory of its site applies. With
        a ``stage_plan`` (stages on), ``fields`` are the item's other fields the end-of-crawl
        stages read, and the outcome carries the stages' record. ``in_order``: the outcome's
        fingerprints are left for the caller to record (``record``) in the order it sent pages.
        """
        if stage_plan is not None and not stage_plan.enabled:
            stage_plan = None
        template = self._template_of(url, page_kind)
        task = PageTask(html, url, template, content_type, page_kind, fields)
        return self._schedule(
            analyse_task, (task, self.params, self.chunk_detail, stage_plan), in_order
        )

    def submit_record(
        self, record: dict[str, Any], stage_plan: StagePlan, *, in_order: bool = False
    ) -> concurrent.futures.Future[PageOutcome]:
        """Start preparing a record that did not come through the analysis for the stages of
        ``stage_plan``; the future's result is an outcome with ``stage_record`` or a reason
        (``in_order`` as ``submit`` says)."""
        url, kind = record.get("url"), record.get("kind")
        url = url if isinstance(url, str) else None
        task = StageTask(
            record, url, self._template_of(url, kind if isinstance(kind, str) else None)
        )
        return self._schedule(stage_task, (task, stage_plan), in_order)

    def _template_of(self, url: str | None, page_kind: str | None = None) -> frozenset[str] | None:
        if not self.params.template_filter:
            return None
        with self._memory_lock:
            return self.site_memory.template_of(template_key(host_port_of(url), page_kind))

    def _schedule(
        self, function: Callable[..., PageOutcome], args: tuple[Any, ...], in_order: bool = False
    ) -> concurrent.futures.Future[PageOutcome]:
        outcome: concurrent.futures.Future[PageOutcome] = concurrent.futures.Future()
        if not self.workers:  # analysed now, so recorded now: in the order pages were sent
            analysed: concurrent.futures.Future[PageOutcome] = concurrent.futures.Future()
            try:
                analysed.set_result(function(*args))
            except Exception as exc:  # a bug in the analysis: counted, the crawl goes on
                analysed.set_exception(exc)
            outcome.set_result(self._recorded(self._outcome_of(analysed)))
            return outcome
        self._admit(_Attempt(function, args, outcome, recorded=not in_order))
        return outcome

    @property
    def allowed_at_once(self) -> int:
        """The pages the pool analyses at once now: ``workers``, fewer after a deferral."""
        return self._allowed

    def _budgeted(
        self, function: Callable[..., Any], args: tuple[Any, ...], deferred: int
    ) -> concurrent.futures.Future[Any]:
        """Schedule ``function(*args)`` in a worker under the page's CPU budget and its wall
        backstop (doubled for each time the page was deferred)."""
        budget = self.pool_params.timeout
        backstop = wall_backstop(budget, deferred)
        return self._process_pool().schedule(
            within_cpu_budget, args=(budget, function, *args), timeout=backstop
        )

    def _admit(self, attempt: _Attempt | None = None) -> None:
        """Queue ``attempt``, then start the tries the pool allows now (a retry first)."""
        with self._gate:
            if attempt is not None:
                self._queue.append(attempt)
            starting: list[_Attempt] = []
            while self._queue and not self._alone_running:
                head = self._queue[0]
                if head.alone:
                    if self._running:
                        break  # the pool drains first
                    self._alone_running = True
                elif self._running >= self._allowed:
                    break
                self._queue.popleft()
                head.admitted_at = self._allowed
                self._running += 1
                starting.append(head)
        for admitted in starting:  # outside the lock: a callback may run at once
            self._start(admitted)

    def _start(self, attempt: _Attempt) -> None:
        try:
            scheduled = self._budgeted(attempt.function, attempt.args, attempt.deferred)
        except (OSError, RuntimeError) as exc:  # no workers could be started: counted per page
            self._finished(attempt, pressed=False)
            attempt.outcome.set_result(
                PageOutcome(
                    failed="worker_crash", message=f"the analysis workers cannot run: {exc}"
                )
            )
            self._admit()
            return

        def done(future: concurrent.futures.Future[PageOutcome]) -> None:
            pressed = not future.cancelled() and isinstance(future.exception(), TimeoutError)
            if self._finished(attempt, pressed):  # the crowd, not the page: tried again
                self._admit()
                return
            result = self._outcome_of(future, attempt.deferred)
            if attempt.deferred:
                result = dataclasses.replace(result, deferred=attempt.deferred)
            attempt.outcome.set_result(self._recorded(result) if attempt.recorded else result)
            self._admit()

        scheduled.add_done_callback(done)

    def _finished(self, attempt: _Attempt, pressed: bool) -> bool:
        """Count a try out of the pool and return whether it is tried again (queued first).

        A try pressed past its backstop halves the pages allowed at once (once for the tries
        admitted together) and is tried again unless it ran alone; a calm one may raise it.
        """
        with self._gate:
            self._running -= 1
            if attempt.alone:
                self._alone_running = False
            retried = pressed and attempt.deferred < DEFERRAL_RETRIES
            if retried:
                self._queue.appendleft(dataclasses.replace(attempt, deferred=attempt.deferred + 1))
            # Halved once for the tries admitted together: a try admitted with more pages at
            # once than are allowed now tells nothing new.
            if pressed and self._allowed > 1 and attempt.admitted_at <= self._allowed:
                self._allowed //= 2
                self._calm = 0
                logger.warning(
                    "analysis: a page took over the wall-time backstop with %d pages at once; "
                    "it is tried again with %d at once",
                    attempt.admitted_at,
                    self._allowed,
                )
            elif not pressed:
                self._calm += 1
                if self._allowed < self.workers and self._calm >= CALM_ROUNDS * self._allowed:
                    self._allowed += 1
                    self._calm = 0
            self._gate.notify_all()
            return retried

    def map_records(
        self, records: Iterable[dict[str, Any]], stage_plan: StagePlan
    ) -> Iterator[PageOutcome]:
        """Prepare records for the stages (``submit_record``, or here when that only picks
        fields); yield outcomes in their order, at most ``max_pending`` in flight."""
        from websim_crawler.core.stages import needs_worker, prepare_record

        window: deque[concurrent.futures.Future[PageOutcome]] = deque()
        for record in records:
            if needs_worker(record, stage_plan):
                window.append(self.submit_record(record, stage_plan, in_order=True))
            else:  # fields picked, nothing parsed: not worth a trip to a worker
                ready: concurrent.futures.Future[PageOutcome] = concurrent.futures.Future()
                ready.set_result(PageOutcome(stage_record=prepare_record(record, stage_plan)))
                window.append(ready)
            yield from self._oldest(window, self.pool_params.max_pending - 1)
        yield from self._oldest(window, 0)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in a worker with a page's budget and return its result; raise
        ``PageError`` (``analysis_timeout``, ``too_large``, ``worker_crash``, ...) when it runs
        past the budget or its worker dies. For work on pages other than their analysis (the
        ``compare`` command's features and stages); with no workers, in this process."""
        if not self.workers:
            return function(*args)
        scheduled = self._budgeted(function, args, deferred=0)
        try:
            return scheduled.result()
        except Exception as exc:
            outcome = self._budget_outcome(exc)
            if outcome is None:
                raise
            raise PageError(
                outcome.failed or outcome.dropped or "unknown", outcome.message
            ) from exc

    def map(
        self,
        pages: Iterable[tuple[str | bytes, str | None, str | None] | PageOutcome],
    ) -> Iterator[PageOutcome]:
        """Analyse ``(html, url, content_type)`` pages; yield outcomes in that order.

        An outcome given instead of a page (a page that could not be read) passes through.
        At most ``max_pending`` pages are in flight.
        """
        window: deque[concurrent.futures.Future[PageOutcome]] = deque()
        for page in pages:
            if isinstance(page, PageOutcome):
                ready: concurrent.futures.Future[PageOutcome] = concurrent.futures.Future()
                ready.set_result(page)
                window.append(ready)
            else:
                window.append(self.submit(*page, in_order=True))
            yield from self._oldest(window, self.pool_params.max_pending - 1)
        yield from self._oldest(window, 0)

    def _oldest(
        self, window: deque[concurrent.futures.Future[PageOutcome]], keep: int
    ) -> Iterator[PageOutcome]:
        """Yield the outcomes of the oldest pages in flight, recorded in the order they were
        sent, until ``keep`` are left. So the k-th page sees the template of the pages up to the
        (k - ``max_pending``)-th whichever pages finish first: the same records every run."""
        while len(window) > keep:
            outcome = window.popleft().result()
            yield self._recorded(outcome) if self.workers else outcome

    def _recorded(self, outcome: PageOutcome) -> PageOutcome:
        if outcome.site is not None:
            with self._memory_lock:
                self.site_memory.record(outcome.site, outcome.fingerprints)
        return outcome

    def _outcome_of(
        self, future: concurrent.futures.Future[PageOutcome], deferred: int = 0
    ) -> PageOutcome:
        try:
            return future.result()
        except Exception as exc:
            failure = self._budget_outcome(exc, deferred)
            if failure is not None:
                return failure
            logger.error("the analysis of a page failed", exc_info=exc)
            return PageOutcome(failed="analysis_error", message=f"{type(exc).__name__}: {exc}")

    def _budget_outcome(self, exc: Exception, deferred: int = 0) -> PageOutcome | None:
        """Return the outcome of a task stopped by its budget or its worker, else ``None``;
        ``deferred``: the times the task had been tried again."""
        if isinstance(exc, TimeoutError):
            backstop = wall_backstop(self.pool_params.timeout, deferred) or 0.0
            where = " alone in the pool" if deferred >= DEFERRAL_RETRIES else ""
            return PageOutcome(
                dropped="analysis_timeout",
                message=f"the analysis took over {backstop:g} s of wall time{where} (the "
                "backstop of WEBSIM_ANALYSIS_TIMEOUT's CPU time); its worker was replaced",
            )
        if isinstance(exc, MemoryError):  # the result itself was too large to send back
            return PageOutcome(dropped="too_large", message="the page's result is too large")
        if isinstance(exc, concurrent.futures.CancelledError):
            return PageOutcome(failed="cancelled", message="the analysis pool was stopped")
        return _worker_failure(exc)

    def close(self) -> None:
        """Wait for the pages in flight and those queued to be tried again, then stop the
        workers."""
        with self._gate:
            self._gate.wait_for(lambda: not self._queue and not self._running)
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None
