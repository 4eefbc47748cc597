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

from websim_crawler.core.analysis import AnalysisParams
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.params import SettingsLike, params_from_settings
from websim_crawler.core.similarity.params import SimilarityParams

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebsimConfig:
    """Every websim section's parameters; add a section by adding a field here."""

    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    similarity: SimilarityParams = field(default_factory=SimilarityParams)
    neardup: NeardupParams = field(default_factory=NeardupParams)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> WebsimConfig:
        """Read and validate every section; a bad value raises ``ConfigError`` naming it."""
        hints = typing.get_type_hints(cls)
        sections: dict[str, Any] = {
            section.name: params_from_settings(hints[section.name], settings)
            for section in dataclasses.fields(cls)
        }
        return cls(**sections)
