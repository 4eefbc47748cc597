"""The contract the end-of-crawl ("collection") stages share, and their one Scrapy adapter.

A stage (clustering, similarity, near-duplicates) is a core object with
``add(record) -> None | skip reason``, ``skip(reason)`` for a record left out before it and
``finish() -> result``. Its records are prepared where the page is parsed
(``core.stages``): the analysis worker returns them with the page's analysis, and an item
that comes without one goes through the worker pool too, under its time and memory budget; the
reactor only appends what is ready. With ``JOBDIR`` each record a stage takes is appended to a
journal (``JOBDIR/websim-<stage>-journal.jsonl``) as it comes, so a crawl killed (SIGKILL
included) and resumed gives the stage every record of the whole crawl; a record the journal
lost is counted and warned about. A result that cannot be written is a failed output:
``websim/<stage>/failed``, which ``scrapy crawl`` turns into exit code 1.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import logging
import os
import weakref
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol, Self, cast

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from websim_crawler.config import WebsimConfig, websim_config
from websim_crawler.core.io import check_output_path
from websim_crawler.core.stages import StagePlan, StageRecord, needs_worker, prepare_record
from websim_crawler.errors import InputFormatError, WebsimError
from websim_crawler.frontier.jobdir_state import state_path
from websim_crawler.workers.pool import AnalysisPool
from websim_crawler.workers.tasks import PageOutcome

logger = logging.getLogger(__name__)


class CollectionStage(Protocol):
    """What every end-of-crawl stage offers (the core collectors, by duck typing)."""

    def add(self, record: StageRecord) -> str | None:
        """Take one prepared record; return why it was skipped, or ``None`` when kept."""

    def skip(self, reason: str) -> None:
        """Count one record left out before it reached ``add``."""

    def finish(self) -> Any:
        """Return what was collected (the stage's result is computed from it)."""


async def outcome_of(future: concurrent.futures.Future[PageOutcome]) -> PageOutcome:
    """Wait, without blocking the reactor, for a pool future's outcome."""
    from twisted.internet import reactor

    if future.done():  # analysed in this process (no workers): nothing to wait for
        return future.result()
    waiting: Deferred[PageOutcome] = Deferred()

    def deliver(done: concurrent.futures.Future[PageOutcome]) -> None:
        reactor.callFromThread(waiting.callback, done.result())

    future.add_done_callback(deliver)
    return await maybe_deferred_to_future(waiting)


class StageRecords:
    """The prepared records of the items passing through the pipelines, for every stage.

    The analysis pipeline puts each item's record here, as its worker returned it; an item
    without one (no analysis pipeline before the stages) is prepared in a pool of this
    registry's own. A record is kept with its item, and found again only for that very item
    (an item of any type: dict, dataclass, ``scrapy.Item``); the item's end in the pipelines
    (scraped, dropped, failed) lets both go.
    """

    def __init__(self, crawler: Crawler, config: WebsimConfig) -> None:
        self.config = config
        # The stages of this crawl, as their pipelines are built (before the first item).
        self.plan = StagePlan(
            config.analysis, html_field=config.items.html_field, drop_html=config.items.drop_html
        )
        # id(item) -> (item, record): holding the item keeps its id from being reused by
        # another item while the record waits, and the lookup checks it is the same item.
        self._records: dict[int, tuple[Any, StageRecord | str]] = {}
        self._pool: AnalysisPool | None = None
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(self._forget, signal=signal)

    def enable(self, stage: str) -> None:
        """Prepare the records for ``stage`` too ("cluster", "similarity" or "neardup")."""
        sections: dict[str, dict[str, Any]] = {
            "cluster": {"clustering_kind": self.config.clustering.kind},
            "similarity": {"similarity": self.config.similarity},
            "neardup": {"neardup": self.config.neardup},
        }
        self.plan = dataclasses.replace(self.plan, **sections[stage])

    def put(self, item: Any, record: StageRecord | None) -> None:
        """Keep the record the analysis prepared for ``item``."""
        if record is not None:
            self._records[id(item)] = (item, record)

    def _record_of(self, item: Any) -> StageRecord | str | None:
        kept = self._records.get(id(item))
        return kept[1] if kept is not None and kept[0] is item else None

    async def prepared(self, item: Any) -> StageRecord | str:
        """Return the item's prepared record, or why it could not be prepared."""
        record = self._record_of(item)
        if record is None and not needs_worker(ItemAdapter(item), self.plan):
            record = prepare_record(ItemAdapter(item), self.plan)  # fields picked, no parsing
        if record is None:
            if self._pool is None:
                pool_params = dataclasses.replace(self.config.pool, chunk_detail="none")
                self._pool = AnalysisPool(self.config.analysis, pool_params)
                if self._pool.workers:
                    await maybe_deferred_to_future(deferToThread(self._pool.start))
            fields = dict(ItemAdapter(item).items())
            outcome = await outcome_of(self._pool.submit_record(fields, self.plan))
            record = outcome.stage_record
            if record is None:
                record = str(outcome.dropped or outcome.failed)
            self._records[id(item)] = (item, record)
        return record

    def _forget(self, item: Any, **_: Any) -> None:
        self._records.pop(id(item), None)

    async def close(self) -> None:
        """Stop the pool of records prepared here, if one was started."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await maybe_deferred_to_future(deferToThread(pool.close))


_REGISTRIES: weakref.WeakKeyDictionary[Crawler, StageRecords] = weakref.WeakKeyDictionary()


def stage_records_of(crawler: Crawler) -> StageRecords:
    """Return the crawl's registry of prepared records (made on first use)."""
    registry = _REGISTRIES.get(crawler)
    if registry is None:
        registry = _REGISTRIES[crawler] = StageRecords(crawler, websim_config(crawler))
    return registry


class StageJournal:
    """The records a stage took, one JSON line each, appended as they come (JOBDIR)."""

    def __init__(self, path: Path, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync  # WEBSIM_FEED_FSYNC: each entry forced to the disk, as the feeds
        self.lost = 0  # lines cut by a kill or unreadable, left out of the replay
        self.replayed = 0
        self._file: IO[str] | None = None

    def replay(self) -> list[StageRecord | str]:
        """Return the saved records (a skip reason for a record skipped before the stage); a
        cut or unreadable line is counted and cut off."""
        if not self.path.is_file():
            return []
        entries: list[StageRecord | str] = []
        good_end = 0
        with self.path.open("rb") as journal:
            for line in journal:
                try:
                    if not line.endswith(b"\n"):
                        raise ValueError("a line cut short")
                    entry = json.loads(line)
                    if not isinstance(entry, dict):
                        raise ValueError("not a JSON object")
                except ValueError:  # JSONDecodeError and UnicodeDecodeError included
                    self.lost += 1
                    continue
                skipped = entry.get("skipped")
                entries.append(skipped if isinstance(skipped, str) else cast(StageRecord, entry))
                good_end = journal.tell()
        if self.lost:
            with self.path.open("r+b") as journal:
                journal.truncate(good_end)  # appending goes on after the last whole line
        self.replayed = len(entries)
        return entries

    def append(self, entry: StageRecord | str) -> None:
        """Append one record, or the reason one was skipped, and hand it to the operating system
        (it survives a SIGKILL)."""
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        data = {"skipped": entry} if isinstance(entry, str) else entry
        self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the journal file (it stays in JOBDIR for the next run)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class CollectionPipeline(ABC):
    """One end-of-crawl stage in a crawl: prepared records in, one output file at the close."""

    name: ClassVar[str]  # stats namespace and JOBDIR name: websim/<name>/...
    section: ClassVar[str]  # the section of ``WebsimConfig`` whose ``output`` enables it
    output_setting: ClassVar[str]  # the name of that setting
    # The fields of a prepared record this stage reads (what its journal keeps): the keys of
    # the stage's part of ``StageRecord``.
    record_fields: ClassVar[tuple[str, ...]]

    def __init__(self, crawler: Crawler, config: WebsimConfig, output: str) -> None:
        self.crawler = crawler
        self.config = config
        self.output = output
        self.stage = self.build_stage(config)
        self.records = stage_records_of(crawler)
        self.records.enable(self.name)
        self.records_taken = 0
        path = state_path(crawler.settings, f"{self.name}-journal", suffix=".jsonl")
        self.journal = None if path is None else StageJournal(path, config.reliability.feed_fsync)
        if self.journal is not None:
            self.journal.path.parent.mkdir(parents=True, exist_ok=True)
            for entry in self.journal.replay():
                try:
                    self._take(entry)
                except InputFormatError:  # a line of another version, or edited by hand
                    self.journal.lost += 1
            if self.journal.replayed or self.journal.lost:
                logger.info(
                    "websim %s: resumed with %d record(s) of the earlier run(s) from %s",
                    self.name,
                    self.journal.replayed,
                    self.journal.path,
                )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the stage; ``NotConfigured`` unless its output setting is given."""
        config = websim_config(crawler)
        output = cls.output_of(config)
        if not output:
            raise NotConfigured(f"{cls.output_setting} is not set")
        for path in cls.outputs_of(config):
            check_output_path(path)  # a folder or a read-only place stops the crawl now
        cls.log_enabled(config)
        return cls(crawler, config, output)

    @classmethod
    def output_of(cls, config: WebsimConfig) -> str | None:
        """Return the stage's main output path (``None``: the stage is off)."""
        output: str | None = getattr(config, cls.section).output
        return output

    @classmethod
    def outputs_of(cls, config: WebsimConfig) -> list[str]:
        """Return every file the stage writes (checked at start)."""
        output = cls.output_of(config)
        return [output] if output else []

    @classmethod
    @abstractmethod
    def log_enabled(cls, config: WebsimConfig) -> None:
        """Log once, at INFO, that the stage is on and what it writes."""

    @abstractmethod
    def build_stage(self, config: WebsimConfig) -> CollectionStage:
        """Return the core stage."""

    @abstractmethod
    def finish_and_write(self) -> Any:
        """Finish the stage and write its output atomically (runs in a thread)."""

    @abstractmethod
    def report(self, result: Any) -> None:
        """Set the stats and log the line of a written result."""

    def count_taken(self, reason: str | None) -> None:
        """Count one record taken: kept, or skipped (by reason in the stage's result)."""
        assert self.crawler.stats is not None
        fate = "kept" if reason is None else "skipped"
        self.crawler.stats.inc_value(f"websim/{self.name}/pages/{fate}")

    def _own_part(self, record: StageRecord) -> StageRecord:
        """Return the fields of ``record`` this stage reads."""
        fields = self.record_fields
        return cast(StageRecord, {name: value for name, value in record.items() if name in fields})

    def _take(self, entry: StageRecord | str) -> str | None:
        if isinstance(entry, str):
            self.stage.skip(entry)
            reason: str | None = entry
        else:
            reason = self.stage.add(entry)
        self.records_taken += 1
        self.count_taken(reason)
        return reason

    async def process_item(self, item: Any) -> Any:
        """Take the item's prepared record; the item passes on unchanged."""
        record = await self.records.prepared(item)
        entry = record if isinstance(record, str) else self._own_part(record)
        self._take(entry)
        if self.journal is not None:
            self.journal.append(entry)
        return item

    async def close_spider(self) -> None:
        """Finish the stage in a thread and write its output; a failed write is counted."""
        stats = self.crawler.stats
        assert stats is not None
        await self.records.close()
        try:
            result = await maybe_deferred_to_future(deferToThread(self.finish_and_write))
        except (WebsimError, OSError) as exc:
            stats.set_value(f"websim/{self.name}/failed", 1)
            logger.error("websim %s failed, %s not written: %s", self.name, self.output, exc)
            return
        finally:
            close = getattr(self.stage, "close", None)  # a stage with temporary files
            if close is not None:
                close()
            if self.journal is not None:
                self.journal.close()
        self.report(result)
        stats.set_value(f"websim/{self.name}/records", self.records_taken)
        if self.journal is not None and self.journal.lost:
            stats.set_value(f"websim/{self.name}/records/missing", self.journal.lost)
            logger.warning(
                "websim %s: %s covers %d record(s); %d record(s) of the interrupted run were "
                "lost from %s",
                self.name,
                self.output,
                self.records_taken,
                self.journal.lost,
                self.journal.path,
            )
