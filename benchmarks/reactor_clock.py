"""The reactor thread's CPU time per item in a crawl's item pipelines: a Scrapy extension.

``benchmarks/crawl.py --reactor-per-item`` runs its crawls with it
(``EXTENSIONS = {"reactor_clock.ReactorClock": 0}``, this folder on ``PYTHONPATH``). The time
is ``time.thread_time`` of the reactor thread, so what other processes on the machine do does
not count: in each pipeline's ``process_item``, its call and every step of its coroutine up to
the item's exit from the pipeline, and in all from the spider's opening to its closing. It is
set as ``reactor_clock/<pipeline class>``, ``reactor_clock/reactor`` and
``reactor_clock/items`` (the items that entered the pipelines), which the crawl's stats dump
prints.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any


class ReactorClock:
    """Time the reactor thread in each item pipeline's ``process_item`` and in all; set the
    seconds as ``reactor_clock/...`` stats when the spider closes."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.seconds: dict[str, float] = {}
        self.items = 0
        self.opened = 0.0
        # Signal handlers run on the reactor thread.
        for handler, signal in (
            (self.spider_opened, signals.spider_opened),
            (self.spider_closed, signals.spider_closed),
        ):
            crawler.signals.connect(handler, signal=signal)

    @classmethod
    def from_crawler(cls, crawler: Any) -> ReactorClock:
        """Build the clock for ``crawler`` (how Scrapy builds an extension)."""
        return cls(crawler)

    def spider_opened(self) -> None:
        """Wrap every pipeline's ``process_item``; start the reactor thread's clock."""
        methods = self.crawler.engine.scraper.itemproc.methods["process_item"]
        timed = [self.timed(method, first=n == 0) for n, method in enumerate(methods)]
        methods.clear()
        methods.extend(timed)
        self.opened = time.thread_time()

    def spider_closed(self) -> None:
        """Set the stats the crawl dumps next."""
        stats = self.crawler.stats
        stats.set_value("reactor_clock/reactor", time.thread_time() - self.opened)
        stats.set_value("reactor_clock/items", self.items)
        for name, seconds in self.seconds.items():
            stats.set_value(f"reactor_clock/{name}", seconds)

    def timed(self, method: Callable[..., Any], first: bool) -> Callable[[Any], Awaitable[Any]]:
        """Return ``method`` timed: its call and, for a coroutine, each of its steps."""
        name = type(getattr(method, "__self__", method)).__name__

        async def process_item(item: Any) -> Any:
            from scrapy.utils.defer import ensure_awaitable

            if first:
                self.items += 1
            started = time.thread_time()
            try:
                result = method(item)
            finally:
                self.add(name, started)
            if inspect.iscoroutine(result):
                return await TimedSteps(result, functools.partial(self.add, name))
            return await ensure_awaitable(result)  # an item, or a Deferred (not timed further)

        return process_item

    def add(self, name: str, started: float) -> None:
        """Count the reactor's CPU time since ``started`` to pipeline ``name``."""
        self.seconds[name] = self.seconds.get(name, 0.0) + time.thread_time() - started


class TimedSteps:
    """Await a coroutine step by step, reporting each step's start to ``count`` as it ends."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any], count: Callable[[float], None]) -> None:
        self.coroutine = coroutine
        self.count = count

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            started = time.thread_time()
            try:
                if error is None:
                    waiting = self.coroutine.send(value)
                else:
                    waiting = self.coroutine.throw(error)
            except StopIteration as stop:
                return stop.value
            finally:
                self.count(started)
            try:
                value, error = (yield waiting), None
            except GeneratorExit:
                self.coroutine.close()
                raise
            except BaseException as exc:  # thrown in by the event loop: passed on
                value, error = None, exc
