"""Feed records to an end-of-crawl stage offline: the crawl's stage code, the crawl's workers.

``websim cluster``, ``similar`` and ``neardup`` prepare each record in the analysis worker pool
(``core.stages``, with the crawl's per-page time and memory budget) and hand it to the
same core stage as the crawl's pipeline, by the stage contract of ``pipelines._collection``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Protocol

from websim_crawler.config import WebsimConfig
from websim_crawler.core.stages import StagePlan, StageRecord
from websim_crawler.workers.pool import AnalysisPool


class Stage(Protocol):
    """The part of the stage contract an offline command uses."""

    def add(self, record: StageRecord) -> str | None:
        """Take one prepared record; return why it was skipped, or ``None``."""

    def skip(self, reason: str) -> None:
        """Count one record left out before ``add``."""


def take_records(
    stage: Stage, records: Iterable[dict[str, Any]], config: WebsimConfig, plan: StagePlan
) -> int:
    """Prepare each record in the worker pool and give it to ``stage``, in the records' order;
    return how many could not be prepared within the budget (skipped as ``analysis_<why>``:
    ``analysis_timeout``, ``analysis_too_large``, ``analysis_worker_crash``)."""
    pool_params = dataclasses.replace(config.pool, chunk_detail="none")
    pool = AnalysisPool(config.analysis, pool_params, fork_from_caller=True)
    over_budget = 0
    try:
        for outcome in pool.map_records(records, plan):
            if outcome.stage_record is None:
                reason = outcome.dropped or outcome.failed or "unknown"
                stage.skip(f"analysis_{reason.removeprefix('analysis_')}")
                over_budget += 1
            else:
                stage.add(outcome.stage_record)
    finally:
        pool.close()
    return over_budget
