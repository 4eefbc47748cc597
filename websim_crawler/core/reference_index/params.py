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
        3,
        "WEBSIM_MATCH_TOP",
        "best matching references reported per page",
        minimum=1,
        maximum=1000,
    )
    neighbours: int = setting(
        64,
        "WEBSIM_MATCH_NEIGHBOURS",
        "candidates per stage taken from the approximate nearest-neighbour search of the "
        "stage sketches",
        minimum=1,
        maximum=10_000,
    )
    candidates: int = setting(
        8,
        "WEBSIM_MATCH_CANDIDATES",
        "candidates (best by their sketches' combined score) compared with the exact four "
        "stages per page",
        minimum=1,
        maximum=10_000,
    )

    def __post_init__(self) -> None:
        validate(self)
