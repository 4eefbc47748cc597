"""A JOBDIR that survives SIGKILL: queue, seen requests and leases in one SQLite file.

Scrapy's own JOBDIR keeps the seen fingerprints in a buffered file and the queue's index
(``active.json``, queuelib's ``info.json``) written only when the spider closes: after a SIGKILL
the resumed crawl finds an empty queue and a partial seen file, and starts over (or, worse, skips
requests that were seen but never crawled). Here ``JOBDIR/websim-frontier.sqlite`` holds:

- ``seen``: the fingerprint of every filtered request ever queued;
- ``queue``: each queued request (Scrapy's request dict, pickled), its priority, and whether it
  is leased (handed to the engine and not finished yet).

A new request is checked against ``seen`` and queued in one transaction; a request taken by the
engine is marked leased, and deleted once the engine is done with it (items exported, follow-up
requests queued; see :mod:`websim_crawler.frontier.release`). Each change is committed at once (WAL
journal, ``synchronous=NORMAL``: durable when the process is killed; ``WEBSIM_FEED_FSYNC``-like
durability against a machine crash would need ``synchronous=FULL``). A resumed crawl puts the
leased requests back in the queue: after a SIGKILL it recrawls at most the requests that were in
flight, at most ``CONCURRENT_REQUESTS``.

Requests that cannot be serialized (a callback that is not a spider method) stay in memory, as in
Scrapy. Without JOBDIR this is Scrapy's scheduler, unchanged.
"""

from __future__ import annotations

import logging
import pickle
import sqlite3
from pathlib import Path
from typing import Any, Self

from scrapy import Request, Spider
from scrapy.core.scheduler import Scheduler
from scrapy.crawler import Crawler
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.misc import load_object
from scrapy.utils.request import request_from_dict

from websim_crawler.frontier.release import LEASE, release_when_done

logger = logging.getLogger(__name__)

FRONTIER_FILE = "websim-frontier.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (fingerprint TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    priority INTEGER NOT NULL,
    leased INTEGER NOT NULL DEFAULT 0,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_order ON queue (leased, priority, id);
