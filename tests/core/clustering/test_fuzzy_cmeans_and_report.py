"""Fuzzy c-means, tf-idf, validity indices, auto-k and the clusters report."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from websim_crawler.core.clustering import (
    ClusteringParams,
    DocumentCollector,
    FuzzyCMeans,
    PageToCluster,
    build_report,
    cluster_documents,
    lsa_reduce,
    partition_coefficient,
    partition_entropy,
    render_html,
    tfidf_vectors,
)
from websim_crawler.core.clustering.auto import choose_n_clusters, coarse_grid, upper_bound
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.stages import StagePlan, prepare_record
from websim_crawler.core.text import keyword_tokens
from websim_crawler.errors import ConfigError

skfuzzy = pytest.importorskip("skfuzzy")


def blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    means = np.array([[0, 0, 0, 0], [4, 4, 0, 0], [0, 4, 4, 1]], dtype=float)
    data = np.vstack([rng.normal(mean, 0.7, size=(50, 4)) for mean in means])
    return data, np.repeat(np.arange(3), 50)


def topic_documents(n_topics: int, per_topic: int, seed: int = 0) -> tuple[list[dict], list[int]]:
    """Documents drawing 15 words from their topic's 40 words and 10 from 200 shared words."""
    rng = np.random.default_rng(seed)
    documents, labels = [], []
    shared = [f"common{i}" for i in range(200)]
    for topic in range(n_topics):
        vocabulary = [f"topic{topic}word{i}" for i in range(40)]
        for _ in range(per_topic):
            words = rng.choice(vocabulary, 15).tolist() + rng.choice(shared, 10).tolist()
            documents.append(dict(Counter(words)))
            labels.append(topic)
    return documents, labels


def agreement(labels: np.ndarray, truth: np.ndarray) -> float:
    """Fraction of pairs on which two labellings agree (Rand index)."""
    same_pred = labels[:, None] == labels[None, :]
    same_true = truth[:, None] == truth[None, :]
    return float((same_pred == same_true).mean())


# --- the estimator ------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [2.0, 1.5])
def test_memberships_equal_skfuzzy_from_the_same_initialisation(m: float) -> None:
    data, _ = blobs()
    rng = np.random.default_rng(1)
    initial = rng.random((3, data.shape[0]))
    initial /= initial.sum(axis=0)
    # skfuzzy starts from memberships; our first centres are the ones those memberships give.
    weights = initial**m
    first_centers = (weights @ data) / weights.sum(axis=1)[:, None]
    centers, membership, *_rest, n_iter, fpc = skfuzzy.cluster.cmeans(
        data.T, 3, m, error=1e-9, maxiter=500, init=initial
    )
    model = FuzzyCMeans(3, m=m, metric="euclidean", init=first_centers, tol=1e-10, max_iter=500)
    model.fit(data)
    assert np.abs(model.membership_ - membership.T).max() < 1e-4
    assert np.abs(model.cluster_centers_ - centers).max() < 1e-4
    assert model.partition_coefficient_ == pytest.approx(fpc, abs=1e-6)
    assert abs(model.n_iter_ - n_iter) <= 1


def test_sparse_and_dense_inputs_give_the_same_clusters() -> None:
    documents, _ = topic_documents(3, 20)
    matrix = tfidf_vectors(documents).matrix.astype(np.float64)
    sparse_model = FuzzyCMeans(3, m=1.2, random_state=3).fit(matrix)
    dense_model = FuzzyCMeans(3, m=1.2, random_state=3).fit(matrix.toarray())
    assert np.abs(sparse_model.membership_ - dense_model.membership_).max() < 1e-8
    assert sparse_model.objective_ == pytest.approx(dense_model.objective_, rel=1e-9)


