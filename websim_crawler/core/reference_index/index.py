"""A reference index: which of many known pages does this page look like, in sub-linear time?

Phishing detectors that compare a page with a list of protected pages (Phishpedia, VisualPhishNet)
and archive look-ups (which capture is this?) ask one page against thousands. ``ReferenceIndex``
keeps each reference's features for all four stages compactly (its layout vertex tree, keyword
vector, links and colour signature, as ``core.similarity.portable`` writes them, compressed), two
stage sketches (``sketch``) and its links' hashes in postings (``links``). A query takes
candidates in two cheap steps, then decides by the exact stages:

1. per stage the question weighs, the 64 (``NEIGHBOURS``) best references: for layout and text
   the nearest by sketch cosine, from a hierarchical navigable small-world graph (Malkov and
   Yashunin, "Efficient and robust approximate nearest neighbor search using HNSW graphs", 2018;
   faiss's ``IndexHNSWFlat``), so the search grows with the logarithm of the references, not with
   them; for links those of the highest exact Jaccard among the references sharing a link;
2. of their union, ranked by the question's weighted mean of those scores, the ``top`` best and
   those within ``WEBSIM_MATCH_MARGIN`` of the best, ``WEBSIM_MATCH_CANDIDATES`` at most;
3. those compared with the page by ``compare_pages`` (the four stages, the question's weights and
   threshold, as ``websim compare`` judges), best combined score first; under ``brand`` the
   references both pages name one brand with come before the other pages judged dissimilar
   (and are always candidates).

A reference whose features could not be built completely (its HTML or screenshot unreadable, its
analysis over budget) is skipped and counted by reason, never kept half-built.
"""

from __future__ import annotations

import dataclasses
import logging
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import orjson
from numpy.typing import NDArray

import websim_crawler
from websim_crawler.core.reference_index.graph import StageGraph
from websim_crawler.core.reference_index.links import LinkPostings, link_hashes
from websim_crawler.core.reference_index.params import MatchParams
from websim_crawler.core.reference_index.rarity_counts import ReferenceRarity
from websim_crawler.core.reference_index.sketch import DIMENSIONS, SKETCHED_STAGES, stage_sketches
from websim_crawler.core.reference_index.store import open_index_file, write_index_file
from websim_crawler.core.similarity.brand import BrandScore
from websim_crawler.core.similarity.comparison import ComparisonReport, PageFeatures, compare_pages
from websim_crawler.core.similarity.params import STAGES, SimilarityParams, SimilarityRecord
from websim_crawler.core.similarity.portable import features_from_dict, features_to_dict
from websim_crawler.core.similarity.questions import COMPARE_QUESTION, ask, brand_weight
from websim_crawler.errors import ConfigError, InputFormatError

logger = logging.getLogger(__name__)


__version__ = websim_crawler.__version__  # written into the index file
# The index file's layout; a file of another format is refused (rebuild it with websim index).
# 2: links in postings, no links sketch; 3: class names kept for every layout measure;
# 4: each reference's brand identity (words and image hashes, brand.json); 5: how many
# references have each template feature and link (template-hashes.npy, template-counts.npy);
# 6: brand words of hosts without their public suffix, of files without their folders
INDEX_FORMAT = 6
# Settings the stored features depend on: a query built with other values would be compared
# unlike with like, so an index built with other values is refused.
FEATURE_SETTINGS = {
    "layout_measure": "WEBSIM_SIMILARITY_LAYOUT_MEASURE",
    "visual_width": "WEBSIM_SIMILARITY_VISUAL_WIDTH",
    "visual_height": "WEBSIM_SIMILARITY_VISUAL_HEIGHT",
    "degrading_factor": "WEBSIM_SIMILARITY_DEGRADING_FACTOR",
    "signature_colours": "WEBSIM_SIMILARITY_SIGNATURE_COLOURS",
}
# What each layout measure reads of a page's document, and the class names (same-template
# judges a pair by those both pages use); the rest is left out of the index.
_DOCUMENT_PARTS = {
    "template": ("vertices", "classes"),
    "tag": ("vertices", "classes"),
    "indel": ("labels", "classes"),
    "difflib": ("labels", "classes"),
    "pq_gram": ("pq_grams", "classes"),
    "joint": ("labels", "classes"),
}
# A stored reference decompresses to at most this many bytes (a damaged or hostile file).
MAX_REFERENCE_BYTES = 256_000_000
# References kept decoded between queries (the protected pages a crawl meets again).
CACHED_REFERENCES = 64
# Candidates per stage: from its HNSW graph, or the links' best Jaccards.
NEIGHBOURS = 64
# The stages that find and rank candidates, in the order of their score columns.
RANKING_STAGES = (*SKETCHED_STAGES, "links")


