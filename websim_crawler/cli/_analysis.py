"""Analyse the feed records that need it in the worker pool, with the crawl's per-page budget.

``websim cluster``, ``similar`` and ``neardup`` read feeds whose records may lack keywords or
chunks (a feed of raw HTML); those records are analysed in worker processes with the time and
memory budget of a crawl's analysis (``WEBSIM_ANALYSIS_TIMEOUT``, ``WEBSIM_WORKER_MEMORY_MB``),
never in the command's own process, where a hostile page would run unbounded.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from websim_crawler.config import WebsimConfig
from websim_crawler.core.page import AnalysisParams
from websim_crawler.pool import AnalysisPool, PageOutcome


def analysed_records(
    records: Iterable[dict[str, Any]],
    config: WebsimConfig,
    needs_analysis: Callable[[dict[str, Any]], bool],
    params: AnalysisParams | None = None,
    chunk_detail: str = "none",
) -> Iterator[tuple[dict[str, Any], PageOutcome | None]]:
    """Yield each record, in order, with its analysis' outcome (``outcome.record``: the page
    record with ``chunk_detail`` chunks, analysed with ``params`` or the command's settings; or
    why it was dropped), or ``None`` when it needs no analysis."""
    html_field = config.items.html_field
    pool = AnalysisPool(params or config.analysis, config.pool, chunk_detail, fork_from_caller=True)
    waiting: deque[tuple[dict[str, Any], bool]] = deque()

    def pages() -> Iterator[tuple[str | bytes, str | None, str | None] | PageOutcome]:
        for record in records:
            html, url = record.get(html_field), record.get("url")
            analyse = isinstance(html, (str, bytes)) and bool(html) and needs_analysis(record)
            waiting.append((record, analyse))
            if analyse:
                yield html, url if isinstance(url, str) else None, None  # type: ignore[misc]
            else:
                yield PageOutcome()

    with contextlib.closing(pool):
        for outcome in pool.map(pages()):
            record, analysed = waiting.popleft()
            yield record, outcome if analysed else None


# Outcomes of the budget itself, rather than of the page's content.
OVER_BUDGET = frozenset({"analysis_timeout", "too_large"})


def drop_reason(outcome: PageOutcome) -> str:
    """Return the skip reason of a page whose analysis gave no record (``analysis_<why>``)."""
    reason = outcome.dropped or outcome.failed or "unknown"
    return f"analysis_{reason.removeprefix('analysis_')}"
