"""The settings of the page analysis (``AnalysisParams``), each bound to a ``WEBSIM_*`` setting."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.html.parsing import ParseLimits
from websim_crawler.core.params import setting, validate
from websim_crawler.core.text import DEFAULT_STEMMER, STEMMERS


@dataclass(frozen=True)
class AnalysisParams:
    """The constants of the page analysis, each bound to a ``WEBSIM_*`` setting."""

    max_page_bytes: int = setting(
        32_000_000, "WEBSIM_MAX_PAGE_BYTES", "larger pages are dropped as too_large", minimum=1
    )
    max_elements: int = setting(
        200_000,
        "WEBSIM_MAX_ELEMENTS",
        "pages with more elements are dropped as too_many_elements, counted while parsing",
        minimum=1,
    )
    language: str | None = setting(
        None, "WEBSIM_LANGUAGE", "force this ISO 639-1 language instead of detecting it"
    )
    noscript_keep_chars: int = setting(
        1000,
        "WEBSIM_NOSCRIPT_KEEP_CHARS",
        "addition: a noscript element holding at least this many characters of text is kept "
        "as content (a script-free copy of the post, or a page swallowed by a broken noscript; "
        "0: every noscript is dropped)",
        minimum=0,
    )
    stem_chunk_keywords: bool = setting(
        True,
        "WEBSIM_STEM_CHUNK_KEYWORDS",
        "stem the keywords of every chunk for its features (False: unstemmed tokens, the "
        "main content's keywords are stemmed anyway)",
    )
    stemmer: str = setting(
        DEFAULT_STEMMER,
        "WEBSIM_STEMMER",
        "snowball: Snowball stemmers in C (PyStemmer; English: Porter2); porter: the same with "
        "Porter's original English algorithm; nltk: NLTK's Python stemmers (English: NLTK's "
        "Porter variant), NLTK imported only then",
        choices=STEMMERS,
    )
    noise_filter: bool = setting(True, "WEBSIM_NOISE_FILTER", "remove noise chunks (step 3)")
    hyperlink_threshold: float = setting(
        0.5,
        "WEBSIM_HYPERLINK_THRESHOLD",
        "a chunk whose hyperlink percentage n_l/N is above this is noise",
        minimum=0.0,
        maximum=1.0,
    )
    noise_score_threshold: float = setting(
        0.5,
        "WEBSIM_NOISE_SCORE_THRESHOLD",
        "a chunk whose noise score n_I/N_B is above this is noise",
        minimum=0.0,
        maximum=1.0,
    )
    image_block_max_keywords: int = setting(
        10,
        "WEBSIM_IMAGE_BLOCK_MAX_KEYWORDS",
        "apply the noise score only to chunks with at most this many keywords (-1: to all)",
        minimum=-1,
    )
    main_expansion: bool = setting(
        True,
        "WEBSIM_MAIN_EXPANSION",
        "addition: kept leaf chunks beside the best main chunk under its parent join the main "
        "content when they are link-poor (lists, fact boxes next to the article)",
    )
    expansion_link_threshold: float = setting(
        0.2,
        "WEBSIM_EXPANSION_LINK_THRESHOLD",
        "main expansion: highest hyperlink percentage of a joining chunk",
        minimum=0.0,
        maximum=1.0,
    )
    expansion_min_keywords: int = setting(
        3,
        "WEBSIM_EXPANSION_MIN_KEYWORDS",
        "main expansion: fewest keywords of a joining chunk",
        minimum=0,
    )
    markup_hints: bool = setting(
        True,
        "WEBSIM_MARKUP_HINTS",
        "addition: chunks inside nav/aside/footer or a class/id/role naming page furniture "
        "(comments, share, related, sidebar...) are noise",
    )
    markup_hint_max_share: float = setting(
        0.5,
        "WEBSIM_MARKUP_HINT_MAX_SHARE",
        "a furniture-named container holding this share of the page's link-poor text or more "
        "is a page wrapper and its hint is ignored (comment hints always hold)",
        minimum=0.0,
        maximum=1.0,
    )
    markup_hint_min_rest: float = setting(
        0.1,
        "WEBSIM_MARKUP_HINT_MIN_REST",
        "addition: when the markup hints leave less than this share of the page's link-poor "
        "text unhinted, the furniture word holding most of it is ignored: the page builder's "
        "name for its blocks (elementor-widget) or a forum thread's comments (0: off)",
        minimum=0.0,
        maximum=1.0,
    )
    content_name_overrule: bool = setting(
        False,
        "WEBSIM_CONTENT_NAME_OVERRULE",
        "addition, off by default: a container whose class/id is made only of content words "
        "(main-story, article-body) is no furniture even inside a furniture-named one (comment "
        "hints hold)",
    )
    lead_levels: int = setting(
        6,
        "WEBSIM_LEAD_LEVELS",
        "addition: the nearest kept leaf of running text before the main content under its "
        "ancestor this many levels up joins it (the lead paragraph; 0: off)",
        minimum=0,
    )
    tail_leaf_share: float = setting(
        0.15,
        "WEBSIM_TAIL_LEAF_SHARE",
        "addition: main-content leaf chunks after the last one holding this share of the "
        "largest one's text are dropped (author notes, calls to subscribe; 0: off)",
        minimum=0.0,
        maximum=1.0,
    )
    title_line_filter: bool = setting(
        True,
        "WEBSIM_TITLE_LINE_FILTER",
        "addition: drop main-content lines that repeat the page title (the headline)",
    )
    furniture_line_filter: bool = setting(
        True,
        "WEBSIM_FURNITURE_LINE_FILTER",
        "addition: drop main-content lines inside furniture-named elements (byline, date, share) "
        "or <time>, and copyright notices",
    )
    caption_filter: bool = setting(
        True, "WEBSIM_CAPTION_FILTER", "addition: drop figure and table captions from main content"
    )
    line_link_threshold: float = setting(
        1.0,
        "WEBSIM_LINE_LINK_THRESHOLD",
        "addition: drop main-content lines (not headings) whose share of link text is above this "
        "(1: off)",
        minimum=0.0,
        maximum=1.0,
    )
    teaser_line_filter: bool = setting(
        True,
        "WEBSIM_TEASER_LINE_FILTER",
        "addition: drop teaser lines inside the main content: 'Label: <link>' lines and short "
        "labels ending with ':' or '?' right before a link line ('Read also:', 'Czytaj też')",
    )
    edge_link_trim: bool = setting(
        True,
        "WEBSIM_EDGE_LINK_TRIM",
        "addition: drop lines mostly of link text (not headings) from the start and end of the "
        "main content (tag lists, 'Read more' links)",
    )
    orphan_heading_filter: bool = setting(
        True,
        "WEBSIM_ORPHAN_HEADING_FILTER",
        "addition: drop short main-content headings no running text follows before the next "
        "heading or the end ('More on this topic' over links, 'News' at the bottom)",
    )
    edge_trim_chars: int = setting(
        40,
        "WEBSIM_EDGE_TRIM_CHARS",
        "addition: drop lines shorter than this that end no sentence from the start and end of "
        "the main content (labels, dates, 'Related posts'; 0: off)",
        minimum=0,
    )
    duplicate_filter: bool = setting(
        True, "WEBSIM_DUPLICATE_FILTER", "remove duplicate chunks within a page (step 4)"
    )
    duplicate_threshold: float = setting(
        0.9,
        "WEBSIM_DUPLICATE_THRESHOLD",
        "chunks whose keyword-vector cosine is at or above this are duplicates",
        minimum=0.0,
        maximum=1.0,
    )
    template_filter: bool = setting(
        True, "WEBSIM_TEMPLATE_FILTER", "remove chunks repeated on many pages of a site"
    )
    template_min_pages: int = setting(
        3, "WEBSIM_TEMPLATE_MIN_PAGES", "earlier pages of a site a template chunk is on", minimum=1
    )
    template_memory_sites: int = setting(
        1000, "WEBSIM_TEMPLATE_MEMORY_SITES", "sites the template memory keeps", minimum=1
    )
    template_memory_chunks: int = setting(
        20_000, "WEBSIM_TEMPLATE_MEMORY_CHUNKS", "fingerprints kept per site", minimum=1
    )
    title_weight: float = setting(
        0.4, "WEBSIM_TITLE_WEIGHT", "alpha: weight of the title word relevancy T_K", minimum=0.0
    )
    frequency_weight: float = setting(
        0.3, "WEBSIM_FREQUENCY_WEIGHT", "beta: weight of the keyword frequency K_f", minimum=0.0
    )
    position_weight: float = setting(
        0.3, "WEBSIM_POSITION_WEIGHT", "gamma: weight of the position feature PF_r", minimum=0.0
    )
    top_keywords: int = setting(
        5, "WEBSIM_TOP_KEYWORDS", "K: top keywords summed by K_f", minimum=1
    )
    position_threshold: float = setting(
        0.7,
        "WEBSIM_POSITION_THRESHOLD",
        "PF_r is 1 when the position ratio T is at or above this",
        minimum=0.0,
        maximum=1.0,
    )
    position_margin: float = setting(
        0.1,
        "WEBSIM_POSITION_MARGIN",
        "share of the page at each edge outside the central region used by T",
        minimum=0.0,
        maximum=0.45,
    )
    removed_penalty: float = setting(
        1.0,
        "WEBSIM_REMOVED_PENALTY",
        "main-chunk choice: weight subtracted per unit of removed sub-chunk weight",
        minimum=0.0,
    )
    size_exponent: float = setting(
        1.0,
        "WEBSIM_SIZE_EXPONENT",
        "main-chunk choice: sub-chunk weight scaled by N**exponent (0: the paper's plain sum)",
        minimum=0.0,
        maximum=2.0,
    )
    main_chunk_ratio: float = setting(
        0.5,
        "WEBSIM_MAIN_CHUNK_RATIO",
        "other main chunks scoring at least this share of the best join the main content",
        minimum=0.0,
        maximum=1.0,
    )

    @property
    def parse_limits(self) -> ParseLimits:
        """Return the limits every parse of a page obeys (``core.html.parsing``)."""
        return ParseLimits(max_bytes=self.max_page_bytes, max_elements=self.max_elements)

    def __post_init__(self) -> None:
        validate(self)


DEFAULT_PARAMS = AnalysisParams()
