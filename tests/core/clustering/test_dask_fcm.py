"""The Dask engine of fuzzy c-means gives the in-memory clusters, on a real LocalCluster."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from websim_crawler.cli import main
from websim_crawler.core.clustering import ClusteringParams, PageToCluster, cluster_documents
from websim_crawler.core.clustering.dask_fcm import DaskFuzzyCMeans
from websim_crawler.core.clustering.fcm import FuzzyCMeans
from websim_crawler.errors import ConfigError

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """Two worker processes: the chunks and tasks really travel between processes."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def blobs(n_per_blob: int = 150, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 3.0, size=(4, 12))
    rows = [rng.normal(centre, 1.0, size=(n_per_blob, 12)) for centre in centres]
    return np.vstack(rows).astype(np.float32)


def assert_same_fit(memory: FuzzyCMeans, dask: FuzzyCMeans) -> None:
    assert dask.n_iter_ == memory.n_iter_
    assert dask.objective_ == pytest.approx(memory.objective_, rel=1e-5)
    np.testing.assert_allclose(dask.membership_, memory.membership_, atol=1e-3)
    np.testing.assert_allclose(dask.cluster_centers_, memory.cluster_centers_, atol=1e-4)
    ordered = np.sort(memory.membership_, axis=1)
    clear = ordered[:, -1] - ordered[:, -2] > 1e-2  # rows not sitting between two clusters
    labels = memory.membership_.argmax(axis=1)
    assert (dask.membership_.argmax(axis=1)[clear] == labels[clear]).all()
    assert dask.xie_beni_ == pytest.approx(memory.xie_beni_, rel=1e-4)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_dense_rows_give_the_in_memory_clusters(scheduler: str, metric: str) -> None:
    data = blobs()
    settings: dict[str, Any] = {"metric": metric, "m": 2.0, "random_state": 7, "tol": 1e-5}
    memory = FuzzyCMeans(4, **settings).fit(data)
    dask = DaskFuzzyCMeans(4, scheduler=scheduler, chunk_rows=83, **settings).fit(data)
    assert memory.n_iter_ > 3  # the iterations, not only the seeding, are compared
    assert_same_fit(memory, dask)
    assert (memory.membership_.max(axis=1) > 0.6).mean() > 0.9  # clear blobs


def test_sparse_rows_stay_sparse_and_give_the_in_memory_clusters(scheduler: str) -> None:
    data = sp.random(700, 400, density=0.03, random_state=1, format="csr", dtype=np.float32)
    settings: dict[str, Any] = {"m": 1.2, "random_state": 3, "n_init": 2, "max_iter": 60}
    memory = FuzzyCMeans(5, **settings).fit(data)
    dask = DaskFuzzyCMeans(5, scheduler=scheduler, chunk_rows=100, **settings).fit(data)
    assert_same_fit(memory, dask)


def test_without_a_scheduler_a_local_cluster_runs_the_fit() -> None:
    data = blobs(60)
    memory = FuzzyCMeans(3, random_state=0).fit(data)
    dask = DaskFuzzyCMeans(3, random_state=0, chunk_rows=50).fit(data)
    assert_same_fit(memory, dask)


def test_bad_chunk_rows_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunk_rows"):
        DaskFuzzyCMeans(2, chunk_rows=0).fit(blobs(10))
    with pytest.raises(ConfigError, match="WEBSIM_CLUSTERS_ENGINE"):
        ClusteringParams(engine="spark")


TOPICS = {
    "bees": ["hive", "honey", "queen", "swarm", "comb", "nectar", "pollen", "wax"],
    "bread": ["dough", "flour", "yeast", "oven", "crust", "knead", "loaf", "starter"],
    "rocks": ["lava", "magma", "crater", "ash", "eruption", "basalt", "vent", "cone"],
}


def documents(per_topic: int = 40) -> list[PageToCluster]:
    rng = np.random.default_rng(5)
    shared = ["note", "page", "archive", "read"]
    result = []
    for topic, words in TOPICS.items():
        for number in range(per_topic):
            chosen = [*rng.choice(words, size=5, replace=False).tolist(), shared[number % 4]]
            counts = {word: float(rng.integers(1, 5)) for word in chosen}
            result.append(PageToCluster(f"http://s.org/{topic}/{number}", counts))
    return result


def test_clustering_job_gives_the_same_clusters_on_both_engines(scheduler: str) -> None:
    memory = cluster_documents(documents(), ClusteringParams(n_clusters=3, svd_components=10))
    params = ClusteringParams(n_clusters=3, svd_components=10, engine="dask", chunk_rows=35)
    dask = cluster_documents(documents(), params)  # a local in-process cluster
    dask_remote = cluster_documents(documents(), dataclasses.replace(params, scheduler=scheduler))
    for result in (dask, dask_remote):
        assert result.urls == memory.urls
        np.testing.assert_allclose(result.membership, memory.membership, atol=1e-3)
        assert (result.labels == memory.labels).all()
    topics_of = {
        label: {memory.urls[i].split("/")[3] for i in np.flatnonzero(memory.labels == label)}
        for label in range(3)
    }
    assert sorted(len(topics) for topics in topics_of.values()) == [1, 1, 1]


@pytest.mark.slow
def test_cluster_command_engine_dask_writes_the_memory_report(
    scheduler: str, tmp_path: Path
) -> None:
    feed = tmp_path / "pages.jsonl"
    with feed.open("w", encoding="utf-8") as handle:
        for document in documents(20):
            record = {"url": document.url, "kind": "record", "keywords": dict(document.keywords)}
            handle.write(json.dumps(record) + "\n")
    reports = {}
    for engine in ("memory", "dask"):
        output = tmp_path / f"{engine}.json"
        arguments = ["cluster", str(feed), "-o", str(output), "--n-clusters", "auto"]
        arguments += ["--engine", engine, "--no-progress"]
        if engine == "dask":
            arguments += ["--scheduler", scheduler]
        assert main(arguments) == 0
        reports[engine] = json.loads(output.read_text(encoding="utf-8"))
    memory, dask = reports["memory"], reports["dask"]
    assert [c["members"] for c in dask["clusters"]] == [c["members"] for c in memory["clusters"]]
    assert len(memory["clusters"]) == 3
    for mine, theirs in zip(dask["documents"], memory["documents"], strict=True):
        np.testing.assert_allclose(mine["memberships"], theirs["memberships"], atol=1e-3)
