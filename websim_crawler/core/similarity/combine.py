"""Fit the weights of the combined score from labelled page pairs (logistic regression).

The combined score of ``compare_pages`` is a weighted mean of the stage scores that have data.
``StageCombiner`` fits those weights and a threshold on it: a logistic regression whose linear
part is ``intercept + sum(coef) * weighted_mean``, the mean taken over the available stages with
weights ``coef / sum(coef)`` (so a missing stage renormalises the others instead of counting as
0). The coefficients are kept non-negative (a higher stage score never lowers the similarity),
which makes the fitted model exactly a set of stage weights plus a threshold on their mean:
``WEBSIM_SIMILARITY_STAGE_WEIGHTS`` and ``WEBSIM_SIMILARITY_COMBINED_THRESHOLD``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from websim_crawler.core.io import atomic_write_json
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.errors import ConfigError, InputFormatError

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]


class StageCombiner:
    """Logistic regression on stage scores, renormalised over the stages each pair has.

    Takes stage scores as a float array (pairs x stages) and 0/1 labels in ``fit``;
    ``predict_proba`` returns an array of probabilities.
    Follows scikit-learn's estimator contract: ``fit(X, y)`` returns ``self``; fitted attributes
    end in ``_``. ``X`` has one column per name in ``stages`` and NaN where a stage has no data.
    """

    def __init__(
        self, stages: Sequence[str] = STAGES, l2_penalty: float = 1e-3, max_iter: int = 500
    ) -> None:
        self.stages = stages
        self.l2_penalty = l2_penalty
        self.max_iter = max_iter

    def fit(self, X: ArrayLike, y: ArrayLike) -> StageCombiner:
        """Fit the non-negative coefficients and the intercept by penalised log-loss."""
        scores = self._check_scores(X)
        labels = np.asarray(y)
        if labels.shape != (scores.shape[0],):
            raise ConfigError(f"y must have {scores.shape[0]} labels, got shape {labels.shape}")
        if not np.isin(labels, (0, 1)).all():
            raise ConfigError("y must hold 0/1 (or False/True) labels")
        targets = labels.astype(np.float64)
        if targets.min() == targets.max():
            raise ConfigError("y must hold both similar (1) and dissimilar (0) pairs")
        if self.l2_penalty < 0 or self.max_iter < 1:
            raise ConfigError("l2_penalty must be >= 0 and max_iter >= 1")
        present = ~np.isnan(scores)
        filled = np.where(present, scores, 0.0)
        count = len(self.stages)
        # The penalty weighs each coefficient by its stage's spread, so a stage whose scores are
        # small (link Jaccards of a few hundredths) is not held back against one spanning [0, 1].
        scale = _score_spread(filled, present) ** 2

        def loss_and_gradient(parameters: FloatArray) -> tuple[float, FloatArray]:
            coef, intercept = parameters[:count], parameters[count]
            mean, available = _weighted_mean(filled, present, coef)
            total = coef.sum()
            linear = intercept + total * mean
            loss = -np.mean(targets * log_expit(linear) + (1 - targets) * log_expit(-linear))
            loss += 0.5 * self.l2_penalty * float(coef @ (scale * coef))
            residual = (expit(linear) - targets) / len(targets)
            # d mean / d coef_k = present_k * (x_k - mean) / available (0 where nothing weighs).
            safe = np.where(available > 0, available, 1.0)
            mean_gradient = present * (filled - mean[:, None]) / safe[:, None]
            mean_gradient[available <= 0] = 0.0
            coef_gradient = residual @ (mean[:, None] + total * mean_gradient)
            coef_gradient += self.l2_penalty * scale * coef
            return float(loss), np.append(coef_gradient, residual.sum())

        # A stage with no score in any pair cannot be weighed: its coefficient stays 0.
        observed = [bool(present[:, column].any()) for column in range(count)]
        for stage, seen in zip(self.stages, observed, strict=True):
            if not seen:
                logger.info("stage weights: no pair has a %s score; its weight is 0", stage)
        start = np.append(np.asarray(observed, dtype=np.float64), -0.5 * sum(observed))
        result = minimize(
            loss_and_gradient,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None if seen else 0.0) for seen in observed] + [(None, None)],
            options={"maxiter": self.max_iter},
        )
        if not result.success:
            logger.warning("stage weights: L-BFGS-B stopped early: %s", result.message)
        self.coef_: FloatArray = np.asarray(result.x[:count], dtype=np.float64)
        self.intercept_: float = float(result.x[count])
        self.n_iter_: int = int(result.nit)
        if not self.coef_.any():
            raise ConfigError("no stage score separates the labels: every fitted weight is 0")
        return self

    def combined_score(self, X: ArrayLike) -> FloatArray:
        """Return the weighted mean of each row's available stage scores (0 if none weighs)."""
        scores = self._check_scores(X)
        present = ~np.isnan(scores)
        mean, _available = _weighted_mean(np.where(present, scores, 0.0), present, self.coef_)
        return mean

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Return the log-odds of similarity."""
        return self.intercept_ + float(self.coef_.sum()) * self.combined_score(X)

    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Return the probabilities of (dissimilar, similar), one row per pair."""
        similar = expit(self.decision_function(X))
        return np.column_stack([1.0 - similar, similar])

    def predict(self, X: ArrayLike) -> NDArray[np.bool_]:
        """Return True where the pair is more likely similar than not."""
        return np.asarray(self.decision_function(X) >= 0.0)

    @property
    def weights_(self) -> FloatArray:
        """The relative stage weights (the coefficients normalised to sum to 1)."""
        return np.asarray(self.coef_ / self.coef_.sum())

    @property
    def threshold_(self) -> float:
        """The combined score at which a pair becomes more likely similar than not."""
        return float(-self.intercept_ / self.coef_.sum())

    def to_params(self, params: SimilarityParams) -> SimilarityParams:
        """Return ``params`` with the fitted stage weights and combined threshold."""
        if list(self.stages) != list(STAGES):
            raise ConfigError(f"only a combiner of the stages {STAGES} sets the stage weights")
        weights = tuple(float(f"{weight:.6g}") for weight in self.weights_)
        threshold = min(1.0, max(0.0, self.threshold_))
        return dataclasses.replace(params, stage_weights=weights, combined_threshold=threshold)

    def to_dict(self) -> dict[str, Any]:
        """Return the fitted model as JSON-safe data (the weights file)."""
        return {
            "stages": list(self.stages),
            "coefficients": [float(value) for value in self.coef_],
            "intercept": self.intercept_,
            "weights": [float(value) for value in self.weights_],
            "threshold": self.threshold_,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "weights") -> StageCombiner:
        """Rebuild a fitted combiner from ``to_dict`` data; ``InputFormatError`` if malformed."""
        if not isinstance(data, dict):
            raise InputFormatError(f"{source}: expected a JSON object, got {type(data).__name__}")
        stages, coefficients = data.get("stages"), data.get("coefficients")
        intercept = data.get("intercept")
        if not (
            isinstance(stages, list)
            and stages
            and all(isinstance(stage, str) for stage in stages)
            and len(set(stages)) == len(stages)
        ):
            raise InputFormatError(f"{source}: 'stages' must be a list of distinct stage names")
        if not (
            isinstance(coefficients, list)
            and len(coefficients) == len(stages)
            and all(_finite_number(value) and value >= 0 for value in coefficients)
            and any(coefficients)
        ):
            raise InputFormatError(
                f"{source}: 'coefficients' must be {len(stages)} non-negative numbers, not all 0"
            )
        if not isinstance(intercept, (int, float)) or not _finite_number(intercept):
            raise InputFormatError(f"{source}: 'intercept' must be a number")
        combiner = cls(stages=tuple(stages))
        combiner.coef_ = np.asarray(coefficients, dtype=np.float64)
        combiner.intercept_ = float(intercept)
        combiner.n_iter_ = 0
        return combiner

    def _check_scores(self, X: ArrayLike) -> FloatArray:
        try:
            scores = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"X must be numbers: {exc}") from exc
        if scores.ndim != 2 or scores.shape[1] != len(self.stages) or scores.shape[0] == 0:
            raise ConfigError(
                f"X must have shape (pairs, {len(self.stages)}) for the stages {tuple(self.stages)}"
                f", got {scores.shape}"
            )
        if np.isinf(scores).any():
            raise ConfigError("X must not hold infinite scores (use NaN for a missing stage)")
        return scores


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _score_spread(filled: FloatArray, present: NDArray[np.bool_]) -> FloatArray:
    """Return each stage's standard deviation over the pairs that have it (1 if it is 0)."""
    counts = np.maximum(present.sum(axis=0), 1)
    mean = filled.sum(axis=0) / counts
    spread = np.sqrt((present * (filled - mean) ** 2).sum(axis=0) / counts)
    return np.where(spread > 0, spread, 1.0)


