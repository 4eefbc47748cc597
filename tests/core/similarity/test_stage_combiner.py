"""Fitted stage weights: StageCombiner, the combined mode, and the weights file in the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.cli import main
from websim_crawler.core.similarity import (
    StageCombiner,
    compare_pages,
    fit_stage_weights,
    load_stage_weights,
    page_features,
    save_stage_weights,
)
from websim_crawler.core.similarity.combine import with_weights_file
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.errors import ConfigError, InputFormatError
from websim_crawler.pipelines.similarity import SimilarityPipeline

LIST_PAGE = (
    "<html><body><div id='nav'><a href='/a'>a</a><a href='/b'>b</a></div><ul class='r'>"
    "<li>Apple pie with cinnamon apples</li><li>Baked apple pie recipes</li>"
    "<li>Apple crumble and apple pie</li></ul></body></html>"
)
TABLE_PAGE = (
    "<html><body><table><tr><td>Engine oil prices</td><td>$</td></tr></table>"
    "<form><input name=q></form><p>Motor engine oil for diesel engines</p></body></html>"
)


def _renormalised_labels(
    scores: np.ndarray, coef: np.ndarray, intercept: float, rng: np.random.Generator
) -> np.ndarray:
    """Draw labels from the model: log-odds = intercept + sum(coef) x weighted available mean."""
    present = ~np.isnan(scores)
    weights = present * coef
    mean = (weights * np.nan_to_num(scores)).sum(axis=1) / weights.sum(axis=1)
    probability = 1 / (1 + np.exp(-(intercept + coef.sum() * mean)))
    return rng.uniform(size=len(scores)) < probability


def test_fit_recovers_known_weights() -> None:
    rng = np.random.default_rng(0)
    coef, intercept = np.array([6.0, 0.0, 2.0, 4.0]), -5.0
    scores = rng.uniform(size=(20_000, 4))
    labels = _renormalised_labels(scores, coef, intercept, rng)
    combiner = StageCombiner(l2_penalty=0.0).fit(scores, labels)
    assert combiner.coef_ == pytest.approx(coef, abs=0.25)
    assert combiner.intercept_ == pytest.approx(intercept, abs=0.25)
    assert combiner.weights_ == pytest.approx(coef / coef.sum(), abs=0.02)
    assert combiner.threshold_ == pytest.approx(5.0 / 12.0, abs=0.02)
    assert combiner.n_iter_ > 0
    probabilities = combiner.predict_proba(scores)
    assert probabilities.shape == (20_000, 2)
    assert probabilities.sum(axis=1) == pytest.approx(np.ones(20_000))
    assert (combiner.predict(scores) == (probabilities[:, 1] >= 0.5)).all()


def test_fit_recovers_weights_when_stages_are_missing() -> None:
    rng = np.random.default_rng(1)
    coef, intercept = np.array([5.0, 1.0, 3.0, 3.0]), -6.0
    scores = rng.uniform(size=(20_000, 4))
    scores[rng.uniform(size=(20_000, 4)) < 0.4] = np.nan
    scores[np.isnan(scores).all(axis=1), 0] = 0.5
    labels = _renormalised_labels(scores, coef, intercept, rng)
    combiner = fit_stage_weights(scores, labels)
    assert combiner.weights_ == pytest.approx(coef / coef.sum(), abs=0.03)
    assert combiner.threshold_ == pytest.approx(-intercept / coef.sum(), abs=0.02)


def test_penalty_does_not_depend_on_the_scale_of_a_stage() -> None:
    # Link Jaccards span a few hundredths, layout scores all of [0, 1]: shrinking a stage's
    # scores 100-fold must give the same predictions, its coefficient 100 times larger.
    rng = np.random.default_rng(2)
    coef, intercept = np.array([3.0, 0.0, 6.0, 0.0]), -4.5
    scores = rng.uniform(size=(5_000, 4))
    labels = _renormalised_labels(scores, coef, intercept, rng)
    shrunk = scores.copy()
    shrunk[:, 2] *= 0.01
    plain = StageCombiner(l2_penalty=0.05).fit(scores, labels)
    scaled = StageCombiner(l2_penalty=0.05).fit(shrunk, labels)
    assert scaled.coef_[2] == pytest.approx(100 * plain.coef_[2], rel=1e-3)
    assert scaled.predict_proba(shrunk) == pytest.approx(plain.predict_proba(scores), abs=1e-4)


def test_missing_stages_renormalise_the_weighted_mean() -> None:
    combiner = StageCombiner.from_dict(
        {"stages": list(STAGES), "coefficients": [2.0, 1.0, 1.0, 4.0], "intercept": -4.0}
    )
    rows = np.array([[0.8, np.nan, 0.2, np.nan], [0.8, 0.5, 0.2, 0.1], [np.nan] * 4])
    combined = combiner.combined_score(rows)
    assert combined[0] == pytest.approx((2 * 0.8 + 0.2) / 3)
    assert combined[1] == pytest.approx((2 * 0.8 + 0.5 + 0.2 + 4 * 0.1) / 8)
    assert combined[2] == 0.0
    assert combiner.decision_function(rows)[0] == pytest.approx(-4.0 + 8 * 0.6)
    assert combiner.threshold_ == pytest.approx(0.5)
    assert combiner.predict(rows).tolist() == [True, False, False]


def test_a_stage_never_scored_gets_weight_zero() -> None:
    rng = np.random.default_rng(2)
    scores = rng.uniform(size=(2_000, 4))
    scores[:, 3] = np.nan
    labels = scores[:, 0] + 0.1 * rng.normal(size=2_000) > 0.5
    combiner = StageCombiner().fit(scores, labels)
    assert combiner.coef_[3] == 0.0
    assert combiner.weights_[0] > 0.8


@pytest.mark.parametrize(
    ("scores", "labels", "message"),
    [
        (np.ones((3, 4)), [1, 1, 1], "both similar"),
        (np.ones((3, 2)), [0, 1, 1], "shape"),
        (np.ones((3, 4)), [0, 1, 2], "0/1"),
        (np.ones((3, 4)), [0, 1], "3 labels"),
        (np.full((2, 4), np.inf), [0, 1], "infinite"),
    ],
)
def test_fit_rejects_bad_input(scores: np.ndarray, labels: list[int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StageCombiner().fit(scores, labels)


def test_weights_file_round_trip_and_params(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    scores = rng.uniform(size=(3_000, 4))
    labels = _renormalised_labels(scores, np.array([4.0, 1.0, 1.0, 0.5]), -3.0, rng)
    combiner = StageCombiner().fit(scores, labels)
    path = tmp_path / "weights.json"
    save_stage_weights(combiner, path, source="synthetic")
    assert json.loads(path.read_text(encoding="utf-8"))["source"] == "synthetic"
    loaded = load_stage_weights(path)
    assert loaded.predict_proba(scores) == pytest.approx(combiner.predict_proba(scores))
    params = with_weights_file(SimilarityParams(weights_file=str(path)))
    assert params.stage_weights == pytest.approx(tuple(combiner.weights_), abs=1e-5)
    assert params.combined_threshold == pytest.approx(combiner.threshold_, abs=1e-9)


def test_compare_pages_combined_mode_uses_the_fitted_weights() -> None:
    first = page_features(LIST_PAGE, url="http://s/1", keywords={"appl": 2}, links=["http://s/a"])
    second = page_features(
        LIST_PAGE.replace("crumble", "tart"), url="http://s/2", keywords={"oil": 1}, links=[]
    )
    combiner = StageCombiner.from_dict(
        {"stages": list(STAGES), "coefficients": [3.0, 1.0, 0.0, 5.0], "intercept": -2.5}
    )
    report = compare_pages(first, second, "combined", combiner.to_params(SimilarityParams()))
    layout, text, links = (report.stage(stage).score for stage in ("layout", "text", "links"))
    assert layout == 1.0 and text == 0.0 and links is not None
    assert report.stage("visual").verdict == "skipped"
    # The visual stage (weight 5) has no screenshot: layout and text are renormalised, 3:1.
    assert report.combined_score == pytest.approx(0.75)
    expected = combiner.combined_score([[layout, text, links, np.nan]])
    assert report.combined_score == pytest.approx(float(expected[0]))
    assert report.verdict == "similar"  # 0.75 >= threshold 2.5 / 9
    cascade = compare_pages(first, second, "cascade", combiner.to_params(SimilarityParams()))
    assert cascade.verdict == "dissimilar" and cascade.stopped_at == "text"
    strict = dict(combiner.to_dict(), intercept=-8.0)
    strict_params = StageCombiner.from_dict(strict).to_params(SimilarityParams())
    assert compare_pages(first, second, "combined", strict_params).verdict == "dissimilar"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"stages": ["layout"], "coefficients": [1], "intercept": 0}', "must weigh the stages"),
        (
            '{"stages": ["layout", "text", "links", "visual"], "coefficients": [1, -1, 0, 0],'
            ' "intercept": 0}',
            "non-negative",
        ),
        (
            '{"stages": ["layout", "text", "links", "visual"], "coefficients": [1, 1, 0, 0]}',
            "'intercept' must be a number",
        ),
    ],
)
def test_bad_weights_files_give_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "weights.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as raised:
        with_weights_file(SimilarityParams(weights_file=str(path)))
    assert "WEBSIM_SIMILARITY_WEIGHTS_FILE" in str(raised.value)
    with pytest.raises(InputFormatError):
        load_stage_weights(tmp_path / "missing.json")


def _feed(tmp_path: Path) -> Path:
    feed = tmp_path / "pages.jsonl"
    lines = [
        json.dumps(
            {
                "url": f"http://s.test/{number}",
                "html": LIST_PAGE if number % 2 else TABLE_PAGE,
                "links": ["http://s.test/a"] if number < 2 else [],
            }
        )
        for number in range(4)
    ]
    feed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return feed


def _write_weights(path: Path, coefficients: list[float], intercept: float) -> Path:
    payload = {"stages": list(STAGES), "coefficients": coefficients, "intercept": intercept}
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_similar_cli_reads_a_weights_file(tmp_path: Path) -> None:
    feed, out = _feed(tmp_path), tmp_path / "pairs.json"
    links_only = _write_weights(tmp_path / "links.json", [0.0, 0.0, 4.0, 0.0], -2.0)
    args = ["similar", str(feed), "-o", str(out), "--no-progress", "--mode", "combined"]
    assert main([*args, "--weights", str(links_only)]) == 0
    pairs = json.loads(out.read_text(encoding="utf-8"))["pairs"]
    # Only pages 0 and 1 share a link: by links alone they are the one similar pair, although
    # their layouts differ; every combined score is the links score.
    assert [(p["url_1"], p["url_2"]) for p in pairs] == [("http://s.test/0", "http://s.test/1")]
    assert all(p["combined_score"] == pytest.approx(p["scores"]["links"]) for p in pairs)
    layout_only = _write_weights(tmp_path / "layout.json", [4.0, 0.0, 0.0, 0.0], -2.0)
    assert main([*args, "--weights", str(layout_only)]) == 0
    pairs = json.loads(out.read_text(encoding="utf-8"))["pairs"]
    assert {(p["url_1"], p["url_2"]) for p in pairs} == {
        ("http://s.test/0", "http://s.test/2"),
        ("http://s.test/1", "http://s.test/3"),
    }


def test_cli_reports_a_bad_weights_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "weights.json"
    bad.write_text('{"stages": ["layout"]', encoding="utf-8")
    feed = _feed(tmp_path)
    code = main(["similar", str(feed), "-o", str(tmp_path / "p.json"), "--weights", str(bad)])
    assert code == 2
    error = capsys.readouterr().err
    assert "--weights: the weights file" in error and "is not JSON" in error  # names the flag
    assert not (tmp_path / "p.json").exists()
    page = tmp_path / "a.html"
    page.write_text(LIST_PAGE, encoding="utf-8")
    assert main(["compare", str(page), str(page), "--weights", str(tmp_path / "none")]) == 2
    assert "cannot read the weights file" in capsys.readouterr().err


def test_compare_cli_combined_score_follows_the_weights(tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    first.write_text(LIST_PAGE, encoding="utf-8")
    second.write_text(TABLE_PAGE, encoding="utf-8")
    weights = _write_weights(tmp_path / "w.json", [1.0, 0.0, 0.0, 0.0], -0.1)
    out = tmp_path / "report.json"
    code = main(
        ["compare", str(first), str(second), "--mode", "combined", "--weights", str(weights),
         "-o", str(out)]
    )  # fmt: skip
    report = json.loads(out.read_text(encoding="utf-8"))
    layout = report["stages"][0]["score"]
    assert report["combined_score"] == pytest.approx(layout)
    assert report["verdict"] == ("similar" if layout >= 0.1 else "dissimilar")
    assert code == (0 if layout >= 0.1 else 1)


def test_pipeline_rejects_a_bad_weights_file_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "weights.json"
    bad.write_text("[]", encoding="utf-8")
    settings = {
        "WEBSIM_SIMILARITY_OUTPUT": str(tmp_path / "pairs.json"),
        "WEBSIM_SIMILARITY_WEIGHTS_FILE": str(bad),
    }
    with pytest.raises(ValueError, match="WEBSIM_SIMILARITY_WEIGHTS_FILE"):
        build_from_crawler(SimilarityPipeline, get_crawler(settings_dict=settings))
    good = _write_weights(tmp_path / "good.json", [1.0, 0.0, 3.0, 0.0], -1.0)
    settings["WEBSIM_SIMILARITY_WEIGHTS_FILE"] = str(good)
    pipeline = build_from_crawler(SimilarityPipeline, get_crawler(settings_dict=settings))
    assert pipeline.config.similarity.stage_weights == pytest.approx((0.25, 0.0, 0.75, 0.0))
    assert pipeline.config.similarity.combined_threshold == pytest.approx(0.25)