def test_fit_recovers_blobs_and_predict_proba_matches_membership() -> None:
    data, truth = blobs()
    model = FuzzyCMeans(3, m=2.0, metric="euclidean", n_init=2, random_state=0).fit(data)
    assert agreement(model.membership_.argmax(axis=1), truth) > 0.97
    assert np.allclose(model.membership_.sum(axis=1), 1.0)
    assert np.abs(model.predict_proba(data) - model.membership_).max() < 1e-3
    assert (model.predict(data) == model.membership_.argmax(axis=1)).mean() > 0.99
    history = np.array(model.objective_history_)
    assert np.all(np.diff(history) <= 1e-9 * history[0])  # alternating updates never increase J_m
    assert model.objective_ == history[-1]
    assert 1 <= model.n_iter_ < 300


def test_objective_is_the_weighted_sum_of_squared_distances() -> None:
    data, _ = blobs()
    model = FuzzyCMeans(3, m=1.7, metric="euclidean", random_state=0).fit(data)
    squared = ((data[:, None, :] - model.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
    assert model.objective_ == pytest.approx(float((model.membership_**1.7 * squared).sum()))


def test_validity_indices_on_crisp_and_uniform_memberships() -> None:
    crisp = np.eye(4)[[0, 1, 2, 3, 0, 1]]
    uniform = np.full((6, 4), 0.25)
    assert partition_coefficient(crisp) == pytest.approx(1.0)
    assert partition_entropy(crisp) == pytest.approx(0.0)
    assert partition_coefficient(uniform) == pytest.approx(0.25)
    assert partition_entropy(uniform) == pytest.approx(math.log(4))


def test_xie_beni_is_lower_for_the_true_number_of_clusters() -> None:
    data, _ = blobs()
    scores = {
        k: FuzzyCMeans(k, m=2.0, metric="euclidean", random_state=0).fit(data).xie_beni_
        for k in (2, 3, 5)
    }
    assert scores[3] < scores[2] and scores[3] < scores[5]


def test_bad_estimator_arguments_raise_config_errors() -> None:
    data, _ = blobs()
    with pytest.raises(ConfigError, match="larger than the number of samples"):
        FuzzyCMeans(200).fit(data)
    with pytest.raises(ConfigError, match="m \\(fuzziness\\)"):
        FuzzyCMeans(2, m=1.0).fit(data)
    with pytest.raises(ConfigError, match="metric"):
        FuzzyCMeans(2, metric="manhattan").fit(data)
    with pytest.raises(ConfigError, match="NaN"):
        FuzzyCMeans(2).fit(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ConfigError, match="not fitted"):
        FuzzyCMeans(2).predict(data)


def test_low_fuzziness_avoids_the_uniform_membership_collapse() -> None:
    """m=2 on raw sparse tf-idf drifts towards uniform memberships; m=1.1 (the default) does not."""
    documents, truth = topic_documents(6, 30)
    matrix = tfidf_vectors(documents).matrix
    soft = FuzzyCMeans(6, m=2.0, random_state=0).fit(matrix)
    sharp = FuzzyCMeans(6, m=1.1, random_state=0).fit(matrix)
    assert soft.partition_coefficient_ < 0.3  # near 1/6: memberships say almost nothing
    assert sharp.partition_coefficient_ > 0.8
    assert agreement(sharp.membership_.argmax(axis=1), np.array(truth)) > 0.95


# --- vectors ------------------------------------------------------------------------------------


def test_tfidf_weights_and_document_frequency_bounds() -> None:
    documents = [
        {"apple": 3, "fruit": 1, "everywhere": 1},
        {"apple": 1, "pie": 2, "everywhere": 1},
        {"fruit": 1, "salad": 1, "everywhere": 1},
    ]
    tfidf = tfidf_vectors(documents, min_df=2, max_df=0.9)
    assert tfidf.terms == ("apple", "fruit")  # 'everywhere' is in every page, pie/salad in one
    row = tfidf.matrix[0].toarray().ravel()
    idf = math.log(4 / 2)  # ln((N + 1) / df)
    assert np.allclose(tfidf.idf, [idf, idf])
    expected = np.array([(1 + math.log(3)) * idf, idf])
    assert np.allclose(row, expected / np.linalg.norm(expected), atol=1e-6)
    assert tfidf.matrix.dtype == np.float32
    assert tfidf_vectors(documents[:1]).terms == ("apple", "everywhere", "fruit")


def test_idf_keeps_the_contrast_between_rare_and_common_terms() -> None:
    """idf = ln((N + 1) / df): no ``+ 1`` flattening rare against common terms."""
    documents = [{"common": 1, "rare": 1}] + [{"common": 1, f"other{i}": 1} for i in range(8)]
    tfidf = tfidf_vectors(documents, min_df=1, max_df=1.0)
    idf = dict(zip(tfidf.terms, tfidf.idf, strict=True))
    assert idf["rare"] == pytest.approx(math.log(10), rel=1e-6)
    assert idf["common"] == pytest.approx(math.log(10 / 9), rel=1e-6)
    assert idf["rare"] / idf["common"] > 20  # smoothed idf + 1 gives (ln 5 + 1) / 1 = 2.6
    single = tfidf_vectors([{"alone": 2, "page": 1}])  # a term in every page keeps a weight
    assert single.matrix.nnz == 2 and np.all(single.matrix.data > 0)


def test_lsa_reduce_returns_unit_rows_or_none_when_too_small() -> None:
    documents, _ = topic_documents(3, 10)
    matrix = tfidf_vectors(documents).matrix
    reduced = lsa_reduce(matrix, 5, random_state=0)
    assert reduced is not None and reduced.shape == (30, 5)
    assert np.allclose(np.linalg.norm(reduced, axis=1), 1.0, atol=1e-5)
    assert lsa_reduce(matrix, 0) is None
    assert lsa_reduce(sp.csr_matrix(np.eye(2)), 5) is None


# --- the job ------------------------------------------------------------------------------------


@pytest.mark.parametrize("true_k", [3, 5, 8])
def test_auto_recovers_the_number_of_topics(true_k: int) -> None:
    documents, truth = topic_documents(true_k, 30, seed=true_k)
    params = ClusteringParams(n_clusters="auto", max_clusters=12)
    result = cluster_documents(
        [PageToCluster(f"http://site/{i}", counts) for i, counts in enumerate(documents)], params
    )
    assert result.n_clusters == true_k
    assert agreement(result.labels, np.array(truth)) > 0.97
    tried = [score.n_clusters for score in result.candidates]
    upper = min(12, len(documents) // 5)
    assert set(coarse_grid(upper)) <= set(tried) <= set(range(2, upper + 1))
    assert tried == sorted(tried)
    xie_beni = {score.n_clusters: score.xie_beni_median for score in result.candidates}
    assert xie_beni[true_k] <= 1.1 * min(xie_beni.values())  # the fewest within 10% of the best
    assert all(xie_beni[k] > 1.1 * min(xie_beni.values()) for k in xie_beni if k < true_k)


def test_fit_keeps_every_restarts_xie_beni() -> None:
    data, _ = blobs()
    model = FuzzyCMeans(3, n_init=4, random_state=0).fit(data)
    assert model.restart_xie_beni_.shape == (4,)
    assert model.xie_beni_ in model.restart_xie_beni_  # the lowest-objective run is one of them
    single = FuzzyCMeans(1, n_init=2, random_state=0).fit(data)
    assert np.isnan(single.restart_xie_beni_).all()


class _StubModel:
    """A fitted-looking model whose Xie-Beni values are given."""

    def __init__(self, n_clusters: int, restarts: list[float]) -> None:
        self.n_clusters = n_clusters
        self.restart_xie_beni_ = np.array(restarts)
        self.xie_beni_ = min(restarts)  # the lowest-objective run happens to be the lucky one
        self.partition_coefficient_ = self.partition_entropy_ = self.objective_ = 0.5

    def fit(self, data: Any) -> _StubModel:
        return self


def test_auto_reads_the_median_xie_beni_of_the_restarts_not_one_lucky_run() -> None:
    restarts = {k: [1.0, 1.0, 1.0] for k in range(2, 21)}
    restarts[6] = [0.70, 0.72, 0.75]  # every restart agrees: a real minimum
    restarts[15] = [0.50, 1.40, 1.50]  # one lucky run; the other two split a cluster in two
    model, scores = choose_n_clusters(np.zeros((100, 2)), 20, lambda k: _StubModel(k, restarts[k]))
    assert model.n_clusters == 6  # the lowest single run (0.50 at 15) would have chosen 15
    by_k = {score.n_clusters: score for score in scores}
    assert by_k[15].xie_beni == 0.5 and by_k[15].xie_beni_median == 1.4


def test_auto_recovers_planted_blobs_beyond_sqrt_n() -> None:
    rng = np.random.default_rng(3)
    n_blobs, per_blob = 30, 10  # 300 points: sqrt(N) is 17, the search goes up to N / 5 = 60
    means = rng.normal(0, 1, size=(n_blobs, 20))
    data = np.vstack([rng.normal(mean, 0.08, size=(per_blob, 20)) for mean in means])
    truth = np.repeat(np.arange(n_blobs), per_blob)
    model, scores = choose_n_clusters(
        data, upper_bound(len(data), 100), lambda k: FuzzyCMeans(k, n_init=3, random_state=0)
    )
    assert model.n_clusters == n_blobs
    assert agreement(np.asarray(model.membership_.argmax(axis=1)), truth) > 0.99
    assert max(score.n_clusters for score in scores) == 60


def test_auto_finds_many_small_topics_beyond_sqrt_n() -> None:
    documents, truth = topic_documents(40, 8, seed=1)  # 320 documents: sqrt(N) is 17
    result = cluster_documents(
        [PageToCluster(f"http://site/{i}", counts) for i, counts in enumerate(documents)],
        ClusteringParams(),
    )
    assert result.n_clusters == 40
    assert agreement(result.labels, np.array(truth)) > 0.99
    tried = [score.n_clusters for score in result.candidates]
    assert max(tried) == 320 // 5 and len(tried) < 40  # coarse to fine, not all 63


def test_upper_bound_and_coarse_grid() -> None:
    assert upper_bound(1, 100) == 1
    assert upper_bound(2, 100) == 2
    assert upper_bound(100, 100) == 20  # N / 5
    assert upper_bound(10_000, 100) == 100  # the setting
    assert coarse_grid(20) == [2, 3, 4, 5, 6, 8, 10, 12, 15, 19, 20]
    assert coarse_grid(2) == [2]


def collect(pages: Sequence[tuple[Any, str, object]], kind: str = "record") -> DocumentCollector:
    collector = DocumentCollector(kind)
    for url, page_kind, keywords in pages:
        collector.add({"url": url, "kind": page_kind, "keyword_stems": keywords})
    return collector


def test_collector_keeps_first_url_and_counts_every_skip() -> None:
    collector = collect(
        [
            ("http://a/1", "record", {"apple": 2}),
            ("http://a/1", "record", {"apple": 2}),
            ("http://a/2", "results", {"apple": 2}),
            ("http://a/3", "page", {"pear": 1}),
            ("http://a/4", "record", {}),
            ("http://a/5", "record", {"bad": "x", "zero": 0}),
            (None, "record", {"apple": 1}),
        ]
    )
    assert collector.pages.urls == ["http://a/1", "http://a/3"]
    assert collector.report.pages == 7
    assert collector.report.skipped == {
        "duplicate_url": 1,
        "other_kind": 1,
        "no_keywords": 2,
        "no_url": 1,
    }


def test_empty_input_gives_a_valid_empty_report() -> None:
    collector = collect([("http://a/1", "record", {})])
    result = cluster_documents(collector.pages, ClusteringParams(), collector.report)
    report = build_report(result)
    assert report["clusters"] == [] and report["documents"] == []
    assert report["input"]["skipped"] == {"no_keywords": 1}
    assert "no page with keywords" in report["input"]["notes"][0]
    json.dumps(report, allow_nan=False)
    assert "<svg" not in render_html(result)


def test_one_page_gives_one_cluster() -> None:
    collector = collect([("http://a/1", "record", {"apple": 2, "pie": 1})])
    report = build_report(cluster_documents(collector.pages, ClusteringParams()))
    assert report["params"]["n_clusters"] == 1
    assert report["clusters"][0]["members"] == ["http://a/1"]
    assert report["documents"] == [
        {"url": "http://a/1", "title": None, "cluster": 0, "memberships": [1.0]}
    ]
    assert report["validity"]["xie_beni"] is None  # undefined for one cluster
    json.dumps(report, allow_nan=False)


def test_more_clusters_than_distinct_pages_is_capped_with_a_note() -> None:
    pages = [
        ("http://a/1", "record", {"apple": 2, "pie": 1}),
        ("http://a/2", "record", {"apple": 2, "pie": 1}),  # same keywords, another URL
        ("http://a/3", "record", {"car": 1, "road": 3}),
        ("http://a/4", "record", {"car": 2, "road": 1}),
    ]
    collector = collect(pages)
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=10), collector.report)
    report = build_report(result)
    assert report["params"]["n_clusters"] == 3
    assert report["params"]["n_clusters_requested"] == 10
    assert any(
        "10 clusters asked for but only 3 distinct" in note for note in report["input"]["notes"]
    )
    labels = {document["url"]: document["cluster"] for document in report["documents"]}
    assert labels["http://a/1"] == labels["http://a/2"]
    assert labels["http://a/1"] != labels["http://a/3"]


def test_pages_without_shared_keywords_are_counted() -> None:
    pages = [
        ("http://a/1", "record", {"apple": 2, "pie": 1}),
        ("http://a/2", "record", {"apple": 1, "pie": 1}),
        ("http://a/3", "record", {"unique": 1}),
    ]
    collector = collect(pages)
    report = build_report(cluster_documents(collector.pages, ClusteringParams(), collector.report))
    assert report["input"]["skipped"] == {"no_shared_keywords": 1}
    assert [document["url"] for document in report["documents"]] == ["http://a/1", "http://a/2"]


def test_report_schema_and_content() -> None:
    documents, truth = topic_documents(3, 12)
    collector = collect([(f"http://s/{i}", "record", counts) for i, counts in enumerate(documents)])
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=3), collector.report)
    report = build_report(result)
    assert set(report) == {"params", "validity", "clusters", "documents", "input"}
    assert report["params"]["fuzziness"] == 1.1 and report["params"]["metric"] == "cosine"
    assert set(report["validity"]) >= {"partition_coefficient", "partition_entropy", "xie_beni"}
    sizes = [cluster["size"] for cluster in report["clusters"]]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == 36
    for cluster in report["clusters"]:
        assert len(cluster["members"]) == cluster["size"]
        topics = {truth[int(url.rsplit("/", 1)[1])] for url in cluster["members"]}
        assert len(topics) == 1
        (topic,) = topics
        top = cluster["top_keywords"][0]
        assert top["term"] == top["stem"]  # keywords without text: no other form to show
        assert top["term"].startswith(f"topic{topic}word") and top["weight"] > 0
    for document in report["documents"]:
        assert len(document["memberships"]) == 3
        assert abs(sum(document["memberships"]) - 1.0) < 1e-5
        assert document["cluster"] == int(np.argmax(document["memberships"]))
    page = render_html(result, title="Topics <test>")
    assert page.count("<circle") == 36
    assert "Topics &lt;test&gt;" in page and 'id="cluster-2"' in page
    assert "http://s/0" in page


