"""The compact page store of the clustering and its streamed report."""

from __future__ import annotations

import json
import math
import tracemalloc
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from websim_crawler.core.clustering import (
    ClusteringParams,
    DocumentCollector,
    PageCollection,
    PageToCluster,
    build_report,
    cluster_documents,
    report_chunks,
    tfidf_vectors,
    write_report,
)
from websim_crawler.core.clustering.fcm import l2_normalize_rows
from websim_crawler.core.clustering.reduce import randomized_svd
from websim_crawler.core.clustering.report import DOCUMENTS_PER_CHUNK


def topic_pages(n_pages: int, seed: int = 0) -> list[tuple[str, dict[str, float]]]:
    """Pages of three topics (8 words each) plus shared words, with a few repeated counts."""
    rng = np.random.default_rng(seed)
    topics = [[f"{name}{i}" for i in range(8)] for name in ("sea", "rock", "bird")]
    shared = [f"common{i}" for i in range(30)]
    pages = []
    for number in range(n_pages):
        words = [
            *rng.choice(topics[number % 3], size=6).tolist(),
            *rng.choice(shared, size=4).tolist(),
        ]
        counts = {word: float(count) for word, count in Counter(words).items()}
        pages.append((f"http://site.test/ünï/{number}", counts))
    return pages


def reference_tfidf(rows: list[dict[str, float]], min_df: int, max_df: float) -> sp.csr_matrix:
    """tf-idf as the dict path built it: df per term, ``(1 + ln tf) * ln((N + 1) / df)``, L2."""
    frequency = Counter(term for row in rows for term in row)
    highest = max(math.floor(max_df * len(rows)), min_df)
    terms = sorted(term for term, df in frequency.items() if min_df <= df <= highest)
    column = {term: index for index, term in enumerate(terms)}
    data, indices, indptr = [], [], [0]
    for row in rows:
        for term, count in row.items():
            if term in column:
                indices.append(column[term])
                data.append(1.0 + math.log(count))
        indptr.append(len(indices))
    matrix = sp.csr_matrix(
        (np.asarray(data, np.float32), indices, indptr), shape=(len(rows), len(terms))
    )
    idf = np.log((len(rows) + 1.0) / np.asarray([frequency[t] for t in terms])).astype(np.float32)
    weighted = sp.csr_matrix(matrix @ sp.diags(idf))
    weighted.sum_duplicates()
    normalized: sp.csr_matrix = l2_normalize_rows(weighted)
    return normalized


def test_compact_tfidf_equals_the_dict_formula_bit_for_bit() -> None:
    pages = topic_pages(200)
    collection = PageCollection()
    for url, counts in pages:
        collection.append(url, counts)
    rows = [counts for _url, counts in pages]
    expected = reference_tfidf(rows, min_df=2, max_df=0.5)
    got = collection.take_tfidf(min_df=2, max_df=0.5).matrix
    assert got.shape == expected.shape
    assert (got.indptr == expected.indptr).all()
    assert (got.indices == expected.indices).all()
    assert (got.data == expected.data).all()  # same float32 values, not just close
    dict_path = tfidf_vectors(rows, min_df=2, max_df=0.5).matrix
    assert (dict_path != got).nnz == 0
    # the counts are freed once turned into tf-idf: the URLs stay, nothing more can be added
    assert len(collection) == 200 and collection.urls[0] == pages[0][0]
    with pytest.raises(ValueError, match="already turned into tf-idf"):
        collection.take_tfidf()
    with pytest.raises(ValueError, match="already turned into tf-idf"):
        collection.append("http://site.test/late", {"sea1": 1.0})


def test_tfidf_in_many_chunks_equals_one_chunk() -> None:
    import websim_crawler.core.clustering.vectorize as vectorize

    rows = [counts for _url, counts in topic_pages(300)]
    whole = tfidf_vectors(rows).matrix
    vectorize.TFIDF_CHUNK_COUNTS = 7  # about one page a chunk
    try:
        chunked = tfidf_vectors(rows).matrix
    finally:
        vectorize.TFIDF_CHUNK_COUNTS = 1 << 22
    assert (whole != chunked).nnz == 0 and (whole.indices == chunked.indices).all()


def test_collector_gives_the_clusters_of_the_document_list() -> None:
    pages = topic_pages(90)
    collector = DocumentCollector("record")
    for url, counts in pages:
        assert collector.add({"url": url, "kind": "record", "keyword_stems": counts}) is None
    params = ClusteringParams(n_clusters=3, svd_components=5)
    compact = cluster_documents(collector.pages, params)
    listed = cluster_documents([PageToCluster(url, counts) for url, counts in pages], params)
    assert compact.urls == listed.urls == tuple(url for url, _counts in pages)
    assert (compact.membership == listed.membership).all()
    assert compact.top_keywords == listed.top_keywords
    truth = np.arange(90) % 3
    for label in range(3):  # each cluster is one topic
        assert len(set(truth[compact.labels == label])) == 1


