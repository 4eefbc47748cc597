"""Compare two pages in four stages (layout, text, links, visual), as a cascade or in full.

The cascade is the multiplexer of "Web Page Visual Similarity": it stops at the first stage whose
score is below its threshold. A stage without data (no screenshot, no links on either page, no
keywords) is skipped and never stops the cascade. ``full`` runs every stage (dissimilar if any
stage is); ``combined`` runs every stage and judges by the combined score alone (the weighted
mean of the stages with data against ``WEBSIM_SIMILARITY_COMBINED_THRESHOLD``; weights fitted
with ``StageCombiner``), or as ``full`` when no weighted stage has data.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from websim_crawler.core.html import HtmlTree, outgoing_links, stated_url
from websim_crawler.core.page import AnalysisParams, PageAnalysis, analyse_page
from websim_crawler.core.similarity.brand import (
    BrandIdentity,
    BrandRarity,
    BrandScore,
    brand_identity,
    brand_similarity,
    page_folder,
)
from websim_crawler.core.similarity.documents import ParsedDocument, as_parsed_document
from websim_crawler.core.similarity.layout import tag_comparison, template_comparison
from websim_crawler.core.similarity.links import keyed_link_similarity
from websim_crawler.core.similarity.params import MODES, STAGES, SimilarityParams
from websim_crawler.core.similarity.questions import (
    QUESTIONS,
    brand_weight,
    rare_templates,
    unnamed_threshold,
)
from websim_crawler.core.similarity.rarity import (
    TemplateRarity,
    rare_link_similarity,
    rare_template_similarity,
)
from websim_crawler.core.similarity.structure import (
    pq_gram_similarity,
    similarity,
    structural_similarity,
)
from websim_crawler.core.similarity.template_classes import (
    TEMPLATE_CLASSES,
    pair_class_similarity,
)
from websim_crawler.core.similarity.text import InverseDocumentFrequency, text_similarity
from websim_crawler.core.similarity.visual import (
    ColourSignature,
    colour_signature,
    signature_similarity,
)
from websim_crawler.core.urls import is_http_url, page_key
from websim_crawler.errors import ConfigError, InputFormatError, PageError

logger = logging.getLogger(__name__)


@dataclass
class PageFeatures:
    """What the four stages need of one page, computed once."""

    url: str | None
    document: ParsedDocument | None
    keywords: dict[str, int]
    links: frozenset[str]
    signature: ColourSignature | None = None
    predecessors: frozenset[str] = frozenset()
    problems: list[str] = field(default_factory=list)
    # False when no http(s) URL of the page is known (a saved file that states none): its
    # relative links could not be resolved, so its links are not compared.
    links_resolved: bool = True
    absolute_links: frozenset[str] | None = None  # derived when compared with an unresolved page
    # The words that name its brand and its own images' hashes (``brand.brand_identity``).
    identity: BrandIdentity | None = None


def page_features(
    html: str | bytes | None,
    *,
    url: str | None = None,
    links: list[str] | None = None,
    keywords: Mapping[str, int] | None = None,
    screenshot: bytes | None = None,
    params: SimilarityParams | None = None,
    analysis_params: AnalysisParams | None = None,
    tree: HtmlTree | None = None,
) -> PageFeatures:
    """Parse a page once; missing keywords and links are taken from the page analysis.

    Takes HTML text (``str``), ``bytes`` or ``None`` (a page known by its links or screenshot
    only), a parsed tree as ``tree`` and a PNG as ``screenshot``; returns ``PageFeatures``.

    The page is parsed once, by the one parser under the analysis' limits: by the analysis when
    keywords or links are missing (its ``keep_tree`` gives the layout its tree), else here.
    ``tree``: the page as already parsed (a worker's analysis kept it), so nothing is parsed.
    Relative links resolve against ``url`` when it is http(s), else against the URL the page
    states (``core.html.stated_url``: a saved page's canonical link, ``og:url`` or base); with
    neither, ``links_resolved`` is False. An empty page gets no document (layout vertices: 0)
    and no keywords; an unreadable screenshot gets no signature; each such problem is listed in
    ``problems``.
    """
    params = params or SimilarityParams()
    analysis_params = analysis_params or AnalysisParams()
    problems: list[str] = []
    analysis_problems: list[str] = []
    analysis: PageAnalysis | None = None
    if html and tree is None and (keywords is None or links is None):
        analysis = _analyse(html, url, analysis_problems, analysis_params)
        tree = analysis.tree if analysis is not None else None
    document: ParsedDocument | None = None
    if html:
        try:
            document = as_parsed_document(
                tree if tree is not None else html, analysis_params.parse_limits
            )
        except PageError as exc:
            problems.append(f"html: {exc}")
        else:
            if params.layout_measure == "template":
                document.vertices.derive_arrays()
    else:
        problems.append("html: the page is empty")
    link_base = url if is_http_url(url) else None
    if link_base is None and document is not None:
        link_base = stated_url(document.root)
    links_resolved = link_base is not None or (url is None and links is not None)
    if links is not None and link_base is not None and link_base != url:
        links = outgoing_links(document.root, link_base) if document is not None else links
    if keywords is None or links is None:
        problems.extend(analysis_problems)
        analysed_keywords: dict[str, int] = {}
        analysed_links: list[str] = []
        if analysis is not None:
            analysed_keywords = dict(analysis.keyword_stems)
            analysed_links = list(analysis.links)
            if document is not None and (link_base or url) != url:
                # the analysis resolved against ``url``; its tree is the document's
                analysed_links = outgoing_links(document.root, link_base or url)
        keywords = analysed_keywords if keywords is None else keywords
        if links is None:
            links = analysed_links
            if document is not None and not links:
                links = outgoing_links(document.root, link_base or url)
    signature = None
    if screenshot is not None:
        try:
            signature = colour_signature(screenshot, params)
        except InputFormatError as exc:
            problems.append(f"screenshot: {exc}")
    return PageFeatures(
        url=url,
        document=document,
        keywords={str(k): int(v) for k, v in keywords.items()},
        links=frozenset(page_key(link) for link in links),
        signature=signature,
        problems=problems,
        links_resolved=links_resolved,
        identity=None if document is None else brand_identity(document.root, page_folder(url)),
    )


def _analyse(
    html: str | bytes,
    url: str | None,
    problems: list[str],
    analysis_params: AnalysisParams,
) -> PageAnalysis | None:
    try:
        return analyse_page(html, url, params=analysis_params, chunk_detail="none", keep_tree=True)
    except PageError as exc:
        problems.append(f"analysis: {exc}")
        return None


def features_from_item(
    item: Mapping[str, Any],
    params: SimilarityParams | None = None,
    analysis_params: AnalysisParams | None = None,
    tree: HtmlTree | None = None,
) -> PageFeatures:
    """Build features from a crawl item (``html``, ``links``, ``keyword_stems``, ``screenshot``);
    ``tree``: the item's page as already parsed (``page_features``)."""
    screenshot = item.get("screenshot")
    png: bytes | None = None
    problems: list[str] = []
    if isinstance(screenshot, str) and screenshot:
        try:
            png = base64.b64decode(screenshot, validate=True)
        except (binascii.Error, ValueError):
            problems.append("screenshot: not valid base64")
    elif isinstance(screenshot, bytes):
        png = screenshot
    keywords = item.get("keyword_stems")
    links = item.get("links")
    features = page_features(
        item.get("html") or None,
        url=item.get("url"),
        links=list(links) if isinstance(links, list) else None,
        keywords=keywords if isinstance(keywords, Mapping) else None,
        screenshot=png,
        params=params,
        analysis_params=analysis_params,
        tree=tree,
    )
    features.problems.extend(problems)
    return features


@dataclass(frozen=True)
class StageResult:
    """One stage of a comparison: score, support, threshold and verdict."""

    stage: str
    score: float | None
    threshold: float
    verdict: str  # "similar", "dissimilar", "skipped" (no data) or "not_run" (cascade stopped)
    support: int
    detail: str


@dataclass(frozen=True)
class ComparisonReport:
    """The outcome of ``compare_pages``."""

    url_1: str | None
    url_2: str | None
    mode: str
    verdict: str  # "similar", "dissimilar" or "undetermined" (no stage had data)
    stopped_at: str | None
    combined_score: float | None
    stages: tuple[StageResult, ...]
    # The question asked (``custom``: the stage weights as set) and the stages whose scores made
    # the verdict: the weighted stages with data (combined), or the stages judged (cascade, full).
    question: str = "custom"
    decided_by: tuple[str, ...] = ()
    reason: str = ""  # one line: why the verdict is what it is (``verdict_reason``)
    # The brand features both pages share, when the question weighs them (``brand``).
    brand: BrandScore | None = None

    def stage(self, name: str) -> StageResult:
        """Return the result of one stage by name."""
        for result in self.stages:
            if result.stage == name:
                return result
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return asdict(self)


def pair_classes_threshold(params: SimilarityParams) -> float | None:
    """Return the threshold at which ``params``' question judges two pages by the class names
    they share (same-template), or ``None`` when the stages judge."""
    question = QUESTIONS.get(params.question)
    return question.pair_classes_threshold if question is not None else None


def _class_sets(
    first: PageFeatures, second: PageFeatures
) -> tuple[frozenset[str], frozenset[str]] | None:
    """Return both pages' class names, or ``None`` when either page has none."""
    if first.document is None or second.document is None:
        return None
    sets = first.document.classes, second.document.classes
    return sets if all(sets) else None


def layout_score(
    first: ParsedDocument | None, second: ParsedDocument | None, params: SimilarityParams
) -> tuple[float, int, str]:
    """Return the layout stage's (score, support, detail) with the configured measure."""
    measure = params.layout_measure
    if measure == "template":
        match = template_comparison(
            first,
            second,
            penalty=params.template_penalty,
            seed_candidates=params.template_seed_candidates,
        )
        return match.score, match.vertices, f"template: {match.templates} templates"
    if measure == "tag":
        match = tag_comparison(first, second)
        return match.score, match.vertices, f"tag: {match.matched_pairs} matched pairs"
    if first is None or second is None:
        size = sum(len(doc.tags) for doc in (first, second) if doc is not None)
        return 0.0, size, f"{measure}: empty page"
    support = len(first.tags) + len(second.tags)
    if measure == "joint":
        return similarity(first, second, params.joint_k), support, f"joint k={params.joint_k}"
    if measure == "pq_gram":
        return pq_gram_similarity(first, second), support, "pq_gram"
    return structural_similarity(first, second, measure), support, measure


def _stage_score(
    stage: str,
    first: PageFeatures,
    second: PageFeatures,
    params: SimilarityParams,
    idf: InverseDocumentFrequency | None,
    rarity: TemplateRarity | None,
) -> tuple[float, int, str]:
    """Return a stage's (score, support, detail); ``rarity``: the question weighs template
    features and links by their rarity across the references (none known: all alike)."""
    rare = rarity is not None
    if stage == "layout" and rare:
        return rare_template_similarity(first.document, second.document, rarity)
    if stage == "layout":
        return layout_score(first.document, second.document, params)
    if stage == "text":
        support = len(first.keywords.keys() | second.keywords.keys())
        if not first.keywords or not second.keywords:
            return 0.0, support if (first.keywords or second.keywords) else 0, "no keywords"
        score = text_similarity(
            first.keywords, second.keywords, idf, sublinear_tf=params.sublinear_tf
        )
        return score, support, f"{support} distinct keywords"
    if stage == "links":
        unresolved = [
            label for label, page in (("A", first), ("B", second)) if not page.links_resolved
        ]
        links_1, links_2 = first.links, second.links
        if unresolved:  # like with like: the links both pages wrote absolute
            links_1, links_2 = _absolute_links(first), _absolute_links(second)
        if rare:
            result = rare_link_similarity(links_1, links_2, rarity)
            what = "links, each weighed by its rarity"
        else:
            result = keyed_link_similarity(
                links_1, links_2, first.predecessors, second.predecessors
            )
            what = "links and predecessors"
        if unresolved:
            pages = " and ".join(unresolved)
            return (
                result.score,
                result.support,
                f"{result.support} absolute {what} (no http(s) URL known for page {pages}: "
                "relative links unknown)",
            )
        return result.score, result.support, f"{result.support} {what}"
    if first.signature is None or second.signature is None:
        return 0.0, 0, "no screenshot"
    score = signature_similarity(first.signature, second.signature, params)
    return score, 1, f"{len(first.signature.weights)}x{len(second.signature.weights)} colours"


def _absolute_links(page: PageFeatures) -> frozenset[str]:
    """Return the keys of the links a page wrote as absolute URLs (all it has when unresolved)."""
    if not page.links_resolved or page.document is None:
        return page.links
    if page.absolute_links is None:
        page.absolute_links = frozenset(map(page_key, outgoing_links(page.document.root, None)))
    return page.absolute_links


def compare_pages(
    first: PageFeatures,
    second: PageFeatures,
    mode: str | None = None,
    params: SimilarityParams | None = None,
    idf: InverseDocumentFrequency | None = None,
    brand_rarity: BrandRarity | None = None,
    template_rarity: TemplateRarity | None = None,
) -> ComparisonReport:
    """Compare two pages stage by stage; ``cascade`` stops at the first dissimilar stage.

    Takes two ``PageFeatures`` (``page_features``); returns a ``ComparisonReport`` (each
    stage's score, the combined score, ``similar``).

    ``combined`` (the default ``WEBSIM_SIMILARITY_PAIRS_MODE``) judges by the weighted mean of
    the stage scores instead of stage by stage; when no weighted stage has data (two pages
    without links, by default) it judges by the stages that have data, as ``full`` does.
    ``brand_rarity`` and ``template_rarity``: how many references have each brand feature and
    template feature, for the questions that weigh them by rarity (``brand``).
    """
    params = params or SimilarityParams()
    mode = params.pairs_mode if mode is None else mode
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
    weights = dict(zip(STAGES, params.stage_weights, strict=True))
    rarity = (template_rarity or TemplateRarity()) if rare_templates(params) else None
    results: list[StageResult] = []
    stopped_at: str | None = None
    for stage in STAGES:
        threshold = params.threshold(stage)
        if stopped_at is not None:
            results.append(StageResult(stage, None, threshold, "not_run", 0, "cascade stopped"))
            continue
        score, support, detail = _stage_score(stage, first, second, params, idf, rarity)
        if support == 0:
            results.append(StageResult(stage, None, threshold, "skipped", 0, detail))
            continue
        verdict = "similar" if score >= threshold else "dissimilar"
        results.append(StageResult(stage, score, threshold, verdict, support, detail))
        if verdict == "dissimilar" and mode == "cascade":
            stopped_at = stage
    scored = [r for r in results if r.score is not None and weights[r.stage] > 0]
    combined = (
        sum(weights[r.stage] * r.score for r in scored if r.score is not None)
        / sum(weights[r.stage] for r in scored)
        if scored
        else None
    )
    judged = [r for r in results if r.verdict in ("similar", "dissimilar")]
    verdicts = [r.verdict for r in judged]
    deciding = [r.stage for r in judged if r.verdict == "dissimilar"] or [r.stage for r in judged]
    brand: BrandScore | None = None
    by_classes = pair_classes_threshold(params) if mode == "combined" else None
    class_sets = _class_sets(first, second) if by_classes is not None else None
    if by_classes is not None and class_sets is not None:
        combined = pair_class_similarity(*class_sets)
        verdicts = ["similar" if combined >= by_classes else "dissimilar"]
        deciding = [TEMPLATE_CLASSES]
    elif mode == "combined" and combined is not None:
        deciding = [r.stage for r in scored]
        weight = brand_weight(params)
        if weight > 0:
            brand = brand_similarity(first.identity, second.identity, brand_rarity)
        if brand is not None:
            combined = (1 - weight) * combined + weight * brand.score
            deciding.append("brand")
        verdicts = ["similar" if combined >= _threshold(params, brand) else "dissimilar"]
    verdict = (
        "undetermined" if not verdicts else "dissimilar" if "dissimilar" in verdicts else "similar"
    )
    report = ComparisonReport(
        first.url,
        second.url,
        mode,
        verdict,
        stopped_at,
        combined,
        tuple(results),
        params.question if params.question != "auto" else "custom",
        tuple(deciding),
        brand=brand,
    )
    return replace(report, reason=verdict_reason(report, params))


def _threshold(params: SimilarityParams, brand: BrandScore | None) -> float:
    """Return the combined threshold a pair is judged at: the question's threshold for pairs
    not naming one brand when the brand is weighed and not named on both pages."""
    unnamed = unnamed_threshold(params) if brand is not None and not brand.named else None
    return params.combined_threshold if unnamed is None else max(unnamed, params.combined_threshold)


def verdict_reason(report: ComparisonReport, params: SimilarityParams) -> str:
    """Return one line telling why the verdict is what it is: the question asked, the combined
    score against its threshold (or the stages judged one by one) and the stage that weighed
    most (its weight times its score, the largest share of the combined score)."""
    weights = dict(zip(STAGES, params.stage_weights, strict=True))
    asked = f"question {report.question}"
    if report.verdict == "undetermined":
        return f"{asked}: undetermined, no stage had data to judge by"
    if report.decided_by == (TEMPLATE_CLASSES,) and report.combined_score is not None:
        threshold = pair_classes_threshold(params) or 0.0
        relation = ">=" if report.combined_score >= threshold else "<"
        return (
            f"{asked}: {report.verdict}, template classes {report.combined_score:.3f} {relation} "
            f"threshold {threshold:g} (the class names both pages use, as a share of the page "
            "that uses more; the stages are shown, not weighed)"
        )
    judged = [r for r in report.stages if r.score is not None and r.stage in report.decided_by]
    if report.mode == "combined" and report.combined_score is not None:
        threshold = _threshold(params, report.brand)
        relation = ">=" if report.combined_score >= threshold else "<"
        total = sum(weights[r.stage] for r in judged) or 1.0
        heaviest = max(judged, key=lambda r: weights[r.stage] * (r.score or 0.0))
        share = weights[heaviest.stage] / total
        shared = named = ""
        if report.brand is not None and threshold != params.combined_threshold:
            named = " (the brand not named on both pages)"
        if report.brand is not None:
            shared = (
                f"; brand {report.brand.score:.3f} (weight {brand_weight(params):.0%}): "
                f"{report.brand.explain()}"
            )
        layout = [r for r in judged if r.stage == "layout"]
        if rare_templates(params) and layout:  # the template features both share
            shared += f"; layout {layout[0].score:.3f}: {layout[0].detail}"
        return (
            f"{asked}: {report.verdict}, combined score {report.combined_score:.3f} {relation} "
            f"threshold {threshold:g}{named}; {heaviest.stage} weighed most (weight "
            f"{share:.0%} of the score, {heaviest.stage} {heaviest.score:.3f}){shared}"
        )
    stated = ", ".join(
        f"{r.stage} {r.score:.3f} {'>=' if r.verdict == 'similar' else '<'} {r.threshold:g}"
        for r in judged
    )
    how = (
        "the first dissimilar stage stops the cascade"
        if report.mode == "cascade"
        else ("every stage judged, one dissimilar decides")
    )
    return f"{asked}: {report.verdict} by the stages ({report.mode}: {how}): {stated}"
