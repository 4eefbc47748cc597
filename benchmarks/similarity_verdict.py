"""The default verdict's calibration: scored pairs, candidate rules, site-held-out folds.

Used by ``benchmarks/similarity.py`` (big9, the second sets) and
``benchmarks/similarity_captures.py`` (two renders of the same pages). A rule is fitted on
training pairs' stage scores and applied to held-out pairs; ``calibrate`` prints its
leave-one-site-out precision/recall/F1 on big9 (pooled and by part: across years, within a
year), its F1 on held-out sets when fitted on all big9 pairs, and the default verdict on each set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from websim_crawler.core.similarity import PageFeatures, compare_pages
from websim_crawler.core.similarity.combine import StageCombiner
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.core.similarity.text import InverseDocumentFrequency


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Return the ROC AUC (Mann-Whitney U with average ranks for ties)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    start = 0
    while start < len(scores):
        end = start
        while end + 1 < len(scores) and sorted_scores[end + 1] == sorted_scores[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def best_f1(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Return the best F1 over all thresholds and that threshold."""
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_labels = scores[order], labels[order]
    true_positives = np.cumsum(sorted_labels)
    predicted = np.arange(1, len(scores) + 1)
    f1 = 2 * true_positives / (predicted + labels.sum())
    # Only cut between different scores.
    valid = np.append(sorted_scores[1:] != sorted_scores[:-1], True)
    best = int(np.argmax(np.where(valid, f1, -1)))
    return float(f1[best]), float(sorted_scores[best])


def f1_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """Return the F1 of calling the pairs scoring at least ``threshold`` similar."""
    predicted = scores >= threshold
    true_positives = int((predicted & labels).sum())
    return 2 * true_positives / (int(predicted.sum()) + int(labels.sum()))


SCORED_STAGES = ("layout", "text", "links")


@dataclass
class ScoredPairs:
    """Stage scores (NaN: no data) and labels of page pairs, with the two pages' sites."""

    name: str
    sites: list[tuple[str, str]]
    labels: np.ndarray
    scores: np.ndarray  # (pairs, len(STAGES)): every stage in full mode
    default_verdicts: np.ndarray  # compare_pages with every default (mode and parameters)
    parts: np.ndarray  # the part of the set each pair is from (its own name when one part)


def joined(name: str, parts: Sequence[ScoredPairs]) -> ScoredPairs:
    """Return the pairs of several sets as one, each pair's part named after its set."""
    return ScoredPairs(
        name,
        [pair for part in parts for pair in part.sites],
        np.concatenate([part.labels for part in parts]),
        np.concatenate([part.scores for part in parts]),
        np.concatenate([part.default_verdicts for part in parts]),
        np.concatenate([np.full(len(part.labels), part.name) for part in parts]),
    )


def score_pairs(
    name: str,
    pairs: Sequence[tuple[PageFeatures, PageFeatures, str, str, bool]],
    idf: InverseDocumentFrequency | None,
) -> ScoredPairs:
    """Score every stage of each pair (full mode) and record the default verdict (``idf``
    None: as ``websim compare A B``, which has no collection)."""
    scores, verdicts = [], []
    for first, second, _site_1, _site_2, _label in pairs:
        report = compare_pages(first, second, "full", SimilarityParams(), idf)
        scores.append([np.nan if (v := report.stage(s).score) is None else v for s in STAGES])
        verdicts.append(compare_pages(first, second, idf=idf).verdict == "similar")
    return ScoredPairs(
        name,
        [(site_1, site_2) for _f, _s, site_1, site_2, _l in pairs],
        np.array([label for *_rest, label in pairs], dtype=bool),
        np.array(scores, dtype=float),
        np.array(verdicts, dtype=bool),
        np.full(len(pairs), name),
    )


