"""The reference index's parameters: what a match reports and how many candidates it checks."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class MatchParams:
    """Constants of matching a page against a reference index (``websim match``, the pipeline)."""

    index: str | None = setting(
        None,
        "WEBSIM_MATCH_INDEX",
        "reference index file (websim index) the match pipeline checks every crawled page "
        "against (unset: stage disabled)",
    )
    top: int = setting(
        1,
        "WEBSIM_MATCH_TOP",
        "best matching references reported per page",
        minimum=1,
        maximum=1000,
    )
    candidates: int = setting(
        8,
        "WEBSIM_MATCH_CANDIDATES",
        "candidates (best by their ranking score: sketch cosines and link Jaccard) compared "
        "with the exact four stages per page",
        minimum=1,
        maximum=10_000,
    )

    margin: float = setting(
        0.15,
        "WEBSIM_MATCH_MARGIN",
        "beyond the best candidate and the --top ones, only candidates whose ranking score is "
        "within this of the best are compared by the exact stages",
        minimum=0.0,
        maximum=1.0,
    )

    def __post_init__(self) -> None:
        validate(self)
