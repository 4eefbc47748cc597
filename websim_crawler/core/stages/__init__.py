"""The collection stages' contract: what each stage reads of a page, prepared once per page.

The clustering, similarity and near-duplicate stages each declare the record they take
(``ClusterRecord``, ``SimilarityRecord``, ``NeardupRecord``, with the reasons a page is skipped,
in their own ``params`` modules); ``preparation`` fills them, as one ``StageRecord``, where the
page is analysed. This room sits above the stages it feeds: they never import it
(``tests/project/test_layering.py``).
"""

from __future__ import annotations

from websim_crawler.core.clustering.params import ClusterRecord
from websim_crawler.core.neardup.params import NeardupRecord
from websim_crawler.core.similarity.params import SimilarityRecord
from websim_crawler.core.stages.preparation import (
    StagePlan,
    StageRecord,
    needs_worker,
    prepare_record,
)

__all__ = [
    "ClusterRecord",
    "NeardupRecord",
    "SimilarityRecord",
    "StagePlan",
    "StageRecord",
    "needs_worker",
    "prepare_record",
]
