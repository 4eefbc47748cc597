"""Chromium's memory: the private resident memory summed over the browser's processes, capped.

At each check (``Rendering`` runs one every 0.1 s) the watchdog lists the Chromium processes
started by this process and sums their private resident memory (RSS less the shared pages,
which every Chromium process maps and a plain RSS sum would count once per process). Past the
cap it kills one renderer, telling apart whose fault the excess is. A renderer over the
per-page memory broke its own bound: the largest such is killed (an ``own`` kill; its page is
refused as ``websim/pages/failed/render_memory``). Otherwise several ordinary pages together
broke the browser's shared cap: the youngest renderer (the least work lost) is killed (a
``shared`` kill; its page is deferred and tried again with fewer pages beside it, see
``pressure.py``). When the browser stays over the cap for 5 s with no renderer left to kill,
the whole browser is restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from websim_crawler._imports import require

logger = logging.getLogger(__name__)

_GRACE_SECONDS = 5.0


def chromium_processes() -> list[Any]:
    """Return the Chromium processes (``psutil.Process``) descending from this process."""
    psutil = require("psutil")
    found = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(os.getpid()).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.name().startswith("chrom"):
                    found.append(child)
    return found


def private_bytes(process: Any) -> int:
    """Return a process's resident memory that no other process shares (from ``statm``)."""
    info = process.memory_info()
    return int(info.rss - getattr(info, "shared", 0))


def _is_renderer(process: Any) -> bool:
    try:
        return "--type=renderer" in process.cmdline()
    except require("psutil").Error:
        return False


class MemoryWatchdog:
    """Keep the browser's summed private memory under ``limit_bytes``; see the module docstring."""

    def __init__(
        self,
        limit_bytes: int,
        count: Callable[[str], None],
        *,
        page_limit_bytes: int | None = None,
        on_shared_kill: Callable[[], None] = lambda: None,
    ) -> None:
        self.limit_bytes = limit_bytes
        self.page_limit_bytes = min(page_limit_bytes or limit_bytes, limit_bytes)
        self.count = count
        self.on_shared_kill = on_shared_kill
        self.peak_bytes = 0
        self.kills = 0
        self.kills_by_kind = {"own": 0, "shared": 0}
        self.psutil = require("psutil")
        self.processes: list[Any] = []
        self._over_since: float | None = None

    def total_bytes(self) -> int:
        """Return the summed private resident memory of the browser's processes now.

        The processes are listed anew each time (0.6 ms for a few dozen): a renderer started
        since the last look would otherwise fill memory unseen (a page can allocate a gigabyte
        a second).
        """
        self.processes = chromium_processes()
        total = 0
        for process in self.processes:
            with contextlib.suppress(self.psutil.Error):
                total += private_bytes(process)
        self.peak_bytes = max(self.peak_bytes, total)
        return total

    async def check(self, restart: Callable[[], Awaitable[None]]) -> None:
        """Measure once; kill the largest renderer past the cap, restart when that is not enough."""
        loop = asyncio.get_running_loop()
        if self.total_bytes() <= self.limit_bytes:
            self._over_since = None
            return
        renderers = []
        for process in self.processes:
            with contextlib.suppress(self.psutil.Error):
                if _is_renderer(process):
                    renderers.append((private_bytes(process), process.create_time(), process))
        victim = choose_victim(
            [(size, started) for size, started, _ in renderers],
            page_limit=self.page_limit_bytes,
            smallest=self.limit_bytes // 16,
        )
        if victim is not None:
            kind, index = victim
            size, _, process = renderers[index]
            with contextlib.suppress(self.psutil.Error):
                process.kill()
                self.kills += 1
                self.kills_by_kind[kind] += 1
                self.count("websim/render/memory_kills")
                self.count(f"websim/render/memory_kills/{kind}")
                if kind == "shared":
                    self.on_shared_kill()
                logger.warning(
                    "rendering: Chromium used over %d MiB; killed %s renderer of %d MiB",
                    self.limit_bytes >> 20,
                    "a page over its own bound: a" if kind == "own" else "the youngest",
                    size >> 20,
                )
            return
        if self._over_since is None:
            self._over_since = loop.time()
        elif loop.time() - self._over_since >= _GRACE_SECONDS:
            self._over_since = None
            self.count("websim/render/browser_restarts/memory")
            logger.warning("rendering: Chromium stays over the memory cap; restarting it")
            await restart()


def choose_victim(
    renderers: list[tuple[int, float]], *, page_limit: int, smallest: int
) -> tuple[str, int] | None:
    """Choose the renderer to kill among ``(private bytes, start time)`` pairs, and why.

    ``("own", i)``: the largest renderer over ``page_limit``, a page over its own bound.
    ``("shared", i)``: else the youngest of those over ``smallest`` bytes (an empty tab frees
    nothing), the page that has done the least work. ``None`` when no renderer is worth it.
    """
    over = [(size, index) for index, (size, _) in enumerate(renderers) if size > page_limit]
    if over:
        return "own", max(over)[1]
    sized = [(started, index) for index, (size, started) in enumerate(renderers) if size > smallest]
    if sized:
        return "shared", max(sized)[1]
    return None