def test_surface_forms_are_added_up_over_the_collection() -> None:
    collection = PageCollection()
    collection.append("u1", {"run": 2.0, "cat": 1.0}, {"run": {"running": 2}})
    collection.append("u2", {"run": 3.0}, {})  # "run" seen as itself three times
    collection.append("u3", {"run": 9.0})  # no text: no vote
    collection.append("u4", {"run": 1.0}, {"run": {"runs": 1}})
    assert collection.form_votes == {
        "run": {"running": 2, "run": 3.0, "runs": 1},
        "cat": {"cat": 1.0},
    }
    assert collection.surface_terms({"run", "cat", "dog"}) == {
        "run": "run",
        "cat": "cat",
        "dog": "dog",
    }


def test_streamed_report_is_the_json_dumps_text() -> None:
    pages = topic_pages(DOCUMENTS_PER_CHUNK + 150)  # the documents and a cluster span chunks
    documents = [PageToCluster(url, counts) for url, counts in pages]
    results = [
        cluster_documents(documents, ClusteringParams(n_clusters=3, svd_components=5)),
        cluster_documents(documents[:40], ClusteringParams(svd_components=5)),  # auto: candidates
        cluster_documents([PageToCluster("http://x/1", {"lone": 1.0})], ClusteringParams()),
        cluster_documents([], ClusteringParams()),  # empty
    ]
    for result in results:
        expected = json.dumps(build_report(result), ensure_ascii=False, indent=2) + "\n"
        streamed = "".join(report_chunks(result))
        assert json.loads(streamed) == json.loads(expected)
        assert streamed == expected
    assert results[1].candidates and results[3].n_clusters == 0


def test_write_report_streams_to_the_file(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    result = cluster_documents(
        [PageToCluster(url, counts) for url, counts in topic_pages(60)],
        ClusteringParams(n_clusters=3, svd_components=5),
    )
    write_report(tmp_path / "c.json", result)
    write_report(tmp_path / "d.json", result, tmp_path / "d.html", "<html></html>\n")
    expected = json.dumps(build_report(result), ensure_ascii=False, indent=2) + "\n"
    assert (tmp_path / "c.json").read_text(encoding="utf-8") == expected
    assert (tmp_path / "d.json").read_text(encoding="utf-8") == expected
    assert (tmp_path / "d.html").read_text(encoding="utf-8") == "<html></html>\n"


def test_collector_memory_per_page_is_a_few_hundred_bytes() -> None:
    """No per-page dict is kept: 10k more pages of 20 keywords cost their URL and 12 B/keyword."""
    vocabulary = [f"term{i}" for i in range(500)]
    rng = np.random.default_rng(0)
    choices = rng.choice(len(vocabulary), size=(21_000, 20))
    collector = DocumentCollector("record")

    def add(first: int, last: int) -> None:
        for number in range(first, last):
            keywords = {vocabulary[i]: 2.0 for i in choices[number]}
            collector.add(
                {"url": f"http://s.test/{number:08d}", "kind": "record", "keyword_stems": keywords}
            )

    add(0, 1000)  # the vocabulary is complete
    tracemalloc.start()
    try:
        sizes = []
        for first in (1000, 11_000):
            before = tracemalloc.get_traced_memory()[0]
            add(first, first + 10_000)
            sizes.append(tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()
    # URL string (~70 B), list and set slots, <= 20 x 12 B of counts (buffers grow by 1/8)
    assert all(size / 10_000 < 600 for size in sizes), sizes
    # a dict of 20 float counts alone is over 1 kB a page
    assert len(collector.pages) == 21_000


def test_randomized_svd_finds_the_top_singular_triplets() -> None:
    rng = np.random.default_rng(3)
    low_rank = (
        rng.standard_normal((400, 12)) @ rng.standard_normal((12, 90)) * np.linspace(4, 1, 90)
    )
    matrix = sp.csr_matrix(low_rank + 0.01 * rng.standard_normal((400, 90)), dtype=np.float32)
    left, values = randomized_svd(matrix, 8, random_state=0)
    exact_left, exact_values, _ = np.linalg.svd(matrix.toarray().astype(np.float64))
    np.testing.assert_allclose(values, exact_values[:8], rtol=1e-4)
    # the same subspace: the projection of each exact vector on the found ones keeps its length
    overlap = np.linalg.norm(left.T.astype(np.float64) @ exact_left[:, :8], axis=0)
    np.testing.assert_allclose(overlap, 1.0, atol=1e-4)
    assert left.shape == (400, 8) and left.dtype == np.float32


def test_randomized_lsa_gives_the_clusters_of_arpack() -> None:
    import websim_crawler.core.clustering.reduce as reduce

    documents = [PageToCluster(url, counts) for url, counts in topic_pages(300)]
    params = ClusteringParams(n_clusters=3, svd_components=8)
    arpack = cluster_documents(documents, params)
    threshold = reduce.RANDOMIZED_MIN_ROWS
    reduce.RANDOMIZED_MIN_ROWS = 1
    try:
        randomized = cluster_documents(documents, params)
    finally:
        reduce.RANDOMIZED_MIN_ROWS = threshold
    assert (arpack.labels == randomized.labels).all()
    assert [k.stem for k in arpack.top_keywords[0]] == [k.stem for k in randomized.top_keywords[0]]
