"""What runs in an analysis worker: the tasks it is sent, what it sends back, and its budget.

A worker is forked warm (``warm_up``), started by ``start_worker`` (Ctrl-C ignored, memory
capped), and runs each task inside ``within_cpu_budget``: :func:`analyse_task` for a page,
:func:`stage_task` for a record that did not come through the analysis. A page that cannot be
analysed is a :class:`PageOutcome` with its reason, never an exception. The pool that sends the
tasks, admits them and reads the outcomes is ``workers.pool``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from websim_crawler.core.page import (
    AnalysisParams,
    AnalysisRecord,
    PageAnalysis,
    TemplateSnapshot,
    analyse_page,
)
from websim_crawler.errors import PageError

if TYPE_CHECKING:
    from websim_crawler.core.stages import StagePlan, StageRecord

T = TypeVar("T")

_MEGABYTE = 1024 * 1024


@dataclass(frozen=True)
class PageTask:
    """One page to analyse, with the template fingerprints of its site when it was sent."""

    html: str | bytes
    url: str | None
    template: frozenset[str] | None = None  # None: no template memory
    content_type: str | None = None
    page_kind: str | None = None  # the item's kind: each kind has its own template memory
    # The item's other fields the end-of-crawl stages read (kind, links, screenshot), when the
    # pool prepares their records (``stage_plan``).
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class StageTask:
    """One record that did not come through the page analysis, to prepare for the stages."""

    record: dict[str, Any]
    url: str | None
    template: frozenset[str] | None = None


@dataclass(frozen=True)
class PageOutcome:
    """What came of a task: the page's record, or the reason it was dropped or failed.

    ``record`` is ``PageAnalysis.to_dict(chunk_detail)``; ``fingerprints`` are the page's chunk
    fingerprints, for the site memory.
    """

    record: AnalysisRecord | None = None
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    site: str | None = None
    fingerprints: tuple[str, ...] = ()
    stage_record: StageRecord | None = None  # what the end-of-crawl stages read
    dropped: str | None = None  # a reason: empty, binary, too_large, analysis_timeout ...
    failed: str | None = None  # worker_crash
    message: str = ""
    # Times the page hit only the wall-time backstop and was tried again; at DEFERRAL_RETRIES,
    # its last try ran alone in the pool.
    deferred: int = 0


def analyse_task(
    task: PageTask, params: AnalysisParams, chunk_detail: str, plan: StagePlan | None = None
) -> PageOutcome:
    """Analyse one page; a page that cannot be analysed is an outcome with its reason.

    With a ``plan``, the outcome also carries the page's record for the end-of-crawl stages,
    prepared from the item as the analysis pipeline leaves it.
    """
    snapshot = TemplateSnapshot(task.template) if task.template is not None else None
    analysis: PageAnalysis | None = None
    try:
        analysis = analyse_page(
            task.html,
            task.url,
            params=params,
            content_type=task.content_type,
            site_memory=snapshot,
            chunk_detail=chunk_detail,
            page_kind=task.page_kind,
            keep_tree=plan is not None and plan.similarity is not None and not plan.drop_html,
        )
    except PageError as exc:
        return PageOutcome(dropped=exc.reason, message=str(exc))
    except MemoryError:
        pass  # answered below, once the exception and the page's objects it holds are freed
    if analysis is None:
        return PageOutcome(
            dropped="too_large",
            message="the analysis ran out of memory (WEBSIM_WORKER_MEMORY_MB)",
        )
    record = analysis.to_dict(chunk_detail)
    stage_record = None
    if plan is not None:  # imported only by a crawl with a stage on (layout, sentences...)
        from websim_crawler.core.stages import prepare_record

        fields = task.fields or {}
        analysed_item = {
            **fields,
            "url": task.url,
            plan.html_field: None if plan.drop_html else task.html,
            "links": fields.get("links") or list(record["links"]),
            "keywords": record["keywords"],
            "keyword_stems": record["keyword_stems"],
            "title": fields.get("title") or record.get("title"),
            "main_text": record["main_text"],
            "language": record["language"],
            "chunks": record.get("chunks"),
        }
        stage_record = prepare_record(analysed_item, plan, analysed=True, tree=analysis.tree)
    return PageOutcome(
        record=record,
        counts=dict(analysis.counts()),
        site=snapshot.site if snapshot is not None else None,
        fingerprints=snapshot.fingerprints if snapshot is not None else (),
        stage_record=stage_record,
    )


def stage_task(task: StageTask, plan: StagePlan) -> PageOutcome:
    """Prepare one record for the end-of-crawl stages (analysing it if the clustering needs
    its keywords); a record that cannot be prepared is an outcome with its reason."""
    from websim_crawler.core.stages import prepare_record

    snapshot = TemplateSnapshot(task.template) if task.template is not None else None
    stage_record: StageRecord | None = None
    # A MemoryError is answered below, once the exception and the objects it holds are freed.
    with contextlib.suppress(MemoryError):
        stage_record = prepare_record(task.record, plan, site_memory=snapshot)
    if stage_record is None:
        return PageOutcome(
            dropped="too_large",
            message="preparing the record ran out of memory (WEBSIM_WORKER_MEMORY_MB)",
        )
    return PageOutcome(
        site=snapshot.site if snapshot is not None else None,
        fingerprints=snapshot.fingerprints if snapshot is not None else (),
        stage_record=stage_record,
    )


# Analysed once by the process that forks the workers (the fork server, or the caller), so that
# the language model and the stemmers it loads on first use are in every worker before its first
# page: they count neither against that page's time nor its memory cap, and are loaded once.
_WARM_UP_PAGE = (
    "<html><head><title>Warm-up</title></head><body><div><p>The analysis loads its language "
    "model and stemmers once, on this page, before the workers are forked.</p></div>"
    "</body></html>"
)


def warm_up() -> None:
    """Load what the analysis loads on first use, by analysing a small page."""
    analyse_page(_WARM_UP_PAGE)


def start_worker(memory_limit_mb: int) -> None:
    """Prepare a worker (forked warm): Ctrl-C is the crawl's to handle, memory is capped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(ValueError, OSError):  # a worker ended by SIGXCPU dumps no core
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    if memory_limit_mb:
        _cap_address_space(memory_limit_mb * _MEGABYTE)


def _cap_address_space(extra_bytes: int) -> None:
    """Let this process map at most ``extra_bytes`` more than it does now (Linux)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:  # no /proc: the cap cannot be sized, the timeout still holds
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def within_cpu_budget(seconds: float, function: Callable[..., T], *args: Any) -> T:
    """Run ``function(*args)`` in this worker process, which the kernel ends with ``SIGXCPU``
    (``RLIMIT_CPU``, whole seconds, rounded up) once the call has used ``seconds`` of CPU time,
    even inside a long C call (lxml); 0: no limit. The parent sees the worker killed by
    ``SIGXCPU`` and drops the page as ``analysis_timeout``."""
    if not seconds:
        return function(*args)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        return function(*args)
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
