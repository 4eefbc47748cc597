"""The pairwise similarity stage: at the end of a crawl, write the collection's similar pairs.

Enable it with ``WEBSIM_SIMILARITY_OUTPUT=pairs.json`` and ``ITEM_PIPELINES`` entry
``websim_crawler.pipelines.similarity.SimilarityPipeline`` (after the analysis pipeline, so the
items carry their keywords). Each page's features (layout, links, keywords, screenshot colours)
are computed by the analysis worker that parsed it (an item that comes without the analysis is
prepared in the worker pool too); the pairs are found in a thread when the spider closes and
written atomically. The stage's contract (JOBDIR journal, failed output) is
``pipelines._collection``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

from websim_crawler.config import WebsimConfig
from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.similarity.collection import PageCollector
from websim_crawler.core.similarity.pairs import SimilarPairs, find_similar_pairs
from websim_crawler.core.similarity.questions import COLLECTION_QUESTION, ask
from websim_crawler.core.stages import SimilarityRecord
from websim_crawler.pipelines._collection import CollectionPipeline

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_SECONDS = 10.0


class SimilarityPipeline(CollectionPipeline):
    """Collect each page's similarity features; find and write the similar pairs at the end."""

    name = "similarity"
    section = "similarity"
    output_setting = "WEBSIM_SIMILARITY_OUTPUT"
    record_fields = tuple(SimilarityRecord.__annotations__)
    stage: PageCollector

    @classmethod
    def log_enabled(cls, config: WebsimConfig) -> None:
        """Log where the pairs go."""
        logger.info("websim pairwise similarity enabled, writing %s", config.similarity.output)

    def build_stage(self, config: WebsimConfig) -> PageCollector:
        """Return the collector of the pages' features."""
        return PageCollector(config.similarity, config.analysis, html_field=config.items.html_field)

    def count_taken(self, reason: str | None) -> None:
        """Count a page kept (and the problems of its features) or skipped by reason."""
        stats = self.crawler.stats
        assert stats is not None
        if reason is not None:
            stats.inc_value(f"websim/similarity/skipped/{reason}")
            return
        for problem in self.stage.pages[-1].problems:
            stats.inc_value(f"websim/similarity/problems/{problem.split(':', 1)[0]}")
        stats.inc_value("websim/similarity/pages")

    def finish_and_write(self) -> SimilarPairs:
        """Find the similar pairs and write them atomically."""
        # The question a crawl asks (same-template: groups of pages), candidates from LSH only,
        # at most WEBSIM_SIMILARITY_MAX_PAIRS of them.
        params = ask(self.config.similarity, COLLECTION_QUESTION)
        pairs = find_similar_pairs(self.stage.finish(), params, _logged_progress, always_block=True)
        atomic_write_json(self.output, pairs.to_dict())
        return pairs

    def report(self, result: Any) -> None:
        """Set the pair counts and log where they are."""
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value("websim/similarity/candidate_pairs", result.candidate_pairs)
        stats.set_value("websim/similarity/capped_pairs", result.capped_pairs)
        stats.set_value("websim/similarity/similar_pairs", len(result.pairs))
        stats.set_value("websim/similarity/groups", len(result.groups))
        stats.set_value("websim/similarity/identical_groups", len(result.identical_groups))
        stats.set_value("websim/similarity/capped_buckets", result.capped_buckets)
        logger.info(
            "%s (decided by %s): %d groups of similar pages, %d similar pairs of %d pages "
            "(%d candidate pairs, %d over the cap) written to %s",
            result.question,
            ", ".join(result.decided_by) or "no stage",
            len(result.groups),
            len(result.pairs),
            result.pages,
            result.candidate_pairs,
            result.capped_pairs,
            self.output,
        )


def _logged_progress(pairs: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Yield the pairs, logging how many were compared every ``PROGRESS_INTERVAL_SECONDS``."""
    total = len(pairs) if isinstance(pairs, list) else None
    logger.info("similarity: comparing %s candidate pairs", "?" if total is None else total)
    last = time.monotonic()
    for done, pair in enumerate(pairs):
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL_SECONDS:
            last = now
            logger.info("similarity: %d of %s pairs compared", done, total)
        yield pair
