"""A test pipeline: on the first item, put a folder where each stage's output file goes.

The stages check their output paths at start-up; a folder made afterwards makes their write at
the end of the crawl fail, as a disk that fills up or a folder removed during the crawl would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from scrapy.crawler import Crawler

STAGE_OUTPUTS = ("WEBSIM_CLUSTERS_OUTPUT", "WEBSIM_SIMILARITY_OUTPUT", "WEBSIM_NEARDUP_OUTPUT")


class OutputBlocker:
    """Make a folder at every stage output path when the first item passes."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Read the stages' output settings."""
        return cls([crawler.settings[name] for name in STAGE_OUTPUTS if crawler.settings[name]])

    def process_item(self, item: Any) -> Any:
        """Block the outputs (once); the item passes unchanged."""
        for output in self.outputs:
            Path(output).mkdir(parents=True, exist_ok=True)
        return item
