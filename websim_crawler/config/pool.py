"""Settings of the analysis in worker processes (``WEBSIM_CHUNK_DETAIL``, ``WEBSIM_ANALYSIS_*``)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from websim_crawler.core.page import CHUNK_DETAILS
from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class PoolParams:
    """Which chunks the analysis writes back, how many worker processes analyse pages, and each
    page's budget of time and memory."""

    chunk_detail: str = setting(
        "main",
        "WEBSIM_CHUNK_DETAIL",
        "chunks written to items: full (every chunk), main (main-content chunks) or none",
        choices=CHUNK_DETAILS,
    )
    workers: int | None = setting(
        None,
        "WEBSIM_ANALYSIS_WORKERS",
        "worker processes that analyse pages (default: the usable CPUs; 0: in the crawl's own "
        "process, without the time and memory caps)",
        minimum=0,
    )
    max_pending: int = setting(
        16,
        "WEBSIM_ANALYSIS_MAX_PENDING",
        "pages handed to the analysis and not yet back; further pages wait",
        minimum=1,
    )
    timeout: float = setting(
        20.0,
        "WEBSIM_ANALYSIS_TIMEOUT",
        "CPU seconds a page's analysis may use in its own worker (a loaded machine does not "
        "stretch it; whole seconds, rounded up); the page is then dropped as analysis_timeout. "
        "Wall time backs it up at 3x (budget + 1 s), for a worker starved of the CPU: a page "
        "that hits only that is tried again once, with twice the backstop (0: no limit)",
        minimum=0.0,
    )
    worker_memory_mb: int = setting(
        1024,
        "WEBSIM_WORKER_MEMORY_MB",
        "memory a worker may allocate beyond its start-up size (RLIMIT_AS); a page that needs "
        "more is dropped as too_large (0: no limit)",
        minimum=0,
    )

    def __post_init__(self) -> None:
        validate(self)

    def worker_count(self) -> int:
        """Return the number of worker processes (0: analyse in the caller's process)."""
        if self.workers is not None:
            return self.workers
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
