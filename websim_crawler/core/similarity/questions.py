"""Named similarity questions: which stages answer "are these pages similar?", and how.

"Similar" means different things to different users: two captures of one site share links
(``same-site``), the result pages of a search site share a template (``same-template``), a copy of
a page on another host looks like it (``looks-alike``), two renderings of one article say the same
(``same-content``). Each question is a set of stage weights and a threshold on their weighted mean
(the combined score of ``compare_pages``), fitted with ``StageCombiner`` on several labelled sets
at once with all four stages available (``benchmarks/similarity_questions.py``; the held-out F1s
are in ``benchmarks/RESULTS.md``).

``WEBSIM_SIMILARITY_QUESTION`` chooses one; ``auto`` lets each entry point ask its own user's
question (``websim compare``: ``looks-alike``; ``websim similar`` and the pipeline:
``same-template``), and ``custom`` keeps ``WEBSIM_SIMILARITY_STAGE_WEIGHTS`` and
``WEBSIM_SIMILARITY_COMBINED_THRESHOLD`` (or a weights file) as they are set.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from websim_crawler.core.similarity.params import QUESTION_NAMES, STAGES, SimilarityParams
from websim_crawler.errors import ConfigError


@dataclass(frozen=True)
class Question:
    """A named question: what it answers, its stage weights and its combined threshold."""

    name: str
    answers: str
    stage_weights: tuple[float, float, float, float]  # layout, text, links, visual
    threshold: float
    # In a collection of at least ``templates.CHROME_MIN_PAGES`` pages, judge a pair by its
    # template classes (``templates.template_class_similarity``, the collection's chrome
    # discounted) at this threshold instead of by the stages; None: by the stages everywhere.
    template_classes_threshold: float | None = None
    # Two pages alone (or a smaller collection), both using class names: judged by the share of
    # the class names they both use (``template_classes.pair_class_similarity``) at this
    # threshold instead of by the stages; None: by the stages.
    pair_classes_threshold: float | None = None
    # Against a reference index, the share of the brand score (``brand.brand_similarity``: the
    # rare brand words and images both pages have) in the score a match is ranked and judged by;
    # the rest is the combined score of the stages. 0: the stages alone.
    brand_weight: float = 0.0
    # Against a reference index, a pair whose pages do not both name one brand (``BrandScore.
    # named``: a rare word in the title or form host, or a shared picture) is judged at this
    # threshold instead (a publisher's sister sites share a template and assets, not a name);
    # None: every pair at ``threshold``.
    unnamed_threshold: float | None = None
    # The layout and links stages weigh each template feature and link by its rarity across
    # the references (``rarity.rare_template_similarity``, ``rarity.rare_link_similarity``), so a
    # toolkit's skeleton common to its pages stops outweighing the brand; False: the plain stages.
    rare_templates: bool = False

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages that weigh in this question's answer."""
        return tuple(
            stage for stage, weight in zip(STAGES, self.stage_weights, strict=True) if weight > 0
        )


