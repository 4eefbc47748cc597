"""Which websim components a crawl runs: their tables, and the checks that read them.

``addon.WebsimAddon`` adds the components named here; the analysis pipeline, the spiders and
``scrapy crawl`` ask, from the settings alone, whether one is (or will be) in the crawl.
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from websim_crawler.errors import ConfigError

ADDON = "websim_crawler.addon.WebsimAddon"
PAGE_ANALYSIS = "websim_crawler.pipelines.PageAnalysisPipeline"

# output setting -> (component setting, component, order). The collection stages come after
# PageAnalysisPipeline (300), whose fields they read.
OPTIONAL_COMPONENTS = {
    "WEBSIM_CLUSTERS_OUTPUT": (
        "ITEM_PIPELINES",
        "websim_crawler.pipelines.clustering.ClusteringPipeline",
        800,
    ),
    "WEBSIM_SIMILARITY_OUTPUT": (
        "ITEM_PIPELINES",
        "websim_crawler.pipelines.similarity.SimilarityPipeline",
        810,
    ),
    # Matched as each page comes (not at the end), after the analysis whose keywords it reuses.
    "WEBSIM_MATCH_INDEX": (
        "ITEM_PIPELINES",
        "websim_crawler.pipelines.matching.MatchPipeline",
        310,
    ),
    "WEBSIM_NEARDUP_OUTPUT": (
        "ITEM_PIPELINES",
        "websim_crawler.pipelines.neardup.NearDuplicatePipeline",
        820,
    ),
    "WEBSIM_STATS_OUTPUT": ("EXTENSIONS", "websim_crawler.extensions.StatsFile", 1000),
    # Before redirects (600) and decompression (590), after the HTTP cache (900): see its module.
    "WEBSIM_WARC_OUTPUT": (
        "DOWNLOADER_MIDDLEWARES",
        "websim_crawler.archive.middleware.WarcWriterMiddleware",
        890,
    ),
}


def addon_enabled(settings: BaseSettings) -> bool:
    """Tell whether ``WebsimAddon`` is among the crawl's add-ons."""
    return listed(settings, "ADDONS", ADDON)


def outputs_not_running(settings: BaseSettings) -> list[str]:
    """Return the output settings that are set while their component will not be in the crawl
    (neither listed nor to be added by the add-on: the answer holds before and after it ran)."""
    if addon_enabled(settings):
        return []
    return [
        output
        for output, (component_setting, component, _order) in OPTIONAL_COMPONENTS.items()
        if settings.get(output) and not listed(settings, component_setting, component)
    ]


def check_outputs_running(settings: BaseSettings) -> None:
    """Raise ``ConfigError`` (one line, exit 1) for an output set whose stage is not running."""
    missing = outputs_not_running(settings)
    if missing:
        components = ", ".join(
            OPTIONAL_COMPONENTS[output][1].rsplit(".", 1)[1] for output in missing
        )
        raise ConfigError(
            f"{', '.join(missing)} set but {components} not running: add "
            f'"{ADDON}": 0 to ADDONS (an ADDONS = {{}} after it replaces it) or list the '
            "component yourself"
        )


def listed(settings: BaseSettings, component_setting: str, component: str) -> bool:
    """Tell whether ``component`` (or a subclass) is enabled in ``component_setting``."""
    wanted = load_object(component)
    listed_components: Any = (
        settings[component_setting]
        if component_setting == "ADDONS"
        else settings.getwithbase(component_setting)
    )
    for listed in build_component_list(listed_components):
        try:
            loaded = load_object(listed) if isinstance(listed, str) else listed
        except (ImportError, NameError, ValueError):  # Scrapy reports it when it builds them
            continue
        if loaded is wanted or (isinstance(loaded, type) and issubclass(loaded, wanted)):
            return True
    return False
