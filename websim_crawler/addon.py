"""The add-on that enables each optional websim component once its output setting is given.

The collection stages (clustering, similarity, near-duplicates), the stats file and the WARC
writer do nothing without their output setting; listed in ``ITEM_PIPELINES``/``EXTENSIONS``/
``DOWNLOADER_MIDDLEWARES`` regardless, each would log a "Disabled ... is not set" warning on
every crawl. With
``ADDONS = {"websim_crawler.addon.OutputsAddon": 0}`` a component is enabled exactly when its
output setting is given.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

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
