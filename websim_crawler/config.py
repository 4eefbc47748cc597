"""One frozen, validated view of every ``WEBSIM_*`` setting, built once per crawler.

Pure: works on any mapping with ``get`` (Scrapy ``Settings`` or a dict), so the CLI and the
pipelines read the same values.
"""

from __future__ import annotations

import dataclasses
import logging
import typing
from dataclasses import dataclass, field
from typing import Any

from websim_crawler.browser.params import RenderParams
from websim_crawler.core.clustering.params import ClusteringParams
from websim_crawler.core.crawling import CrawlParams
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.params import SettingsLike, params_from_settings, setting, validate
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.distributed.params import DistributedParams

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemFieldParams:
    """Which item fields the pipelines read and how much they write back."""

    html_field: str = setting("html", "WEBSIM_HTML_FIELD", "item field that holds the page HTML")
    chunk_detail: str = setting(
        "full",
        "WEBSIM_CHUNK_DETAIL",
        "chunks written to items: full (every chunk), main (main-content chunks) or none",
        choices=("full", "main", "none"),
    )
    drop_html: bool = setting(
        False, "WEBSIM_DROP_HTML", "remove the HTML from items once analysed (smaller feeds)"
    )
    feed_fsync: bool = setting(
        False,
        "WEBSIM_FEED_FSYNC",
        "force each exported item to the disk (fsync), not only to the operating system: feeds "
        "then survive a machine crash, not only a killed crawl",
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class WebsimConfig:
    """Every websim section's parameters; add a section by adding a field here."""

    items: ItemFieldParams = field(default_factory=ItemFieldParams)
    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    crawl: CrawlParams = field(default_factory=CrawlParams)
    render: RenderParams = field(default_factory=RenderParams)
    clustering: ClusteringParams = field(default_factory=ClusteringParams)
    similarity: SimilarityParams = field(default_factory=SimilarityParams)
    neardup: NeardupParams = field(default_factory=NeardupParams)
    distributed: DistributedParams = field(default_factory=DistributedParams)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> WebsimConfig:
        """Read and validate every section; a bad value raises ``ConfigError`` naming it."""
        hints = typing.get_type_hints(cls)
        sections: dict[str, Any] = {
            section.name: params_from_settings(hints[section.name], settings)
            for section in dataclasses.fields(cls)
        }
        return cls(**sections)

    def changed_settings(self) -> dict[str, Any]:
        """Return the settings whose effective value differs from the default (for the log)."""
        changed: dict[str, Any] = {}
        for section in dataclasses.fields(self):
            params = getattr(self, section.name)
            for item in dataclasses.fields(params):
                value = getattr(params, item.name)
                if "setting" in item.metadata and value != item.default:
                    changed[item.metadata["setting"]] = value
        return changed
