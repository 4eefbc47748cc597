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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from websim_crawler.config.archive import ArchiveParams
from websim_crawler.config.crawl import CrawlParams
from websim_crawler.config.distributed import DistributedParams
from websim_crawler.config.pool import PoolParams
from websim_crawler.config.reliability import ReliabilityParams
from websim_crawler.config.render import RenderParams
from websim_crawler.config.service import ServiceParams
from websim_crawler.core.clustering.params import ClusteringParams
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.params import (
    SettingsLike,
    params_from_settings,
    setting,
    validate,
)
from websim_crawler.core.reference_index.params import MatchParams
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.surfacing.params import SurfacingParams
from websim_crawler.errors import ConfigError, nearest_hint

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemFieldParams:
    """Which item field holds the HTML, and whether the pipelines keep it."""

    html_field: str = setting("html", "WEBSIM_HTML_FIELD", "item field that holds the page HTML")
    drop_html: bool = setting(
        False, "WEBSIM_DROP_HTML", "remove the HTML from items once analysed (smaller feeds)"
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class InputParams:
    """Bounds of what the ``websim`` commands read: page files, feed lines, fetched URLs.

    A page read by a command is bounded by ``WEBSIM_MAX_PAGE_BYTES``, as in a crawl.
    """

    max_files: int = setting(
        100_000,
        "WEBSIM_MAX_INPUT_FILES",
        "page files a websim command takes from the folders it is given; the rest are counted "
        "and left out",
        minimum=1,
    )
    max_record_bytes: int = setting(
        128_000_000,
        "WEBSIM_MAX_RECORD_BYTES",
        "longer JSON Lines records (feed lines) are skipped and counted by the websim commands",
        minimum=1,
    )
    fetch_timeout: float = setting(
        30.0,
        "WEBSIM_FETCH_TIMEOUT",
        "seconds a websim command waits for the whole response of a page given as an http(s) URL",
        minimum=0.1,
        maximum=600.0,
    )
    warc_reader: str = setting(
        "auto",
        "WEBSIM_WARC_READER",
        "library that reads WARC/WACZ inputs: fastwarc (fast), warcio (pure Python), auto "
        "(fastwarc when installed)",
        choices=("auto", "fastwarc", "warcio"),
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class WebsimConfig:
    """Every websim section's parameters; add a section by adding a field here."""

    items: ItemFieldParams = field(default_factory=ItemFieldParams)
    inputs: InputParams = field(default_factory=InputParams)
    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    crawl: CrawlParams = field(default_factory=CrawlParams)
    surfacing: SurfacingParams = field(default_factory=SurfacingParams)
    render: RenderParams = field(default_factory=RenderParams)
    reliability: ReliabilityParams = field(default_factory=ReliabilityParams)
    archive: ArchiveParams = field(default_factory=ArchiveParams)
    clustering: ClusteringParams = field(default_factory=ClusteringParams)
    similarity: SimilarityParams = field(default_factory=SimilarityParams)
    neardup: NeardupParams = field(default_factory=NeardupParams)
    matching: MatchParams = field(default_factory=MatchParams)
    distributed: DistributedParams = field(default_factory=DistributedParams)
    pool: PoolParams = field(default_factory=PoolParams)
    service: ServiceParams = field(default_factory=ServiceParams)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> WebsimConfig:
        """Read, validate and resolve every section; a bad value raises ``ConfigError`` naming it.

        Resolved: the stage weights of ``WEBSIM_SIMILARITY_WEIGHTS_FILE`` are loaded. An unknown
        ``WEBSIM_*`` name (a typo) raises ``ConfigError`` naming the nearest known one.
        """
        if isinstance(settings, Iterable):
            check_setting_names(settings)
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
    return tuple(declared_setting_fields())


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


def declared_setting_fields() -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    """Return each ``WEBSIM_*`` setting's declaring field and type hint, by setting name."""
    fields: dict[str, tuple[dataclasses.Field[Any], Any]] = {}
    for section_hint in typing.get_type_hints(WebsimConfig).values():
        hints = typing.get_type_hints(section_hint)
        for item in dataclasses.fields(section_hint):
            if "setting" in item.metadata:
                fields[item.metadata["setting"]] = (item, hints[item.name])
    return fields


def check_setting_names(names: Iterable[str]) -> None:
    """Raise ``ConfigError`` for a ``WEBSIM_*`` name no section declares (a typo, say).

    The message names the nearest known setting: ``WEBSIM_CLUSTER_OUTPUT`` -> did you mean
    ``WEBSIM_CLUSTERS_OUTPUT``? A misspelt setting would otherwise be ignored without a word.
    """
    known = setting_names()
    for name in names:
        if isinstance(name, str) and name.startswith("WEBSIM_") and name not in known:
            raise ConfigError(f"unknown setting {name}{nearest_hint(name, known)}")