def test_the_html_report_links_only_http_urls() -> None:
    """A feed's javascript: or data: URL is shown as text, never as a link to click."""
    documents, _ = topic_documents(2, 4)
    urls = ["javascript:alert(1)", "data:text/html,<b>x</b>", "http://s/2", "https://s/3"]
    urls += [f"http://s/{n}" for n in range(4, len(documents))]
    collector = collect(
        [(url, "record", counts) for url, counts in zip(urls, documents, strict=True)]
    )
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=2), collector.report)
    page = render_html(result)
    assert 'href="javascript:' not in page and 'href="data:' not in page
    assert "<li>javascript:alert(1) <small>" in page
    assert "<li>data:text/html,&lt;b&gt;x&lt;/b&gt; <small>" in page
    assert '<a href="http://s/2">http://s/2</a>' in page and '<a href="https://s/3">' in page


def test_clustering_params_validate_n_clusters() -> None:
    assert ClusteringParams(n_clusters=4).n_clusters == 4
    with pytest.raises(ConfigError, match="WEBSIM_CLUSTERS_N"):
        ClusteringParams(n_clusters="many")
    with pytest.raises(ConfigError, match="WEBSIM_CLUSTERS_N"):
        ClusteringParams(n_clusters=0)
    with pytest.raises(ConfigError, match="WEBSIM_CLUSTERS_FUZZINESS"):
        ClusteringParams(fuzziness=1.0)


