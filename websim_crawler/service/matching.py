"""The index in memory, answering one page at a time by ``websim match``'s code path.

A page is prepared for the similarity stage in the analysis worker pool (``core.stages``, with a
page's time and memory budget, as ``websim match`` prepares each page) and answered by
``core.reference_index.match_line``, the function that prints ``websim match``'s lines. Each
page is prepared as if it were the only one: the pool's per-site template memory is not fed by
the pages posted, so an answer does not depend on the pages posted before it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

from websim_crawler.config import WebsimConfig
from websim_crawler.core.reference_index import (
    MatchLine,
    ReferenceIndex,
    match_line,
    prepared_page,
)
from websim_crawler.core.similarity.comparison import PageFeatures
from websim_crawler.core.stages import StagePlan
from websim_crawler.errors import ConfigError, PageError
from websim_crawler.service.pages import PostedPage
from websim_crawler.workers.pool import AnalysisPool

logger = logging.getLogger(__name__)
# The URL a page posted without one is matched under: a saved file's, which states no http(s)
# URL (its relative links unknown), as ``websim match`` reads a saved page.
POSTED_URL = "file:///posted/page.html"


class MatchService:
    """A reference index kept in memory, its worker pool warm; thread-safe.

    ``match`` answers a page as ``websim match`` does; ``add_reference`` adds one to the index
    and writes the index file again (beside, then renamed over it).
    """

    def __init__(self, config: WebsimConfig, index_path: str | Path | None = None) -> None:
        path = index_path or config.matching.index
        if not path:
            raise ConfigError("give the index: --index INDEX (or WEBSIM_MATCH_INDEX)")
        self.config = config
        self.index_path = Path(path)
        self.index = ReferenceIndex.load(self.index_path, config.similarity, config.matching)
        # The server runs threads (the event loop, the request threads): workers come from a
        # fork server, never forked from this process.
        pool_params = dataclasses.replace(config.pool, chunk_detail="none")
        self.pool = AnalysisPool(config.analysis, pool_params)
        self.plan = StagePlan(
            config.analysis, html_field=config.items.html_field, similarity=config.similarity
        )
        self._index_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.index)

    def start(self) -> None:
        """Start the worker processes now, not on the first page (blocks while they start)."""
        self.pool.start()

    def close(self) -> None:
        """Stop the worker processes."""
        self.pool.close()

    def prepare(self, page: PostedPage) -> PageFeatures:
        """Return the page's features, prepared in a worker with a page's budget; ``PageError``
        with the reason when it cannot be (``analysis_timeout``, ``too_large``, ...)."""
        record = page.as_record(self.config.items.html_field)
        # in_order: the outcome's template fingerprints are left unrecorded (see the module).
        outcome = self.pool.submit_record(record, self.plan, in_order=True).result()
        if outcome.stage_record is None:
            reason = outcome.dropped or outcome.failed or "unknown"
            raise PageError(reason, outcome.message or f"the page could not be analysed: {reason}")
        return prepared_page(outcome.stage_record)

    def match(
        self, page: PostedPage, question: str | None = None, top: int | None = None
    ) -> MatchLine:
        """Return the page's line, as ``websim match`` prints it for the same page (a page
        without a URL is matched as ``POSTED_URL``)."""
        features = self.prepare(page if page.url else dataclasses.replace(page, url=POSTED_URL))
        with self._index_lock:
            return match_line(self.index, features, question, top)

    def add_reference(self, page: PostedPage) -> str:
        """Add a page to the index and write the index file; return its URL. ``PageError``
        with the reason (``no_url``, ``duplicate_url``, ``problem_html`` ...) when it is not
        added."""
        if not page.url:
            raise PageError(
                "no_url", "a reference needs its URL: give url, or post a WARC record of the page"
            )
        features = self.prepare(page)
        with self._index_lock:
            reason = self.index.add(features)
            if reason is not None:
                raise PageError(reason, f"the reference was not added: {reason}")
            self.index.save(self.index_path)
        logger.info("added the reference %s (%d in all)", features.url, len(self.index))
        return str(features.url)
