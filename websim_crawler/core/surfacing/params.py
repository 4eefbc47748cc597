"""The constants of surfacing (queries chosen by the crawl), each bound to a
``WEBSIM_SURFACING_*`` setting."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class SurfacingParams:
    """Budget, stopping rules and bounds of a crawl that chooses its own queries."""

    max_queries: int = setting(
        200,
        "WEBSIM_SURFACING_MAX_QUERIES",
        "queries (and input probes) a surfacing crawl submits at most (-a max_queries overrides)",
        minimum=1,
        maximum=100_000,
    )
    concurrent_queries: int = setting(
        2,
        "WEBSIM_SURFACING_CONCURRENT_QUERIES",
        "queries being fetched at once: fewer lets each choice learn from more answers",
        minimum=1,
        maximum=64,
    )
    covered_share: float = setting(
        0.99,
        "WEBSIM_SURFACING_COVERED_SHARE",
        "stop when the records reached are this share of the estimated database size",
        minimum=0.5,
        maximum=1.0,
    )
    stall_queries: int = setting(
        15,
        "WEBSIM_SURFACING_STALL_QUERIES",
        "stop when this many queries in a row brought almost nothing new (see the next)",
        minimum=2,
        maximum=10_000,
    )
    stall_share: float = setting(
        0.005,
        "WEBSIM_SURFACING_STALL_SHARE",
        "'almost nothing': new records below this share of those reached, over the stall window",
        minimum=0.0,
        maximum=0.5,
    )
    max_unanswered_probes: int = setting(
        10,
        "WEBSIM_SURFACING_MAX_UNANSWERED",
        "stop when the first this many queries all fail or answer nothing",
        minimum=1,
        maximum=1000,
    )
    max_terms: int = setting(
        100_000,
        "WEBSIM_SURFACING_MAX_TERMS",
        "candidate query terms kept at most (further new terms are counted and ignored)",
        minimum=100,
        maximum=10_000_000,
    )
    snippet_chars: int = setting(
        1000,
        "WEBSIM_SURFACING_SNIPPET_CHARS",
        "characters of each record's result-page text (title, snippet) read for its terms",
        minimum=50,
        maximum=100_000,
    )
    entrance_pages: int = setting(
        6,
        "WEBSIM_SURFACING_ENTRANCE_PAGES",
        "pages one or two links from the start page fetched to find a search form",
        minimum=0,
        maximum=100,
    )
    max_input_values: int = setting(
        40,
        "WEBSIM_SURFACING_MAX_INPUT_VALUES",
        "values of one select or radio group probed at most (sampled evenly when it has more)",
        minimum=2,
        maximum=10_000,
    )

    def __post_init__(self) -> None:
        validate(self)