"""


class SqliteFrontier:
    """The queue, seen fingerprints and leases of one crawl in a SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.connection = sqlite3.connect(path, isolation_level=None)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=NORMAL")
        self.connection.executescript(_SCHEMA)

    def requeue_leased(self) -> int:
        """Put back every request a previous run held when it stopped; return how many."""
        cursor = self.connection.execute("UPDATE queue SET leased = 0 WHERE leased = 1")
        return cursor.rowcount

    def mark_seen(self, fingerprint: str) -> bool:
        """Record a fingerprint; ``False`` if it was seen before."""
        cursor = self.connection.execute(
            "INSERT OR IGNORE INTO seen (fingerprint) VALUES (?)", (fingerprint,)
        )
        return cursor.rowcount == 1

    def add(self, fingerprint: str | None, priority: int, data: bytes) -> bool:
        """Queue ``data`` unless ``fingerprint`` was seen (``None``: not filtered); one commit."""
        with self.connection:  # one transaction: seen and queued together, or neither
            self.connection.execute("BEGIN IMMEDIATE")
            if fingerprint is not None and not self.mark_seen(fingerprint):
                return False
            self.connection.execute(
                "INSERT INTO queue (priority, data) VALUES (?, ?)", (priority, data)
            )
        return True

    def lease(self) -> tuple[int, bytes] | None:
        """Mark the next request (highest priority, newest first) leased and return it."""
        row = self.connection.execute(
            "SELECT id, data FROM queue WHERE leased = 0 ORDER BY priority DESC, id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        self.connection.execute("UPDATE queue SET leased = 1 WHERE id = ?", (row[0],))
        return int(row[0]), bytes(row[1])

    def release(self, lease: int) -> None:
        """Forget a finished request."""
        self.connection.execute("DELETE FROM queue WHERE id = ?", (lease,))

    def pending(self) -> int:
        """Return how many requests wait (not leased)."""
        row = self.connection.execute("SELECT COUNT(*) FROM queue WHERE leased = 0").fetchone()
        return int(row[0])

    def seen(self) -> int:
        """Return how many distinct requests this crawl has queued, in every run."""
        row = self.connection.execute("SELECT COUNT(*) FROM seen").fetchone()
        return int(row[0])

    def in_flight(self) -> int:
        """Return how many requests are leased (after a kill: those the next run recrawls)."""
        row = self.connection.execute("SELECT COUNT(*) FROM queue WHERE leased = 1").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the file (leased requests stay leased: the next run puts them back)."""
        self.connection.close()


class JobdirScheduler(Scheduler):
    """Scrapy's scheduler; with ``JOBDIR``, a :class:`SqliteFrontier` replaces its disk queue."""

    frontier: SqliteFrontier | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build Scrapy's scheduler, or (with JOBDIR) one filtering through the SQLite frontier."""
        jobdir = job_dir(crawler.settings)
        if not jobdir:
            return super().from_crawler(crawler)
        dupefilter_class = load_object(crawler.settings["DUPEFILTER_CLASS"])
        if dupefilter_class is not RFPDupeFilter:
            logger.warning(
                "JOBDIR: requests are filtered by their fingerprint in %s; DUPEFILTER_CLASS "
                "%s is not used",
                FRONTIER_FILE,
                crawler.settings["DUPEFILTER_CLASS"],
            )
        scheduler = cls(
            # No path: the seen fingerprints live in the frontier file, not in requests.seen.
            dupefilter=RFPDupeFilter(
                debug=crawler.settings.getbool("DUPEFILTER_DEBUG"),
                fingerprinter=crawler.request_fingerprinter,
            ),
            jobdir=None,
            mqclass=load_object(crawler.settings["SCHEDULER_MEMORY_QUEUE"]),
            logunser=crawler.settings.getbool("SCHEDULER_DEBUG"),
            stats=crawler.stats,
            pqclass=load_object(crawler.settings["SCHEDULER_PRIORITY_QUEUE"]),
            crawler=crawler,
        )
        scheduler.frontier = SqliteFrontier(Path(jobdir) / FRONTIER_FILE)
        return scheduler

    def open(self, spider: Spider) -> Any:
        """Open the queues; put back the requests a killed run held; watch for finished ones."""
        opened = super().open(spider)
        if self.frontier is not None:
            assert self.crawler is not None and self.stats is not None
            requeued = self.frontier.requeue_leased()
            if requeued:
                self.stats.inc_value("websim/jobdir/requeued", requeued)
                logger.info(
                    "JOBDIR: %d request(s) in flight when the crawl stopped, requeued", requeued
                )
            pending, seen = self.frontier.pending(), self.frontier.seen()
            if seen:  # an earlier run crawled: scraping nothing now is not a failure
                self.stats.set_value("websim/jobdir/seen_before", seen)
            if pending:
                logger.info("JOBDIR: resuming with %d queued request(s)", pending)
            elif seen:
                logger.info(
                    "JOBDIR: the crawl had finished (%d request(s) seen, none left to crawl)",
                    seen,
                )
            elif (self.frontier.path.parent / "requests.queue").is_dir():
                logger.warning(
                    "JOBDIR %s holds a queue written by Scrapy's own scheduler; it is not read, "
                    "the crawl starts afresh in %s",
                    self.frontier.path.parent,
                    FRONTIER_FILE,
                )
            release_when_done(self.crawler, self._release)
        return opened

    def close(self, reason: str) -> Any:
        """Close the frontier file, then the duplicate filter."""
        if self.frontier is not None:
            self.frontier.close()
        return super().close(reason)

    def enqueue_request(self, request: Request) -> bool:
        """Queue a request in the frontier file unless seen (memory if not serializable)."""
        if self.frontier is None:
            return super().enqueue_request(request)
        assert self.stats is not None and self.crawler is not None
        request.meta.pop(LEASE, None)  # a retry or redirect of a leased request is a new one
        fingerprint = (
            None
            if request.dont_filter
            else self.crawler.request_fingerprinter.fingerprint(request).hex()
        )
        try:
            data = pickle.dumps(request.to_dict(spider=self.spider), protocol=4)
        except (ValueError, pickle.PicklingError, TypeError, AttributeError) as exc:
            if fingerprint is not None and not self.frontier.mark_seen(fingerprint):
                self.df.log(request, self.spider)
                return False
            logger.debug("JOBDIR: %s kept in memory, not serializable: %s", request, exc)
            self._mqpush(request)
            self.stats.inc_value("scheduler/enqueued/memory")
        else:
            if not self.frontier.add(fingerprint, request.priority, data):
                self.df.log(request, self.spider)
                return False
            self.stats.inc_value("scheduler/enqueued/disk")
        self.stats.inc_value("scheduler/enqueued")
        return True

    def next_request(self) -> Request | None:
        """Return a request from memory, else lease the next one from the frontier file."""
        if self.frontier is None:
            return super().next_request()
        assert self.stats is not None
        request: Request | None = self.mqs.pop()
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/memory")
        else:
            leased = self.frontier.lease()
            if leased is None:
                return None
            lease, data = leased
            request = request_from_dict(pickle.loads(data), spider=self.spider)
            request.meta[LEASE] = lease
            self.stats.inc_value("scheduler/dequeued/disk")
        self.stats.inc_value("scheduler/dequeued")
        return request

    def __len__(self) -> int:
        if self.frontier is None:
            return super().__len__()
        return len(self.mqs) + self.frontier.pending()

    def _release(self, request: Request) -> None:
        assert self.frontier is not None
        self.frontier.release(int(request.meta[LEASE]))