def precision_recall_f1(predicted: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    """Return precision, recall and F1 of boolean predictions."""
    true_positives = int((predicted & labels).sum())
    precision = true_positives / max(int(predicted.sum()), 1)
    recall = true_positives / max(int(labels.sum()), 1)
    return precision, recall, 2 * true_positives / max(int(predicted.sum() + labels.sum()), 1)


@dataclass
class Rule:
    """A candidate default verdict: how it is fitted on training pairs and applied."""

    name: str
    stages: tuple[str, ...]
    threshold: str  # "logistic" (probability 0.5) or "f1" (the training F1-best cut)

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> tuple[StageCombiner, float]:
        columns = [STAGES.index(stage) for stage in self.stages]
        combiner = StageCombiner(stages=self.stages).fit(scores[:, columns], labels)
        if self.threshold == "logistic":
            return combiner, combiner.threshold_
        combined = combiner.combined_score(scores[:, columns])
        return combiner, best_f1(combined, labels)[1]

    def predict(self, fitted: tuple[StageCombiner, float], scores: np.ndarray) -> np.ndarray:
        columns = [STAGES.index(stage) for stage in self.stages]
        combiner, threshold = fitted
        present = ~np.isnan(scores[:, columns]) & (combiner.coef_ > 0)
        # A pair with no weighed stage is undetermined: not called similar (as compare_pages).
        return (combiner.combined_score(scores[:, columns]) >= threshold) & present.any(axis=1)

    def describe(self, fitted: tuple[StageCombiner, float]) -> str:
        """Return the fitted weights (of ``SCORED_STAGES``) and threshold as two table cells."""
        weights = dict(zip(self.stages, fitted[0].weights_, strict=True))
        shown = ", ".join(f"{weights.get(stage, 0.0):.3f}" for stage in SCORED_STAGES)
        return f"{shown} | {fitted[1]:.4f}"


RULES = (
    Rule("weighted mean of layout, text, links; logistic threshold", SCORED_STAGES, "logistic"),
    Rule("weighted mean of layout, text, links; training-F1 threshold", SCORED_STAGES, "f1"),
    Rule("weighted mean of layout, links; training-F1 threshold", ("layout", "links"), "f1"),
    Rule("links alone; training-F1 threshold", ("links",), "f1"),
)


def leave_one_site_out(rule: Rule, scored: ScoredPairs) -> tuple[np.ndarray, list[np.ndarray]]:
    """Return the rule's held-out prediction of every pair (fitted without the pair's held-out
    site; a pair of two sites is tested in both folds and counted in each) and each fold's
    test mask."""
    sites = sorted({site for pair in scored.sites for site in pair})
    predicted = np.zeros((len(sites), len(scored.labels)), dtype=bool)
    tests = []
    for fold, site in enumerate(sites):
        test = np.array([site in pair for pair in scored.sites])
        fitted = rule.fit(scored.scores[~test], scored.labels[~test])
        predicted[fold, test] = rule.predict(fitted, scored.scores[test])
        tests.append(test)
    return predicted, tests


def calibrate(
    big9: ScoredPairs,
    held_out: Sequence[ScoredPairs],
    default_sets: Sequence[ScoredPairs],
    rules: Sequence[Rule] = RULES,
) -> None:
    """Leave-one-site-out cross-validation of each candidate rule on big9 (pooled and by part),
    then each rule fitted on all big9 pairs and scored on the held-out sets; and the default
    verdict on every set.
    """
    sites = sorted({site for pair in big9.sites for site in pair})
    parts = ["pooled", *dict.fromkeys(big9.parts)]
    print(
        f"\n## Calibration: leave-one-site-out on {big9.name} ({len(sites)} folds; a fold tests "
        "the pairs with a page of the held-out site and fits on the pairs without one; pooled "
        "over the folds, and by part of the set)\n"
    )
    print("| rule | pairs | P | R | F1 | mean fold F1 | worst fold F1 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rule in rules:
        predicted, tests = leave_one_site_out(rule, big9)
        for part in parts:
            in_part = (
                np.ones(len(big9.labels), dtype=bool) if part == "pooled" else (big9.parts == part)
            )
            masks = [test & in_part for test in tests]
            pooled = precision_recall_f1(
                np.concatenate([row[mask] for row, mask in zip(predicted, masks, strict=True)]),
                np.concatenate([big9.labels[mask] for mask in masks]),
            )
            fold_f1 = [
                precision_recall_f1(row[mask], big9.labels[mask])[2]
                for row, mask in zip(predicted, masks, strict=True)
            ]
            print(
                f"| {rule.name} | {part} | {pooled[0]:.3f} | {pooled[1]:.3f} | {pooled[2]:.3f} "
                f"| {np.mean(fold_f1):.3f} | {min(fold_f1):.3f} |"
            )
    print(f"\n## Each rule fitted on all {big9.name} pairs, scored on the held-out sets\n")
    print(
        "| rule | weights ("
        + ", ".join(SCORED_STAGES)
        + ") | threshold | "
        + " | ".join(f"{s.name} F1" for s in held_out)
        + " |"
    )
    print("|---|---|---:|" + "---:|" * len(held_out))
    for rule in rules:
        fitted = rule.fit(big9.scores, big9.labels)
        f1s = " | ".join(
            f"{precision_recall_f1(rule.predict(fitted, s.scores), s.labels)[2]:.3f}"
            for s in held_out
        )
        print(f"| {rule.name} | {rule.describe(fitted)} | {f1s} |")
    default_verdicts(default_sets)


def default_verdicts(sets: Sequence[ScoredPairs]) -> None:
    """Print precision, recall and F1 of the default verdict on each set."""
    params = SimilarityParams()
    print(
        "\n## The default verdict (compare_pages with every default: mode "
        f"{params.pairs_mode}, weights {params.stage_weights}, combined threshold "
        f"{params.combined_threshold})\n"
    )
    print("| set | same-site pairs | other-site pairs | precision | recall | F1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for scored in sets:
        precision, recall, f1 = precision_recall_f1(scored.default_verdicts, scored.labels)
        print(
            f"| {scored.name} | {int(scored.labels.sum())} | {int((~scored.labels).sum())} | "
            f"{precision:.3f} | {recall:.3f} | {f1:.3f} |"
        )


def stage_separation(scored: ScoredPairs) -> None:
    """Print each stage's AUC and best F1 on a set (a stage without data scores 0)."""
    print(f"\n## Stage scores on {scored.name} (full mode; best F1 over all thresholds)\n")
    print("| stage | pairs with data | AUC | best F1 | at threshold |")
    print("|---|---:|---:|---:|---:|")
    for column, stage in enumerate(STAGES):
        values = scored.scores[:, column]
        scores = np.nan_to_num(values, nan=0.0)
        f1, threshold = best_f1(scores, scored.labels)
        print(
            f"| {stage} | {int((~np.isnan(values)).sum())} | {auc(scores, scored.labels):.3f} "
            f"| {f1:.3f} | {threshold:.4f} |"
        )
