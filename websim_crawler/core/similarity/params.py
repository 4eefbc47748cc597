"""The similarity section's parameters: stage thresholds, layout, text, links and visual EMD."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError

LAYOUT_MEASURES = ("template", "tag", "indel", "pq_gram", "difflib", "joint")
STAGES = ("layout", "text", "links", "visual")
MODES = ("cascade", "full", "combined")  # how compare_pages runs the stages
# The named questions of ``questions.QUESTIONS``; ``auto``: the entry point's, ``custom``: the
# weights as set.
QUESTION_NAMES = ("same-site", "same-template", "looks-alike", "same-content", "brand")


class SimilarityRecord(TypedDict, total=False):
    """What the similarity stages (pairs, the reference index, matching) take of one page,
    prepared where the page is parsed (``core.stages``): its features as JSON-safe data
    (``portable.features_to_dict``), or why it has none."""

    url: str | None
    similarity_features: dict[str, Any]
    similarity_skipped: str  # no_url, bad_html ... (``collection.record_problem``)


@dataclass(frozen=True)
class SimilarityParams:
    """Constants of the four-stage page similarity and of the pairwise collection stage."""

    layout_measure: str = setting(
        "template",
        "WEBSIM_SIMILARITY_LAYOUT_MEASURE",
        "layout stage measure: template (Best-Match-Fit-First), tag, indel, pq_gram, difflib, "
        "joint (k*indel + (1-k)*style)",
        choices=LAYOUT_MEASURES,
    )
    layout_threshold: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_LAYOUT_THRESHOLD",
        "layout score below this: dissimilar",
        minimum=0.0,
        maximum=1.0,
    )
    text_threshold: float = setting(
        0.1,
        "WEBSIM_SIMILARITY_TEXT_THRESHOLD",
        "text cosine below this: dissimilar",
        minimum=0.0,
        maximum=1.0,
    )
    links_threshold: float = setting(
        0.005,
        "WEBSIM_SIMILARITY_LINKS_THRESHOLD",
        "link Jaccard below this: dissimilar",
        minimum=0.0,
        maximum=1.0,
    )
    visual_threshold: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_VISUAL_THRESHOLD",
        "visual similarity below this: dissimilar",
        minimum=0.0,
        maximum=1.0,
    )
    question: str = setting(
        "auto",
        "WEBSIM_SIMILARITY_QUESTION",
        "what 'similar' means: same-site, same-template, looks-alike, same-content, brand (each "
        "its fitted stage weights and threshold), custom (STAGE_WEIGHTS and COMBINED_THRESHOLD as "
        "set) or auto (compare: looks-alike; similar and the pipeline: same-template; custom "
        "with a weights file)",
        choices=("auto", *QUESTION_NAMES, "custom"),
    )
    stage_weights: tuple[float, ...] = setting(
        (0.0, 0.0, 1.0, 0.0),
        "WEBSIM_SIMILARITY_STAGE_WEIGHTS",
        "weights of layout,text,links,visual in the combined score (mean over stages with data)"
        " of the custom question",
    )
    combined_threshold: float = setting(
        0.005,
        "WEBSIM_SIMILARITY_COMBINED_THRESHOLD",
        "combined score at or above this: similar (mode combined) in the custom question",
        minimum=0.0,
        maximum=1.0,
    )
    weights_file: str | None = setting(
        None,
        "WEBSIM_SIMILARITY_WEIGHTS_FILE",
        "JSON file of fitted stage weights; replaces STAGE_WEIGHTS and COMBINED_THRESHOLD",
    )
    joint_k: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_JOINT_K",
        "k of the joint layout measure k*structural+(1-k)*style",
        minimum=0.0,
        maximum=1.0,
    )
    template_penalty: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_TEMPLATE_PENALTY",
        "largest weight loss of a template vertex whose attributes/children all differ",
        minimum=0.0,
        maximum=1.0,
    )
    template_seed_candidates: int = setting(
        4,
        "WEBSIM_SIMILARITY_TEMPLATE_SEEDS",
        "seed pairs per vertex: same-tag vertices of the other page nearest in document order",
        minimum=1,
        maximum=1000,
    )
    sublinear_tf: bool = setting(
        True, "WEBSIM_SIMILARITY_SUBLINEAR_TF", "use 1+log(count) as the keyword term frequency"
    )
    visual_width: int = setting(
        10,
        "WEBSIM_SIMILARITY_VISUAL_WIDTH",
        "screenshot width after Lanczos resizing",
        minimum=1,
        maximum=1000,
    )
    visual_height: int = setting(
        10,
        "WEBSIM_SIMILARITY_VISUAL_HEIGHT",
        "screenshot height after Lanczos resizing",
        minimum=1,
        maximum=1000,
    )
    degrading_factor: int = setting(
        32,
        "WEBSIM_SIMILARITY_DEGRADING_FACTOR",
        "ARGB degrading factor DF (32: 4,096 colours)",
        minimum=1,
        maximum=256,
    )
    signature_colours: int = setting(
        10,
        "WEBSIM_SIMILARITY_SIGNATURE_COLOURS",
        "top-N colours kept in a visual signature",
        minimum=1,
        maximum=10_000,
    )
    colour_weight: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_COLOUR_WEIGHT",
        "a in d = a*colour distance + (1-a)*centroid distance",
        minimum=0.0,
        maximum=1.0,
    )
    emd_alpha: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_EMD_ALPHA",
        "alpha in visual similarity 1 - EMD^alpha",
        minimum=1e-6,
        maximum=100.0,
    )
    blocking_min_pages: int = setting(
        200,
        "WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES",
        "collections with more pages use MinHash/LSH candidate blocking instead of all pairs",
        minimum=2,
    )
    lsh_threshold: float = setting(
        0.5,
        "WEBSIM_SIMILARITY_LSH_THRESHOLD",
        "MinHash/LSH Jaccard threshold of candidates",
        minimum=0.01,
        maximum=1.0,
    )
    lsh_max_bucket: int = setting(
        32,
        "WEBSIM_SIMILARITY_LSH_MAX_BUCKET",
        "pages of one MinHash/LSH bucket compared with each other; in a larger bucket each page "
        "is compared with the next this many only (counted as capped_buckets)",
        minimum=2,
    )
    lsh_permutations: int = setting(
        64,
        "WEBSIM_SIMILARITY_LSH_PERMUTATIONS",
        "MinHash permutations",
        minimum=8,
        maximum=1024,
    )
    max_pairs: int = setting(
        100_000,
        "WEBSIM_SIMILARITY_MAX_PAIRS",
        "most candidate pairs compared in a collection (spread evenly; the rest counted as "
        "capped_pairs, stat websim/similarity/capped_pairs)",
        minimum=1,
    )
    pairs_mode: str = setting(
        "combined",
        "WEBSIM_SIMILARITY_PAIRS_MODE",
        "how a pair is judged (compare, similar): combined (by the combined score), cascade "
        "or full (stage by stage)",
        choices=("cascade", "full", "combined"),
    )
    output: str | None = setting(
        None,
        "WEBSIM_SIMILARITY_OUTPUT",
        "JSON file the pairwise stage writes at the end of a crawl (unset: stage disabled)",
    )

    def __post_init__(self) -> None:
        validate(self)
        values = self.stage_weights
        if len(values) != len(STAGES) or any(v < 0 or v != v for v in values) or not any(values):
            raise ConfigError(
                "WEBSIM_SIMILARITY_STAGE_WEIGHTS must be four non-negative numbers, not all 0, "
                f"got {values!r}"
            )

    def threshold(self, stage: str) -> float:
        """Return a stage's threshold."""
        return float(getattr(self, f"{stage}_threshold"))
