"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .analysis import PageAnalysisPipeline

__all__ = [
    "PageAnalysisPipeline",
]
