"""The collection stages' contract: what each stage reads of a page, prepared once per page.

The clustering, similarity and near-duplicate stages each name the fields they read
(``CLUSTER_FIELDS``, ``SIMILARITY_FEATURES``, ``NEARDUP_SENTENCES`` and their skip reasons, in
their own ``params`` modules); ``preparation`` fills them where the page is analysed. This room
sits above the stages it feeds: they never import it (``tests/project/test_layering.py``).
"""

from __future__ import annotations

from websim_crawler.core.clustering.params import (
    CLUSTER_FIELDS,
    CLUSTER_FORMS,
    CLUSTER_RECORD_FIELDS,
    CLUSTER_SKIP,
)
from websim_crawler.core.neardup.params import NEARDUP_SENTENCES, NEARDUP_SKIP
from websim_crawler.core.similarity.params import SIMILARITY_FEATURES, SIMILARITY_SKIP
from websim_crawler.core.stages.preparation import StagePlan, needs_worker, prepare_record

__all__ = [
    "CLUSTER_FIELDS",
    "CLUSTER_FORMS",
    "CLUSTER_RECORD_FIELDS",
    "CLUSTER_SKIP",
    "NEARDUP_SENTENCES",
    "NEARDUP_SKIP",
    "SIMILARITY_FEATURES",
    "SIMILARITY_SKIP",
    "StagePlan",
    "needs_worker",
    "prepare_record",
]
