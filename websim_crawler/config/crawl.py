"""Settings of the ``deepweb`` and ``site`` spiders (``WEBSIM_MAX_RESULT_PAGES``, ...).

In ``config/``: only the spiders read them; the crawl logic of ``core.crawling`` takes none.
"""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class CrawlParams:
    """Parameters of the ``deepweb`` and ``site`` spiders (spider arguments override them)."""

    max_result_pages: int = setting(
        5,
        "WEBSIM_MAX_RESULT_PAGES",
        "result pages fetched per query by deepweb (-a max_pages overrides)",
        minimum=1,
        maximum=10_000,
    )
    site_max_pages: int = setting(
        500,
        "WEBSIM_SITE_MAX_PAGES",
        "pages fetched by the site spider (-a max_pages overrides)",
        minimum=1,
        maximum=10_000_000,
    )

    def __post_init__(self) -> None:
        validate(self)
