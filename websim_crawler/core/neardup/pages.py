"""From a crawl item to what the index needs: URL, link fingerprints, long-sentence hashes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from websim_crawler.core.neardup.content import content_texts, main_chunks
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.neardup.relations import url_hash
from websim_crawler.core.neardup.sentences import long_sentence_hashes
from websim_crawler.core.page import AnalysisParams, analyse_page
from websim_crawler.errors import InputFormatError, PageError


def chunks_only(params: AnalysisParams) -> AnalysisParams:
    """Return ``params`` without the within-page filters: the analysis runs for its chunks."""
    return dataclasses.replace(
        params, noise_filter=False, duplicate_filter=False, template_filter=False
    )


CHUNKS_ONLY = chunks_only(AnalysisParams())


class SavedSentences(TypedDict):
    """A ``PageSentences`` as JSON-safe data: its URL and its hashes as integers."""

    url: str
    links: list[int]
    sentences: list[int]


@dataclass(frozen=True)
class PageSentences:
    """One page for the index: URL, sorted link fingerprints, sorted long-sentence hashes."""

    url: str
    link_hashes: np.ndarray
    sentence_hashes: np.ndarray

    def to_dict(self) -> SavedSentences:
        """Return the page as JSON-safe data (hashes as integers)."""
        return SavedSentences(
            url=self.url,
            links=self.link_hashes.tolist(),
            sentences=self.sentence_hashes.tolist(),
        )


def page_from_dict(data: Mapping[str, Any]) -> PageSentences:
    """Rebuild a page saved with ``PageSentences.to_dict``; ``InputFormatError`` if malformed."""
    try:
        return PageSentences(
            str(data["url"]),
            np.asarray(data["links"], dtype=np.uint64).reshape(-1),
            np.asarray(data["sentences"], dtype=np.uint64).reshape(-1),
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise InputFormatError(f"not a saved near-duplicate page: {exc!r}") from exc


def sorted_hashes(values: set[int]) -> np.ndarray:
    """Return a set of 64-bit fingerprints as a sorted ``uint64`` array."""
    return np.sort(np.fromiter(values, dtype=np.uint64, count=len(values)))


def page_sentences(
    item: Mapping[str, Any],
    params: NeardupParams,
    analysis_params: AnalysisParams = CHUNKS_ONLY,
    *,
    html_field: str = "html",
) -> PageSentences:
    """Extract a crawl item's content-region sentences; ``PageError`` says why a page cannot be.

    Items that went through the analysis pipeline carry ``chunks`` and are not parsed again
    (with ``region="main"``, their main chunks are the region when the analysis marked any);
    others are analysed from their HTML (in ``html_field``) without the analysis' filters, so
    their region is the content blocks of every chunk.
    """
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        raise PageError("no_url", "the item has no url")
    chunks = item.get("chunks")
    raw_links = item.get("links")
    if isinstance(chunks, (list, tuple)) and chunks:
        main = main_chunks(chunks) if params.region == "main" else []
        chunks = main or chunks
    else:
        html = item.get(html_field)
        if not isinstance(html, (str, bytes)) or not html.strip():
            raise PageError("no_html", f"{url}: the item has neither chunks nor html")
        analysis = analyse_page(html, url, params=analysis_params)
        chunks = list(analysis.chunks)
        if not isinstance(raw_links, list):
            raw_links = list(analysis.links)
    texts = content_texts(chunks, params)
    hashes = long_sentence_hashes(texts, params.min_sentence_chars)
    links = {url_hash(link) for link in raw_links or () if isinstance(link, str) and link}
    return PageSentences(url, sorted_hashes(links), sorted_hashes(hashes))