def _weighted_mean(
    filled: FloatArray, present: NDArray[np.bool_], coef: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Return each row's mean of its present scores weighted by ``coef``, and its weight sum."""
    weights = present * coef
    available = weights.sum(axis=1)
    weighted = (weights * filled).sum(axis=1)
    mean = np.divide(weighted, available, out=np.zeros_like(weighted), where=available > 0)
    return mean, available


def fit_stage_weights(
    stage_scores: ArrayLike, labels: ArrayLike, stages: Sequence[str] = STAGES
) -> StageCombiner:
    """Fit stage weights and a threshold from stage scores (NaN = no data) and 0/1 labels."""
    return StageCombiner(stages=stages).fit(stage_scores, labels)


def save_stage_weights(combiner: StageCombiner, path: str | Path, **about: Any) -> None:
    """Write a fitted combiner as a JSON weights file; ``about`` adds where it comes from.

    Takes a fitted ``StageCombiner`` and a path (``str`` or ``Path``); returns ``None``.
    """
    atomic_write_json(path, {**combiner.to_dict(), **about})


def load_stage_weights(path: str | Path) -> StageCombiner:
    """Read a weights file written by ``save_stage_weights``; ``InputFormatError`` if bad."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"cannot read the weights file {path}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"the weights file {path} is not JSON: {exc}") from exc
    return StageCombiner.from_dict(data, source=f"the weights file {path}")


def with_weights_file(params: SimilarityParams) -> SimilarityParams:
    """Return ``params`` with the weights of ``WEBSIM_SIMILARITY_WEIGHTS_FILE`` if it is set.

    A missing or malformed file raises ``ConfigError`` naming the setting.
    """
    if not params.weights_file:
        return params
    try:
        combiner = load_stage_weights(params.weights_file)
    except InputFormatError as exc:
        raise ConfigError(f"WEBSIM_SIMILARITY_WEIGHTS_FILE: {exc}") from exc
    if list(combiner.stages) != list(STAGES):
        raise ConfigError(
            f"WEBSIM_SIMILARITY_WEIGHTS_FILE: the weights file {params.weights_file} must weigh "
            f"the stages {list(STAGES)}, got {list(combiner.stages)}"
        )
    return combiner.to_params(params)