# Fitted by ``benchmarks/similarity_questions.py`` (weights and threshold that maximise the mean
# F1 over the labelled sets; the held-out F1s are in RESULTS.md); looks-alike by its logistic fit
# (``StageCombiner``, on six sets, four of them rendered with screenshots), whose held-out F1s
# beat the grid's (worst set 0.986 against 0.972). same-template is answered by its template
# classes threshold in a collection, and two pages alone (``websim compare --question
# same-template``) by the class names they share, each fitted the same way: no fit of the stages
# alone tells a site's templates apart (a result list and a record share the site's chrome; see
# RESULTS.md); the layout stage answers pages without class names.
# brand: looks-alike's stage weights (its template stages weighed by rarity) but the visual
# stage's, which the same fit with every page's screenshot weighs 0 (``--fit --screenshots``:
# whole-page colours tell how a page looks, not which brand; white login pages of any brands
# match, and put another brand's page ahead of the brand's own capture); the brand share and
# threshold fitted on ShellPhish's pages against zphisher's and trafilatura-eval pages
# (``benchmarks/brand_identification.py --fit``; HiddenEye and the article pages held out). A pair
# whose pages do not both name the brand must look alike as ``looks-alike`` demands: at the
# fitted threshold alone 18 of 120 article pages are judged similar to a sister site of their
# publisher's template (RESULTS.md).
BRAND_WEIGHT = 0.419
BRAND_THRESHOLD = 0.315
LOOKS_ALIKE_THRESHOLD = 0.5745
QUESTIONS: dict[str, Question] = {
    question.name: question
    for question in (
        Question(
            "same-site",
            "are both pages from the same site (links lead)?",
            (0.0, 0.0, 1.0, 0.0),
            0.003683,
        ),
        Question(
            "same-template",
            "are both pages filled into the same template (a result list and a record are not)?",
            (1.0, 0.0, 0.0, 0.0),
            0.8,
            template_classes_threshold=0.29,
            pair_classes_threshold=0.8,
        ),
        Question(
            "looks-alike",
            "does one page look like the other, also as a copy on another host or a render "
            "with scripts off (layout leads; text, links and the screenshots weigh in)?",
            (0.5139, 0.2459, 0.1681, 0.0721),
            LOOKS_ALIKE_THRESHOLD,
        ),
        Question(
            "same-content",
            "do both pages say the same thing, whatever their template (text leads)?",
            (0.0, 0.9804, 0.0196, 0.0),
            0.2814,
        ),
        Question(
            "brand",
            "which brand does the page imitate (the rare template features, text and rare links "
            "both pages have, and the rare brand words and images; not the screenshots' colours)?",
            (0.5139, 0.2459, 0.1681, 0.0),
            BRAND_THRESHOLD,
            brand_weight=BRAND_WEIGHT,
            unnamed_threshold=LOOKS_ALIKE_THRESHOLD,
            rare_templates=True,
        ),
    )
}
AUTO, CUSTOM = "auto", "custom"
if tuple(QUESTIONS) != QUESTION_NAMES:  # the setting's choices are declared in params
    raise AssertionError(f"QUESTION_NAMES must list {tuple(QUESTIONS)}")
# What each entry point asks when the question is ``auto``.
COMPARE_QUESTION = "looks-alike"
COLLECTION_QUESTION = "same-template"


def ask(params: SimilarityParams, default: str) -> SimilarityParams:
    """Return ``params`` answering its question (``default`` when it is ``auto``).

    A named question sets the stage weights and the combined threshold (judged by them in the
    ``combined`` mode, the default); a weights file given with ``auto`` is the user's own question
    (``custom``), and ``custom`` keeps the weights and threshold as set.
    """
    if default not in QUESTIONS:
        raise ConfigError(f"default question must be one of {tuple(QUESTIONS)}, got {default!r}")
    name = params.question
    if name == AUTO:
        name = CUSTOM if params.weights_file else default
    if name == CUSTOM:
        return dataclasses.replace(params, question=CUSTOM)
    question = QUESTIONS[name]
    return dataclasses.replace(
        params,
        question=name,
        stage_weights=question.stage_weights,
        combined_threshold=question.threshold,
    )


def rare_templates(params: SimilarityParams) -> bool:
    """Return whether ``params``' question weighs template features and links by rarity."""
    question = QUESTIONS.get(params.question)
    return question is not None and question.rare_templates


def brand_weight(params: SimilarityParams) -> float:
    """Return the share of the brand score in a match's score for ``params``' question."""
    question = QUESTIONS.get(params.question)
    return 0.0 if question is None else question.brand_weight


def unnamed_threshold(params: SimilarityParams) -> float | None:
    """Return the threshold of a pair whose pages do not both name one brand, for ``params``'
    question (None: judged at its combined threshold)."""
    question = QUESTIONS.get(params.question)
    return None if question is None else question.unnamed_threshold
