"""Select a collection's pages for pairwise similarity: typed fields checked, each URL once.

Shared by ``websim similar`` and the ``SimilarityPipeline``: a record whose fields have the wrong
type (``html`` a number, ``url`` an object, ``links`` holding nulls, keywords counted ``NaN``) is
skipped and counted by reason, never a crash; a URL seen before is skipped as ``duplicate_url``,
so no pair compares a page with itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from websim_crawler.core.page import AnalysisParams
from websim_crawler.core.similarity.comparison import PageFeatures, features_from_item
from websim_crawler.core.similarity.params import SimilarityParams, SimilarityRecord
from websim_crawler.core.similarity.portable import features_from_dict


class PageCollector:
    """Collect the similarity features of a collection's pages, counting what is left out."""

    def __init__(
        self,
        params: SimilarityParams | None = None,
        analysis_params: AnalysisParams | None = None,
        *,
        html_field: str = "html",
    ) -> None:
        self.params = params or SimilarityParams()
        self.analysis_params = analysis_params
        self.html_field = html_field
        self.pages: list[PageFeatures] = []
        self.skipped: dict[str, int] = {}
        self._seen_urls: set[str] = set()

    def fields_of(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Return the record's fields the features are built from."""
        return {
            "url": record.get("url"),
            "html": record.get(self.html_field),
            "links": record.get("links"),
            "keyword_stems": record.get("keyword_stems"),
            "screenshot": record.get("screenshot"),
        }

    def skip(self, reason: str) -> None:
        """Count one record left out before it reached ``add``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, record: SimilarityRecord | Mapping[str, Any]) -> str | None:
        """Offer one record; return why it was skipped (counted), or ``None`` when kept.

        A record prepared in a worker (``SimilarityRecord``) carries its features ready or the
        reason it cannot have any; any other record has its features built here, from its HTML.
        """
        reason = record.get("similarity_skipped")
        ready = record.get("similarity_features")
        url = record.get("url")
        if not isinstance(reason, str) and ready is None:
            reason = record_problem(self.fields_of(record))
        if reason is None and url in self._seen_urls:
            reason = "duplicate_url"
        if reason is not None:
            self.skip(reason)
            return str(reason)
        self._seen_urls.add(str(url))
        if ready is not None:
            features = features_from_dict(ready)
        else:
            features = features_from_item(self.fields_of(record), self.params, self.analysis_params)
        self.pages.append(features)
        return None

    def finish(self) -> list[PageFeatures]:
        """Return the features of the pages kept, in the order they came."""
        return self.pages


def record_problem(fields: Mapping[str, Any]) -> str | None:
    """Return the skip reason of a record's url/html/links/keyword_stems/screenshot, or
    ``None`` (``bad_keywords`` for stems that are not counts)."""
    url = fields.get("url")
    if url is None or url == "":
        return "no_url"
    if not isinstance(url, str):
        return "bad_url"
    if not isinstance(fields.get("html"), (str, bytes, type(None))):
        return "bad_html"
    links = fields.get("links")
    if links is not None and not (
        isinstance(links, list) and all(isinstance(link, str) for link in links)
    ):
        return "bad_links"
    keywords = fields.get("keyword_stems")
    if keywords is not None and not (
        isinstance(keywords, Mapping) and all(_is_count(value) for value in keywords.values())
    ):
        return "bad_keywords"
    if not isinstance(fields.get("screenshot"), (str, bytes, type(None))):
        return "bad_screenshot"
    return None


def _is_count(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