class BrandFeatures(TypedDict):
    """The brand score of a ``MatchedReference`` and the features that decided it."""

    score: float
    features: str


class MatchedReference(TypedDict):
    """One reference (``Match.to_dict``) of a ``MatchLine``."""

    url: str
    score: float | None
    verdict: str
    decided_by: list[str]
    stages: dict[str, float | None]
    brand: BrandFeatures | None  # the brand features both share, when the question weighs them
    reason: str  # one line: why the verdict is what it is, and what decided it


@dataclass(frozen=True)
class Match:
    """One reference a page was compared with: its combined score, verdict and stage scores."""

    url: str
    score: float | None
    verdict: str
    decided_by: tuple[str, ...]
    stages: dict[str, float | None] = field(default_factory=dict)
    brand: BrandScore | None = None  # the brand features both share (weighed by the question)
    reason: str = ""  # one line: why the verdict is what it is, and what decided it

    def to_dict(self) -> MatchedReference:
        """Return a JSON-safe form."""
        return {
            "url": self.url,
            "score": None if self.score is None else round(self.score, 6),
            "verdict": self.verdict,
            "decided_by": list(self.decided_by),
            "stages": {
                stage: None if score is None else round(score, 6)
                for stage, score in self.stages.items()
            },
            "brand": None
            if self.brand is None
            else {"score": round(self.brand.score, 6), "features": self.brand.explain()},
            "reason": self.reason,
        }


def _match_of(report: ComparisonReport, url: str) -> Match:
    return Match(
        url,
        report.combined_score,
        report.verdict,
        report.decided_by,
        {result.stage: result.score for result in report.stages},
        report.brand,
        report.reason,
    )


def _ranked_score(report: ComparisonReport) -> float:
    """Return the report's combined score, or the mean score of its judged stages without one."""
    if report.combined_score is not None:
        return report.combined_score
    judged = [result.score for result in report.stages if result.score is not None]
    return sum(judged) / len(judged) if judged else 0.0


def _feature_settings(params: SimilarityParams) -> dict[str, Any]:
    return {name: getattr(params, attribute) for attribute, name in FEATURE_SETTINGS.items()}


