"""One frozen, validated view of every ``WEBSIM_*`` setting, built once per crawler.

Pure: works on any mapping with ``get`` (Scrapy ``Settings`` or a dict), so the CLI and the
pipelines read the same values. ``WebsimConfig.from_settings`` resolves everything a setting
points to (the similarity weights file is read here, once); components built by a crawler share
one config through ``websim_config(crawler)``.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from websim_crawler.browser.params import RenderParams
from websim_crawler.core.clustering.params import ClusteringParams
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.page import CHUNK_DETAILS, AnalysisParams
from websim_crawler.core.params import (
    SettingsLike,
    params_from_settings,
    setting,
    validate,
)
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.crawl_params import CrawlParams
from websim_crawler.distributed_params import DistributedParams
from websim_crawler.errors import ConfigError
from websim_crawler.pool import PoolParams
from websim_crawler.reliability_params import ReliabilityParams

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemFieldParams:
    """Which item fields the pipelines read and how much they write back."""

    html_field: str = setting("html", "WEBSIM_HTML_FIELD", "item field that holds the page HTML")
    chunk_detail: str = setting(
        "main",
        "WEBSIM_CHUNK_DETAIL",
        "chunks written to items: full (every chunk), main (main-content chunks) or none",
        choices=CHUNK_DETAILS,
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

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class WebsimConfig:
    """Every websim section's parameters; add a section by adding a field here."""

    items: ItemFieldParams = field(default_factory=ItemFieldParams)
    inputs: InputParams = field(default_factory=InputParams)
    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    crawl: CrawlParams = field(default_factory=CrawlParams)
    render: RenderParams = field(default_factory=RenderParams)
    reliability: ReliabilityParams = field(default_factory=ReliabilityParams)
    clustering: ClusteringParams = field(default_factory=ClusteringParams)
    similarity: SimilarityParams = field(default_factory=SimilarityParams)
    neardup: NeardupParams = field(default_factory=NeardupParams)
    distributed: DistributedParams = field(default_factory=DistributedParams)
    pool: PoolParams = field(default_factory=PoolParams)

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
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"unknown setting {name}{hint}")


@dataclass(frozen=True)
class CommandFlag:
    """A ``websim`` command-line flag that is an alias of one setting.

    Its default, type and choices are the setting's; ``extra_choices`` are values the command
    handles itself (``neardup --method dask``) and that never reach the setting.
    """

    commands: tuple[str, ...]
    flags: tuple[str, ...]
    setting: str
    help: str
    extra_choices: tuple[str, ...] = ()


