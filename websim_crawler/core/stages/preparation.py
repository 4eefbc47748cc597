"""What the end-of-crawl stages need of one record, prepared where the page's HTML is parsed.

The clustering, similarity and near-duplicate stages collect a small, JSON-safe record per page
(``prepare_record``): the heavy part (the page analysis of a record without keywords, the layout
features, the sentence hashes) runs in an analysis worker, under its time and memory budget, in
a crawl and in the ``websim`` commands alike; each stage's ``add`` then only appends what is
ready. The same prepared record is what a stage keeps in JOBDIR to resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websim_crawler.core.clustering.params import ClusterRecord
from websim_crawler.core.neardup.params import NeardupParams, NeardupRecord
from websim_crawler.core.page import (
    AnalysisParams,
    SiteTemplateMemory,
    TemplateSnapshot,
    analyse_page,
)
from websim_crawler.core.similarity.params import SimilarityParams, SimilarityRecord
from websim_crawler.errors import PageError

if TYPE_CHECKING:
    from websim_crawler.core.html import HtmlTree

# The stages' modules (layout measures, clustering, sentence index) are imported by the functions
# that use them: a crawl without a stage imports none of them (scipy, Pillow, POT ...).


class StageRecord(ClusterRecord, SimilarityRecord, NeardupRecord, total=False):
    """What the enabled stages take of one page, JSON-safe: each stage's part is declared beside
    the stage (``ClusterRecord``, ``SimilarityRecord``, ``NeardupRecord``), which reads it
    without importing this room."""


@dataclass(frozen=True)
class StagePlan:
    """Which stages a record is prepared for (``None``: that stage is off), and how."""

    analysis: AnalysisParams
    html_field: str = "html"
    drop_html: bool = False  # the analysis removes the HTML from the items (WEBSIM_DROP_HTML)
    clustering_kind: str | None = None
    similarity: SimilarityParams | None = None
    neardup: NeardupParams | None = None

    @property
    def enabled(self) -> bool:
        """Tell whether any stage is on."""
        return (
            self.clustering_kind is not None
            or self.similarity is not None
            or self.neardup is not None
        )


def needs_worker(record: Mapping[str, Any], plan: StagePlan) -> bool:
    """Tell whether preparing ``record`` parses its page (else it only picks fields)."""
    if plan.similarity is not None or plan.neardup is not None:
        return True
    if plan.clustering_kind is None:
        return False
    return _needs_analysis(
        record, plan, record.get(plan.html_field), analysed=False
    ) or _forms_wanted(  # its text tokenised for the forms
        record, plan, record.get("main_text"), record.get("language")
    )


def prepare_record(
    record: Mapping[str, Any],
    plan: StagePlan,
    *,
    analysed: bool = False,
    site_memory: SiteTemplateMemory | TemplateSnapshot | None = None,
    tree: HtmlTree | None = None,
) -> StageRecord:
    """Return what the enabled stages' ``add`` read of ``record``, JSON-safe.

    ``analysed``: the record comes out of the page analysis, so its keywords are final (even
    empty). Otherwise a record without keywords that the clustering selects is analysed here
    (with ``site_memory``, the per-site template memory), and its failure is kept as the reason.
    ``tree``: the page as the analysis parsed it (``analyse_page(keep_tree=True)``): the layout
    features are derived from it, not from a second parse.
    """
    from websim_crawler.core.neardup.pages import chunks_only, page_sentences
    from websim_crawler.core.similarity.collection import record_problem
    from websim_crawler.core.similarity.comparison import features_from_item
    from websim_crawler.core.similarity.portable import features_to_dict

    url = record.get("url")
    html = record.get(plan.html_field)
    cluster, similarity, neardup = ClusterRecord(), SimilarityRecord(), NeardupRecord()
    if plan.clustering_kind is not None:
        cluster = _clustering_fields(record, plan, html, analysed=analysed, site_memory=site_memory)
    if plan.similarity is not None:
        fields = {
            "url": url,
            "html": html,
            "links": record.get("links"),
            "keywords": record.get("keywords"),
            "keyword_stems": record.get("keyword_stems"),
            "screenshot": record.get("screenshot"),
        }
        problem = record_problem(fields)
        if problem is not None:
            similarity = SimilarityRecord(similarity_skipped=problem)
        else:
            features = features_from_item(fields, plan.similarity, plan.analysis, tree=tree)
            similarity = SimilarityRecord(similarity_features=features_to_dict(features))
    if plan.neardup is not None:
        try:
            page = page_sentences(
                record, plan.neardup, chunks_only(plan.analysis), html_field=plan.html_field
            )
        except PageError as exc:
            neardup = NeardupRecord(neardup_skipped=exc.reason)
        else:
            neardup = NeardupRecord(neardup_sentences=page.to_dict())
    return {"url": url, **cluster, **similarity, **neardup}


def _clustering_fields(
    record: Mapping[str, Any],
    plan: StagePlan,
    html: Any,
    *,
    analysed: bool,
    site_memory: SiteTemplateMemory | TemplateSnapshot | None,
) -> ClusterRecord:
    """Return what the clustering takes of ``record``: its keywords and, in place of its main
    text and language, the surface forms of its stems (tokenised here, in the worker, so the
    collector on the reactor only appends)."""
    fields = ClusterRecord(
        kind=record.get("kind"),
        keywords=record.get("keywords"),
        keyword_stems=record.get("keyword_stems"),
        title=record.get("title"),
    )
    main_text, language = record.get("main_text"), record.get("language")
    if _needs_analysis(record, plan, html, analysed=analysed):
        url, kind = record.get("url"), record.get("kind")
        try:
            analysis = analyse_page(
                html,
                url if isinstance(url, str) else None,
                params=plan.analysis,
                site_memory=site_memory,
                chunk_detail="none",
                page_kind=kind if isinstance(kind, str) else None,
            )
        except PageError as exc:
            return ClusterRecord(cluster_skipped=f"analysis_{exc.reason}")
        fields["keywords"] = dict(analysis.keywords)
        fields["keyword_stems"] = dict(analysis.keyword_stems)
        fields["title"] = fields.get("title") or analysis.title
        main_text, language = analysis.main_text, analysis.language
    if _forms_wanted(record, plan, main_text, language):
        from websim_crawler.core.clustering.job import surface_forms

        stems = fields.get("keyword_stems")
        if isinstance(stems, Mapping):
            forms = surface_forms(stems, main_text, language, plan.analysis.stemmer)
            if forms is not None:
                fields["keyword_forms"] = forms
    return fields


def _forms_wanted(
    record: Mapping[str, Any], plan: StagePlan, main_text: Any, language: Any
) -> bool:
    """Tell whether the clustering takes this record's keywords with their surface forms."""
    from websim_crawler.core.clustering.job import DocumentCollector

    return (
        isinstance(main_text, str)
        and bool(main_text)
        and isinstance(language, str)
        and DocumentCollector(plan.clustering_kind or "all").selects(record.get("kind"))
    )


def _needs_analysis(
    record: Mapping[str, Any], plan: StagePlan, html: Any, *, analysed: bool
) -> bool:
    """Tell whether the clustering needs the page analysed for its keywords."""
    from websim_crawler.core.clustering.job import DocumentCollector

    return (
        not analysed
        and not record.get("keyword_stems")
        and isinstance(html, (str, bytes))
        and bool(html)
        and DocumentCollector(plan.clustering_kind or "all").selects(record.get("kind"))
    )
