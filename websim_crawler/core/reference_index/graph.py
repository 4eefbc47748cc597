"""One similarity stage's sketches as a nearest-neighbour graph: faiss's HNSW (Malkov and
Yashunin, 2018), ids being reference numbers, so a match grows with log(references)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.reference_index.sketch import DIMENSIONS
from websim_crawler.errors import InputFormatError

# HNSW graph: links per node, and the breadth of the search while building.
HNSW_LINKS = 32
HNSW_BUILD_BREADTH = 80


class StageGraph:
    """The HNSW graph of one stage's sketches, ids being reference numbers."""

    def __init__(self, faiss_index: Any = None) -> None:
        import faiss

        # One query is one small search: OpenMP threads only wait for each other on a busy
        # machine (tens of milliseconds), and the crawl's workers have the other cores.
        faiss.omp_set_num_threads(1)
        self.faiss = faiss
        if faiss_index is None:
            graph = faiss.IndexHNSWFlat(DIMENSIONS, HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = HNSW_BUILD_BREADTH
            faiss_index = faiss.IndexIDMap2(graph)
        self.index = faiss_index

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def add(self, ids: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)

    def nearest(self, vector: NDArray[np.float32], count: int) -> NDArray[np.int64]:
        if not self.size:
            return np.zeros(0, dtype=np.int64)
        graph: Any = self.faiss.downcast_index(self.index.index)
        graph.hnsw.efSearch = max(2 * count, 64)
        _scores, ids = self.index.search(vector[None, :].astype(np.float32), min(count, self.size))
        found: NDArray[np.int64] = ids[0]
        return found[found >= 0]

    def to_bytes(self) -> bytes:
        return bytes(self.faiss.serialize_index(self.index))

    @classmethod
    def from_bytes(cls, data: memoryview, expected: int, source: str) -> StageGraph:
        import faiss

        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError as exc:
            raise InputFormatError(f"{source}: not a faiss index: {exc}") from exc
        if index.d != DIMENSIONS or index.ntotal != expected:
            raise InputFormatError(
                f"{source}: {index.ntotal} vectors of {index.d} dimensions, expected {expected} "
                f"of {DIMENSIONS}"
            )
        return cls(index)