PLAN = StagePlan(AnalysisParams(), clustering_kind="record")


def test_top_keywords_read_as_their_most_frequent_surface_form() -> None:
    collector = DocumentCollector("record")
    pages = {
        "http://a/1": "Telescopes, telescopes and a telescope under dark skies.",
        "http://a/2": "A telescope on a mount; the telescope sees dark skies.",
        "http://a/3": "Bread dough, more dough and the baked breads.",
        "http://a/4": "Dough rises; bread bakes; breads cool.",
    }
    for url, text in pages.items():
        keywords = Counter(keyword_tokens(text, "en"))
        record = {"url": url, "kind": "record", "keyword_stems": keywords}
        # prepared as in a worker: the forms come with the record, the collector only appends
        prepared = prepare_record(record | {"main_text": text, "language": "en"}, PLAN)
        assert collector.add(prepared) is None
    # no text: no forms
    collector.add(
        {"url": "http://a/5", "kind": "record", "keyword_stems": {"telescop": 9, "dark": 1}}
    )
    # the forms are added up over the pages with text (pages 1 and 2); page 5 votes for none
    votes = collector.pages.form_votes
    assert votes["telescop"] == {"telescopes": 2, "telescope": 3}
    assert votes["sky"] == {"skies": 2}
    assert votes["dark"] == {"dark": 2}
    result = cluster_documents(collector.pages, ClusteringParams(n_clusters=2, min_df=1))
    readable = {k.stem: k.term for top in result.top_keywords for k in top}
    # "telescope" 1 + 2 times against "telescopes" 2 times; page 5's stems cast no vote
    assert readable["telescop"] == "telescope"
    assert readable["sky"] == "skies"
    assert readable["dough"] == "dough"
    assert readable["bread"] == "bread"  # "bread" and "breads" twice each: the first of the two
    report = build_report(result)
    first = report["clusters"][0]["top_keywords"][0]
    assert set(first) == {"term", "stem", "weight"} and first["weight"] > 0


def test_clusters_do_not_depend_on_the_order_pages_arrive_in() -> None:
    documents, _ = topic_documents(4, 25, seed=11)
    pages = [PageToCluster(f"http://site/{i}", counts) for i, counts in enumerate(documents)]
    params = ClusteringParams(n_clusters="auto", max_clusters=10)
    first = cluster_documents(pages, params)
    by_url = dict(zip(first.urls, first.labels, strict=True))
    for seed in (1, 2):
        shuffled = list(pages)
        np.random.default_rng(seed).shuffle(shuffled)
        again = cluster_documents(shuffled, params)
        assert list(again.urls) == [page.url for page in shuffled]  # as they came in
        assert again.n_clusters == first.n_clusters
        assert dict(zip(again.urls, again.labels, strict=True)) == by_url
        assert again.top_keywords == first.top_keywords
