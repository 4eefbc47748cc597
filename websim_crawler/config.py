"""One frozen, validated view of every ``WEBSIM_*`` setting, built once per crawler.

Pure: works on any mapping with ``get`` (Scrapy ``Settings`` or a dict), so the CLI and the
pipelines read the same values. ``WebsimConfig.from_settings`` resolves everything a setting
points to (the similarity weights file is read here, once); components built by a crawler share
one config through ``websim_config(crawler)``.
"""

from __future__ import annotations

import dataclasses
import logging
import typing
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from websim_crawler.browser.params import RenderParams
from websim_crawler.core.clustering.params import ClusteringParams
from websim_crawler.core.crawling import CrawlParams
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.params import (
    SettingsLike,
    declared_settings,
    params_from_settings,
    setting,
    validate,
)
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.distributed.params import DistributedParams
from websim_crawler.reliability_params import ReliabilityParams

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
    reliability: ReliabilityParams = field(default_factory=ReliabilityParams)
    clustering: ClusteringParams = field(default_factory=ClusteringParams)
    similarity: SimilarityParams = field(default_factory=SimilarityParams)
    neardup: NeardupParams = field(default_factory=NeardupParams)
    distributed: DistributedParams = field(default_factory=DistributedParams)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> WebsimConfig:
        """Read, validate and resolve every section; a bad value raises ``ConfigError`` naming it.

        Resolved: the stage weights of ``WEBSIM_SIMILARITY_WEIGHTS_FILE`` are loaded.
        """
        hints = typing.get_type_hints(cls)
        sections: dict[str, Any] = {
            section.name: params_from_settings(hints[section.name], settings)
            for section in dataclasses.fields(cls)
        }
        if sections["similarity"].weights_file:
            # Imported here: the combiner needs SciPy, which reading the settings must not load.
            from websim_crawler.core.similarity.combine import with_weights_file

            sections["similarity"] = with_weights_file(sections["similarity"])
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


class HasSettings(Protocol):
    """A Scrapy ``Crawler``, or anything with its ``settings``."""

    settings: Any


_CACHE_ATTRIBUTE = "_websim_config"


def setting_names() -> tuple[str, ...]:
    """Return the name of every ``WEBSIM_*`` setting ``WebsimConfig`` reads."""
    hints = typing.get_type_hints(WebsimConfig)
    return tuple(
        name
        for section in dataclasses.fields(WebsimConfig)
        for name, _default, _help in declared_settings(hints[section.name])
    )


def websim_config(crawler: HasSettings) -> WebsimConfig:
    """Return the crawler's ``WebsimConfig``, built once and shared by all its components.

    The config is kept on the crawler with the ``WEBSIM_*`` values it was read from; it is
    read again only if they changed since (an add-on may set some after the spider is built).
    The settings that differ from their defaults are logged once, at INFO.
    """
    settings = crawler.settings
    values = tuple(repr(settings.get(name)) for name in setting_names())
    cached = getattr(crawler, _CACHE_ATTRIBUTE, None)
    if cached is not None and cached[0] == values:
        return cast(WebsimConfig, cached[1])
    config = WebsimConfig.from_settings(settings)
    setattr(crawler, _CACHE_ATTRIBUTE, (values, config))
    logger.info("websim settings changed from their defaults: %s", config.changed_settings())
    return config