class ReferenceIndex:
    """Reference pages' features for the four stages, with stage sketches to find candidates.

    ``add`` a page's ``PageFeatures`` (``core.similarity.comparison.page_features``) or
    ``add_record`` a prepared record (``core.stages``); ``query`` a page for its best references;
    ``save`` and ``ReferenceIndex.load`` the index file.

    Takes ``PageFeatures`` (``add``, ``query``); ``query`` returns a list of ``Match``, best first.
    """

    def __init__(
        self, params: SimilarityParams | None = None, match: MatchParams | None = None
    ) -> None:
        self.params = params or SimilarityParams()
        self.match = match or MatchParams()
        self.urls: list[str] = []
        self.skipped: dict[str, int] = {}
        self._url_numbers: dict[str, int] = {}
        self._sketch_rows: list[NDArray[np.float16]] = []
        self._sketches: NDArray[np.float16] = np.zeros(
            (0, len(SKETCHED_STAGES), DIMENSIONS), np.float16
        )
        self._link_rows: list[NDArray[np.uint64]] = []
        self._links = LinkPostings()
        self._records: bytearray | memoryview = bytearray()
        self._offsets: list[int] = [0]
        self._graphs = {stage: StageGraph() for stage in SKETCHED_STAGES}
        self._pending: list[int] = []
        self._decoded: OrderedDict[int, PageFeatures] = OrderedDict()
        self._file: Any = None  # the mapped file the stored records are read from
        self._rarity = ReferenceRarity()

    def __len__(self) -> int:
        return len(self.urls)

    @property
    def capped_brand_queries(self) -> int:
        """Queries whose brand words' references passed ``rarity_counts.MAX_BRAND_SCORED`` (the
        references of their commoner words were not scored)."""
        return self._rarity.capped_brand_queries

    @property
    def capped_link_queries(self) -> int:
        """Queries whose links' postings passed ``links.MAX_POSTINGS_READ`` (the links most
        references share were left out of their candidate search)."""
        return self._links.capped_queries

    # Building

    def skip(self, reason: str) -> None:
        """Count one reference left out."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, page: PageFeatures) -> str | None:
        """Add a reference; return why it was skipped (counted), or ``None`` when kept.

        A page without a URL, with a URL already in the index, or whose features have a problem
        (unreadable HTML or screenshot, failed analysis) is skipped.
        """
        reason = self._problem(page)
        if reason is not None:
            self.skip(reason)
            return reason
        assert page.url is not None
        record = zlib.compress(orjson.dumps(self._stored_form(page)), 6)
        if isinstance(self._records, memoryview):  # loaded from a file: copy before growing
            self._records = bytearray(self._records)
        self._records += record
        self._offsets.append(len(self._records))
        number = len(self.urls)
        self.urls.append(page.url)
        self._url_numbers[page.url] = number
        self._sketch_rows.append(stage_sketches(page).astype(np.float16))
        self._link_rows.append(link_hashes(page))
        self._pending.append(number)
        self._rarity.add(page)
        return None

    def add_record(self, record: SimilarityRecord) -> str | None:
        """Add a record prepared for the similarity stage (``core.stages``): its ready
        features, or the reason it has none (skipped and counted)."""
        reason = record.get("similarity_skipped")
        ready = record.get("similarity_features")
        if isinstance(reason, str) or ready is None:
            reason = str(reason or "no_features")
            self.skip(reason)
            return reason
        try:
            page = features_from_dict(ready)
        except InputFormatError:
            self.skip("bad_features")
            return "bad_features"
        return self.add(page)

    def _problem(self, page: PageFeatures) -> str | None:
        if not page.url:
            return "no_url"
        if page.url in self._url_numbers:
            return "duplicate_url"
        if page.problems:
            return f"problem_{page.problems[0].split(':', 1)[0].strip() or 'unknown'}"
        if page.document is None:
            return "problem_html"
        return None

    def _stored_form(self, page: PageFeatures) -> dict[str, Any]:
        """Return the page's portable features with only the document parts its layout measure
        reads (the others emptied)."""
        data = features_to_dict(page)
        document = data.get("document")
        if isinstance(document, dict):
            keep = _DOCUMENT_PARTS.get(self.params.layout_measure, tuple(document))
            for part, value in document.items():
                if part not in keep and isinstance(value, list):
                    document[part] = []
        return data

    def _flush(self) -> None:
        """Put the references added since the last query into the sketch matrix and graphs."""
        if not self._pending:
            return
        rows = np.stack(self._sketch_rows)
        self._sketches = np.concatenate([self._sketches, rows])
        self._sketch_rows = []
        self._links.add(self._link_rows)
        self._link_rows = []
        ids = np.asarray(self._pending, dtype=np.int64)
        for position, stage in enumerate(SKETCHED_STAGES):
            vectors = rows[:, position, :].astype(np.float32)
            present = np.abs(vectors).sum(axis=1) > 0
            self._graphs[stage].add(ids[present], vectors[present])
        self._pending = []

    # Reading references

    def reference(self, number: int) -> PageFeatures:
        """Return the stored features of one reference (decoded on use, a few kept)."""
        known = self._decoded.get(number)
        if known is not None:
            self._decoded.move_to_end(number)
            return known
        start, end = self._offsets[number], self._offsets[number + 1]
        inflater = zlib.decompressobj()
        try:
            text = inflater.decompress(self._records[start:end], MAX_REFERENCE_BYTES)
        except zlib.error as exc:
            raise InputFormatError(f"reference {number} is damaged: {exc}") from exc
        if inflater.unconsumed_tail:
            raise InputFormatError(f"reference {number} is over {MAX_REFERENCE_BYTES:,} bytes")
        try:
            page = features_from_dict(orjson.loads(text))
        except orjson.JSONDecodeError as exc:
            raise InputFormatError(f"reference {number} is not JSON: {exc}") from exc
        if CACHED_REFERENCES:
            self._decoded[number] = page
            while len(self._decoded) > CACHED_REFERENCES:
                self._decoded.popitem(last=False)
        return page

    # Querying

    def asked(self, question: str | None) -> SimilarityParams:
        """Return the index's parameters answering ``question`` (``None``: as set; ``auto``:
        looks-alike, as ``websim compare``)."""
        params = self.params
        if question is not None:
            params = dataclasses.replace(params, question=question)
        return ask(params, COMPARE_QUESTION)

    def candidates(
        self, page: PageFeatures, params: SimilarityParams, top: int | None = None
    ) -> list[int]:
        """Return the references the exact stages compare the page with (best first): the
        ``top`` best by their ranking score and those within ``WEBSIM_MATCH_MARGIN`` of the
        best, ``WEBSIM_MATCH_CANDIDATES`` at most, and as many of the best brand scores when
        the question weighs them."""
        self._flush()
        if not len(self):
            return []
        weights = self._ranking_weights(params)
        query = stage_sketches(page)
        query_links = link_hashes(page)
        has_data = np.append(np.abs(query).sum(axis=1) > 0, len(query_links) > 0)
        # As ``compare_pages`` judges a pair with no data in any weighted stage by the stages
        # that have data, a page with none in the weighted stages (no links, for same-site)
        # takes candidates from every stage it has data in.
        searched = (weights > 0) & has_data if ((weights > 0) & has_data).any() else has_data
        found: set[int] = set()
        for position, stage in enumerate(SKETCHED_STAGES):
            if searched[position]:
                found.update(self._graphs[stage].nearest(query[position], NEIGHBOURS).tolist())
        weight = brand_weight(params)
        brand_scores = self._rarity.brand_scores(page.identity) if weight > 0 else {}
        by_brand = sorted(brand_scores, key=lambda n: (-brand_scores[n], n))
        found.update(by_brand[:NEIGHBOURS])
        # The links' postings are read only when the links are searched.
        shared = self._links.shared(query_links) if searched[-1] else None
        if shared is not None:
            sharing = np.flatnonzero(shared)
            best = np.argsort(-self._links.jaccards(query_links, shared, sharing), kind="stable")
            found.update(sharing[best[:NEIGHBOURS]].tolist())
        if not found:
            return []
        ids = np.fromiter(found, dtype=np.int64, count=len(found))
        ranking = self._ranking_scores(ids, query, query_links, shared, weights)
        if weight > 0:
            brand = np.array([brand_scores.get(int(number), 0.0) for number in ids])
            ranking = (1 - weight) * ranking + weight * brand
        order = np.lexsort((ids, -ranking))[: self.match.candidates]
        close = ranking[order] >= ranking[order[0]] - self.match.margin
        close[: top or self.match.top] = True
        chosen = [int(number) for number in ids[order[close]]]
        # The sketches see the plain layout (a toolkit's skeleton): under a question that weighs
        # the brand, the references of the best brand scores are compared too, and those the
        # page's brand names (ranked first by ``compare``, whatever they score).
        named = self._rarity.named_references(page.identity) if weight > 0 else []
        extra = [*by_brand[: self.match.candidates], *named]
        return chosen + [n for n in dict.fromkeys(extra) if n not in chosen]

    def _ranking_scores(
        self,
        ids: NDArray[np.int64],
        query: NDArray[np.float32],
        query_links: NDArray[np.uint64],
        shared: NDArray[np.int64] | None,
        weights: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Return each candidate's ranking score, weighed as ``compare_pages`` weighs the exact
        scores: a stage counts when either page has data in it (scoring 0 when one has none),
        and a pair with no data in any weighted stage is ranked by the stages it has data in."""
        sketches = self._sketches[ids].astype(np.float32)  # (candidates, stages, dimensions)
        scores = np.zeros((len(ids), len(RANKING_STAGES)))
        present = np.zeros((len(ids), len(RANKING_STAGES)), dtype=bool)
        scores[:, :-1] = np.einsum("csd,sd->cs", sketches, query)
        present[:, :-1] = (np.abs(sketches).sum(axis=2) > 0) | (np.abs(query).sum(axis=1) > 0)
        if shared is not None:
            scores[:, -1] = self._links.jaccards(query_links, shared, ids)
        present[:, -1] = (self._links.counts[ids] > 0) | (len(query_links) > 0)
        weighted = present * weights
        unweighted = ~weighted.any(axis=1)
        weighted[unweighted] = present[unweighted]
        totals = weighted.sum(axis=1)
        ranking = np.zeros(len(ids))
        np.divide((weighted * scores).sum(axis=1), totals, out=ranking, where=totals > 0)
        return ranking

    @staticmethod
    def _ranking_weights(params: SimilarityParams) -> NDArray[np.float64]:
        """The question's weights of ``RANKING_STAGES`` (equal when it weighs none of them)."""
        weights = dict(zip(STAGES, params.stage_weights, strict=True))
        ranked = np.array([weights[stage] for stage in RANKING_STAGES], dtype=np.float64)
        return ranked if ranked.any() else np.ones(len(RANKING_STAGES))

    def query(
        self, page: PageFeatures, question: str | None = None, top: int | None = None
    ) -> list[Match]:
        """Return the page's best references for the question, best combined score first."""
        params = self.asked(question)
        return self.compare(page, self.candidates(page, params, top), params, top)

    def exhaustive(
        self, page: PageFeatures, question: str | None = None, top: int | None = None
    ) -> list[Match]:
        """Return ``query``'s answer from every reference (no candidate step: for measuring)."""
        self._flush()
        return self.compare(page, range(len(self)), self.asked(question), top)

    def compare(
        self,
        page: PageFeatures,
        numbers: Iterable[int],
        params: SimilarityParams,
        top: int | None = None,
    ) -> list[Match]:
        """Compare the page with the given references by the exact stages; best first: similar
        before the rest, then the references both pages name one brand with (``BrandScore.
        named``, when the question weighs the brand), then by combined score (a pair judged by
        the stages that have data, without one, by the mean of their scores)."""
        scored: list[tuple[bool, bool, float, int, Match]] = []
        for number in numbers:
            report = compare_pages(
                page,
                self.reference(number),
                params.pairs_mode,
                params,
                brand_rarity=self._rarity.brand,
                template_rarity=self._rarity.template,
            )
            match = _match_of(report, self.urls[number])
            # The brand a page names is the strongest cue to its identity (Phishpedia, Lin et
            # al., USENIX Security 2021, identifies the brand first and judges after): a
            # reference named like the page ranks above one that only scores higher.
            named = report.brand is not None and report.brand.named
            scored.append(
                (report.verdict != "similar", not named, -_ranked_score(report), number, match)
            )
        scored.sort(key=lambda entry: entry[:4])
        return [entry[-1] for entry in scored[: top or self.match.top]]

    # Files

    def save(self, path: str | Path) -> None:
        """Write the index file (atomically)."""
        self._flush()
        meta = {
            "format": INDEX_FORMAT,
            "websim_version": __version__,
            "references": len(self),
            "dimensions": DIMENSIONS,
            "sketched_stages": list(SKETCHED_STAGES),
            "settings": _feature_settings(self.params),
            "urls": self.urls,
            "skipped": self.skipped,
        }
        members: dict[str, Any] = {
            "sketches.npy": self._sketches,
            "offsets.npy": np.asarray(self._offsets, dtype=np.int64),
            "link-hashes.npy": self._links.hashes,
            "link-owners.npy": self._links.owners,
            "link-counts.npy": self._links.counts,
            "references.bin": bytes(self._records),
            **self._rarity.members(),
        }
        for stage, graph in self._graphs.items():
            members[f"ann-{stage}.faiss"] = graph.to_bytes()
        write_index_file(path, meta, members)

    @classmethod
    def load(
        cls,
        path: str | Path,
        params: SimilarityParams | None = None,
        match: MatchParams | None = None,
    ) -> ReferenceIndex:
        """Read an index file; ``InputFormatError`` (one line) when it is not one, is damaged,
        or was written by an incompatible version; ``ConfigError`` when it was built with other
        feature settings than ``params``."""
        opened = open_index_file(path)
        meta = opened.meta
        found = meta.get("format")
        if found != INDEX_FORMAT:
            raise InputFormatError(
                f"{path} is a websim index of format {found!r} (written by websim "
                f"{meta.get('websim_version', '?')}); websim {__version__} reads format "
                f"{INDEX_FORMAT}: rebuild it with websim index"
            )
        index = cls(params, match)
        index._check_settings(meta.get("settings"), path)
        urls = meta.get("urls")
        skipped = meta.get("skipped")
        if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls):
            raise InputFormatError(f"{path}: the index lists no reference URLs")
        count = len(urls)
        sketches = opened.array("sketches.npy")
        offsets = opened.array("offsets.npy")
        records = opened.member("references.bin")
        if (
            sketches.shape != (count, len(SKETCHED_STAGES), DIMENSIONS)
            or sketches.dtype != np.float16
        ):
            raise InputFormatError(f"{path}: sketches of shape {sketches.shape}, not {count} rows")
        if (
            offsets.shape != (count + 1,)
            or offsets.dtype != np.int64
            or offsets[0] != 0
            or offsets[-1] != len(records)
            or bool((np.diff(offsets) < 0).any())
        ):
            raise InputFormatError(f"{path}: the reference offsets do not fit its records")
        links = LinkPostings(
            opened.array("link-hashes.npy"),
            opened.array("link-owners.npy"),
            opened.array("link-counts.npy"),
        )
        links.check(count, str(path))
        for position, stage in enumerate(SKETCHED_STAGES):
            expected = int((np.abs(sketches[:, position, :]).sum(axis=1) > 0).sum())
            index._graphs[stage] = StageGraph.from_bytes(
                opened.member(f"ann-{stage}.faiss"), expected, f"{path}: ann-{stage}.faiss"
            )
        index.urls = urls
        index._url_numbers = {url: number for number, url in enumerate(urls)}
        index.skipped = (
            {str(k): int(v) for k, v in skipped.items()} if isinstance(skipped, dict) else {}
        )
        index._sketches = sketches
        index._offsets = offsets.tolist()
        index._links = links
        index._records = records
        index._file = opened
        index._rarity = ReferenceRarity.load(opened, count)
        return index

    def _check_settings(self, stored: Any, path: str | Path) -> None:
        if not isinstance(stored, dict):
            raise InputFormatError(f"{path}: the index records no settings")
        current = _feature_settings(self.params)
        for name, value in current.items():
            if stored.get(name) != value:
                raise ConfigError(
                    f"{name}: the index {path} was built with {stored.get(name)!r}, this run "
                    f"has {value!r}: set it back or rebuild the index"
                )