# Every flag of the ``websim`` commands that sets a setting, declared once. Precedence: a flag
# given on the command line beats the same setting given with ``-s``, which beats the default.
COMMAND_FLAGS: tuple[CommandFlag, ...] = (
    CommandFlag(("extract",), ("--chunks",), "WEBSIM_CHUNK_DETAIL", "which chunks to write"),
    CommandFlag(
        ("extract",), ("--language",), "WEBSIM_LANGUAGE", "ISO 639-1 language of the pages"
    ),
    CommandFlag(
        ("extract",),
        ("--workers",),
        "WEBSIM_ANALYSIS_WORKERS",
        "worker processes that analyse the pages (0: this one)",
    ),
    CommandFlag(("cluster",), ("-o", "--output"), "WEBSIM_CLUSTERS_OUTPUT", "clusters JSON file"),
    CommandFlag(("cluster",), ("--html",), "WEBSIM_CLUSTERS_HTML", "also write an HTML report"),
    CommandFlag(
        ("cluster", "demo"),
        ("--n-clusters",),
        "WEBSIM_CLUSTERS_N",
        "number of clusters, or 'auto' (chosen by a validity index)",
    ),
    CommandFlag(
        ("cluster",),
        ("--kind",),
        "WEBSIM_CLUSTERS_KIND",
        "pages to cluster: record (record pages, site pages and pages without a kind), "
        "results, all",
    ),
    CommandFlag(
        ("cluster",),
        ("--max-clusters",),
        "WEBSIM_CLUSTERS_MAX_K",
        "auto tries 2..min(this, pages / 5) clusters, coarse to fine",
    ),
    CommandFlag(
        ("cluster",), ("--index",), "WEBSIM_CLUSTERS_AUTO_INDEX", "validity index auto picks by"
    ),
    CommandFlag(
        ("cluster",),
        ("-m", "--fuzziness"),
        "WEBSIM_CLUSTERS_FUZZINESS",
        "fuzzy c-means exponent m > 1",
    ),
    CommandFlag(("cluster",), ("--metric",), "WEBSIM_CLUSTERS_METRIC", "distance of the rows"),
    CommandFlag(
        ("cluster",),
        ("--svd-components",),
        "WEBSIM_CLUSTERS_SVD_COMPONENTS",
        "LSA dimensions before clustering, 0 for none",
    ),
    CommandFlag(("cluster",), ("--n-init",), "WEBSIM_CLUSTERS_N_INIT", "runs per fit"),
    CommandFlag(("cluster",), ("--seed",), "WEBSIM_CLUSTERS_SEED", "random seed"),
    CommandFlag(
        ("cluster",),
        ("--engine",),
        "WEBSIM_CLUSTERS_ENGINE",
        "memory: fuzzy c-means in this process; dask: its iterations over row chunks on a "
        "Dask cluster, same clusters",
    ),
    CommandFlag(
        ("cluster",),
        ("--scheduler",),
        "WEBSIM_CLUSTERS_SCHEDULER",
        "with --engine dask: a running scheduler (tcp://host:8786); unset: a local cluster "
        "started for this run",
    ),
    CommandFlag(("similar",), ("-o", "--output"), "WEBSIM_SIMILARITY_OUTPUT", "pairs JSON file"),
    CommandFlag(
        ("compare", "similar"),
        ("--mode",),
        "WEBSIM_SIMILARITY_PAIRS_MODE",
        "compare as a cascade, in full, or by the combined score alone",
    ),
    CommandFlag(
        ("compare", "similar"),
        ("--weights",),
        "WEBSIM_SIMILARITY_WEIGHTS_FILE",
        "JSON stage weights fitted with StageCombiner",
    ),
    CommandFlag(
        ("compare",),
        ("--layout-measure",),
        "WEBSIM_SIMILARITY_LAYOUT_MEASURE",
        "layout stage measure",
    ),
    CommandFlag(
        ("similar",),
        ("--blocking-min-pages",),
        "WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES",
        "MinHash/LSH blocking above this many pages",
    ),
    CommandFlag(("neardup",), ("-o", "--output"), "WEBSIM_NEARDUP_OUTPUT", "report JSON file"),
    CommandFlag(
        ("neardup",),
        ("--method",),
        "WEBSIM_NEARDUP_METHOD",
        "exact sentence index, MinHash/LSH candidates, or the Dask bag index",
        extra_choices=("dask",),
    ),
    CommandFlag(
        ("neardup",),
        ("-L", "--min-sentence-chars"),
        "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS",
        "L: shortest sentence compared, in characters",
    ),
    CommandFlag(
        ("neardup",),
        ("-F", "--max-frequency"),
        "WEBSIM_NEARDUP_MAX_SENTENCE_FREQUENCY",
        "F: sentences on more pages are ignored as boilerplate",
    ),
    CommandFlag(
        ("neardup",),
        ("--min-shared",),
        "WEBSIM_NEARDUP_MIN_SHARED_SENTENCES",
        "fewest shared sentences of a reported pair",
    ),
    CommandFlag(
        ("neardup",),
        ("--lsh-threshold",),
        "WEBSIM_NEARDUP_LSH_THRESHOLD",
        "minhash: Jaccard similarity the LSH is tuned to",
    ),
    CommandFlag(
        ("neardup",), ("--spill-dir",), "WEBSIM_NEARDUP_SPILL_DIR", "folder for temporary files"
    ),
    CommandFlag(
        ("seed",),
        ("--redis",),
        "WEBSIM_REDIS_URL",
        "Redis URL, e.g. redis://host:6379/0 (also read from $WEBSIM_REDIS_URL)",
    ),
    CommandFlag(
        ("seed",), ("--prefix",), "WEBSIM_REDIS_PREFIX", "key prefix, as the workers' setting"
    ),
)
