"""The add-on that enables each optional websim component once its output setting is given.

The collection stages (clustering, similarity, near-duplicates), the stats file and the WARC
writer do nothing without their output setting; listed in ``ITEM_PIPELINES``/``EXTENSIONS``/
``DOWNLOADER_MIDDLEWARES`` regardless, each would log a "Disabled ... is not set" warning on
every crawl. With
``ADDONS = {"websim_crawler.addon.OutputsAddon": 0}`` a component is enabled exactly when its
output setting is given.

A stage whose output setting is set but which is not in the crawl (the add-on left out, say by an
``ADDONS = {}`` below the settings that list it, as Scrapy's project template has) is refused at
start in one line naming it (``check_outputs_running``, called by the analysis pipeline, which
Scrapy builds once the add-ons have run): its output would silently never be written.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from websim_crawler.errors import ConfigError

ADDON = "websim_crawler.addon.OutputsAddon"

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


class OutputsAddon:
    """Enable each optional component whose output setting is given (and no other)."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Add the configured components (one listed by the project already stays as it is)."""
        for output, (component_setting, component, order) in OPTIONAL_COMPONENTS.items():
            components = settings[component_setting]
            if settings.get(output) and component not in components:
                components[component] = order


def outputs_not_running(settings: BaseSettings) -> list[str]:
    """Return the output settings that are set while their component is not in the crawl."""
    return [
        output
        for output, (component_setting, component, _order) in OPTIONAL_COMPONENTS.items()
        if settings.get(output) and not _listed(settings, component_setting, component)
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


def _listed(settings: BaseSettings, component_setting: str, component: str) -> bool:
    """Tell whether ``component`` (or a subclass) is enabled in ``component_setting``."""
    wanted = load_object(component)
    for listed in build_component_list(settings.getwithbase(component_setting)):
        try:
            loaded = load_object(listed) if isinstance(listed, str) else listed
        except (ImportError, NameError, ValueError):  # Scrapy reports it when it builds them
            continue
        if loaded is wanted or (isinstance(loaded, type) and issubclass(loaded, wanted)):
            return True
    return False
