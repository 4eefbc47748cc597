"""Bounded per-site memory of chunk fingerprints, to spot site-template chunks across pages."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Protocol

from websim_crawler.errors import InputFormatError


def chunk_fingerprint(text: str) -> str:
    """Return a short stable fingerprint of a chunk's case- and space-folded text."""
    folded = " ".join(text.lower().split())
    return hashlib.blake2b(folded.encode("utf-8"), digest_size=8).hexdigest()


def template_key(site: str, page_kind: str | None) -> str:
    """Return the memory key of a site's pages of one kind (``results``, ``record``, ``page``).

    Each kind learns its own template: a short record shown in full on the result lists that
    link to it is the record's content, not template of its record page.
    """
    return site if not page_kind else f"{site} {page_kind}"


class TemplateMemory(Protocol):
    """What the template filter asks of a memory (``SiteTemplateMemory``, ``TemplateSnapshot``)."""

    def template_fingerprints(self, site: str, fingerprints: Iterable[str]) -> set[str]:
        """Return which of the page's fingerprints are template, then record the page."""
        ...


class SiteTemplateMemory:
    """Count, per site, on how many pages each chunk fingerprint was seen (LRU-bounded).

    A chunk already seen on ``min_pages`` earlier pages of the same site is template (a header,
    footer or sidebar repeated by the site's page template). At most ``max_sites`` sites and
    ``max_chunks`` fingerprints per site are kept; the least recently seen go first.
    """

    def __init__(self, min_pages: int = 3, max_sites: int = 1000, max_chunks: int = 20_000):
        self.min_pages = min_pages
        self.max_sites = max_sites
        self.max_chunks = max_chunks
        self._sites: OrderedDict[str, OrderedDict[str, int]] = OrderedDict()
        # Per site, the fingerprints counted on ``min_pages`` pages or more, kept up to date by
        # ``_record`` so that ``template_of`` does not scan every fingerprint of the site.
        self._templates: dict[str, set[str]] = {}

    def template_fingerprints(self, site: str, fingerprints: Iterable[str]) -> set[str]:
        """Return which of the page's fingerprints are template, then record the page."""
        unique = dict.fromkeys(fingerprints)  # in page order: the least recent go first
        counts = self._sites.get(site)
        template = {fp for fp in unique if counts.get(fp, 0) >= self.min_pages} if counts else set()
        self._record(site, unique)
        return template

    def template_of(self, site: str) -> frozenset[str]:
        """Return the site's fingerprints that are template now (for a page sent elsewhere)."""
        return frozenset(self._templates.get(site, ()))

    def record(self, site: str, fingerprints: Iterable[str]) -> None:
        """Record a page of the site analysed elsewhere (see ``TemplateSnapshot``)."""
        self._record(site, dict.fromkeys(fingerprints))

    def _record(self, site: str, fingerprints: Iterable[str]) -> None:
        """Count the page's distinct fingerprints, in page order: which fingerprints a full
        memory forgets first must not depend on the order a set happens to iterate in."""
        counts = self._sites.get(site)
        if counts is None:
            counts = self._sites[site] = OrderedDict()
            self._templates[site] = set()
            while len(self._sites) > self.max_sites:
                evicted, _counts = self._sites.popitem(last=False)
                del self._templates[evicted]
        else:
            self._sites.move_to_end(site)
        template = self._templates[site]
        for fingerprint in fingerprints:
            seen = counts[fingerprint] = counts.get(fingerprint, 0) + 1
            counts.move_to_end(fingerprint)
            if seen >= self.min_pages:
                template.add(fingerprint)
        while len(counts) > self.max_chunks:
            template.discard(counts.popitem(last=False)[0])

    def __len__(self) -> int:
        return sum(len(counts) for counts in self._sites.values())

    def to_dict(self) -> dict[str, Any]:
        """Return the memory as JSON-safe data (for JOBDIR persistence)."""
        return {
            "min_pages": self.min_pages,
            "max_sites": self.max_sites,
            "max_chunks": self.max_chunks,
            "sites": {site: list(counts.items()) for site, counts in self._sites.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SiteTemplateMemory:
        """Rebuild a memory saved with ``to_dict``."""
        try:
            memory = cls(int(data["min_pages"]), int(data["max_sites"]), int(data["max_chunks"]))
            for site, pairs in data["sites"].items():
                counts = OrderedDict((str(fp), int(n)) for fp, n in pairs)
                memory._sites[str(site)] = counts
                memory._templates[str(site)] = {
                    fp for fp, seen in counts.items() if seen >= memory.min_pages
                }
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise InputFormatError(f"not a saved site template memory: {exc}") from exc
        return memory


class TemplateSnapshot:
    """One site's template fingerprints, frozen when a page was sent to another process.

    It stands in for the :class:`SiteTemplateMemory` in the analysis of that page and keeps the
    page's site and fingerprints, which the memory's owner records when the result comes back.
    """

    def __init__(self, template: frozenset[str]) -> None:
        self.template = template
        self.site: str | None = None
        self.fingerprints: tuple[str, ...] = ()

    def template_fingerprints(self, site: str, fingerprints: Iterable[str]) -> set[str]:
        """Return which of the page's fingerprints are template; keep them for the owner."""
        unique = tuple(dict.fromkeys(fingerprints))
        self.site, self.fingerprints = site, unique
        return {fp for fp in unique if fp in self.template}
