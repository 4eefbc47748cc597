"""The constants of near-duplicate detection, each bound to a ``WEBSIM_NEARDUP_*`` setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError

if TYPE_CHECKING:  # the pages module imports NumPy and the analysis
    from websim_crawler.core.neardup.pages import SavedSentences

METHODS = ("exact", "minhash")
ENGINES = ("memory", "dask")
REGIONS = ("main", "content")


class NeardupRecord(TypedDict, total=False):
    """What the near-duplicate stage takes of one page, prepared where the page is parsed
    (``core.stages``): its link and sentence hashes, or why it has none."""

    url: str | None
    neardup_sentences: SavedSentences
    neardup_skipped: str  # no_url, no_html or the analysis' reason


@dataclass(frozen=True)
class NeardupParams:
    """Content-region rule, sentence selection (L, F), pair classes, relations and scaling."""

    output: str | None = setting(
        None, "WEBSIM_NEARDUP_OUTPUT", "write the near-duplicate report here when a crawl ends"
    )
    method: str = setting(
        "exact",
        "WEBSIM_NEARDUP_METHOD",
        "exact: sentence index; minhash: datasketch MinHash/LSH candidates, then exact check",
        choices=METHODS,
    )
    engine: str = setting(
        "memory",
        "WEBSIM_NEARDUP_ENGINE",
        "where websim neardup builds the sentence index: memory (this process, spilling to disk) "
        "or dask (the exact index as a Dask bag on a cluster); a crawl's pipeline indexes in "
        "memory",
        choices=ENGINES,
    )
    scheduler: str | None = setting(
        None,
        "WEBSIM_NEARDUP_SCHEDULER",
        "dask engine: scheduler address (tcp://host:8786); unset: a local cluster started for "
        "the run",
    )
    dask_workers: int = setting(
        2,
        "WEBSIM_NEARDUP_DASK_WORKERS",
        "dask engine without a scheduler: worker processes of the local cluster",
        minimum=1,
        maximum=1024,
    )
    region: str = setting(
        "main",
        "WEBSIM_NEARDUP_REGION",
        "main: the analysis' main chunks when the item carries them, else the content blocks; "
        "content: the content blocks of every chunk",
        choices=REGIONS,
    )
    link_ratio: float = setting(
        0.5,
        "WEBSIM_NEARDUP_LINK_RATIO",
        "a block whose hyperlink percentage is at or above this may be non-content",
        minimum=0.0,
        maximum=1.0,
    )
    noncontent_sentence_chars: int = setting(
        80,
        "WEBSIM_NEARDUP_NONCONTENT_SENTENCE_CHARS",
        "... and is non-content when its longest sentence has at most this many characters",
        minimum=0,
    )
    min_sentence_chars: int = setting(
        30,
        "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS",
        "L: only sentences of at least this many characters are compared",
        minimum=1,
    )
    max_sentence_frequency: int = setting(
        30,
        "WEBSIM_NEARDUP_MAX_SENTENCE_FREQUENCY",
        "F: sentences on more pages than this are boilerplate and ignored",
        minimum=2,
    )
    site_template_share: float = setting(
        0.5,
        "WEBSIM_NEARDUP_SITE_TEMPLATE_SHARE",
        "a sentence on at least this share of its site's pages is that site's template",
        minimum=0.0,
        maximum=1.0,
    )
    site_template_min_pages: int = setting(
        5,
        "WEBSIM_NEARDUP_SITE_TEMPLATE_MIN_PAGES",
        "... when it is on at least this many of them",
        minimum=2,
    )
    min_shared_sentences: int = setting(
        2,
        "WEBSIM_NEARDUP_MIN_SHARED_SENTENCES",
        "pairs sharing fewer selected sentences are not reported",
        minimum=1,
    )
    inclusion_tolerance: int = setting(
        1,
        "WEBSIM_NEARDUP_INCLUSION_TOLERANCE",
        "sentences of the smaller page (a heading, a date line) the larger may lack in an "
        "inclusion, with 3 shared sentences for each",
        minimum=0,
    )
    mirror_path_similarity: float = setting(
        0.5,
        "WEBSIM_NEARDUP_MIRROR_PATH_SIMILARITY",
        "identical pages on different hosts are mirrors when this share of path segments match",
        minimum=0.0,
        maximum=1.0,
    )
    partitions: int = setting(
        64,
        "WEBSIM_NEARDUP_PARTITIONS",
        "hash partitions the sentence index spills to disk (more: less memory per partition)",
        minimum=1,
        maximum=4096,
    )
    buffer_entries: int = setting(
        2_000_000,
        "WEBSIM_NEARDUP_BUFFER_ENTRIES",
        "(sentence, page) entries held in memory before a spill (12 bytes each)",
        minimum=1000,
    )
    spill_dir: str | None = setting(
        None, "WEBSIM_NEARDUP_SPILL_DIR", "folder for the index's temporary files (default: TMPDIR)"
    )
    lsh_threshold: float = setting(
        0.5,
        "WEBSIM_NEARDUP_LSH_THRESHOLD",
        "minhash method: Jaccard similarity the LSH is tuned to find",
        minimum=0.01,
        maximum=1.0,
    )
    num_perm: int = setting(
        64, "WEBSIM_NEARDUP_NUM_PERM", "minhash method: permutations per MinHash", minimum=8
    )
    sketch_width: int = setting(
        1 << 22,
        "WEBSIM_NEARDUP_SKETCH_WIDTH",
        "minhash method: counters per row of the count-min sketch of sentence frequencies",
        minimum=1024,
    )

    def __post_init__(self) -> None:
        validate(self)
        if self.engine == "dask" and self.method != "exact":
            raise ConfigError(
                "WEBSIM_NEARDUP_ENGINE=dask builds the exact sentence index: it takes "
                f"WEBSIM_NEARDUP_METHOD=exact, got {self.method!r}"
            )
        if self.sketch_width & (self.sketch_width - 1):
            raise ConfigError(
                f"WEBSIM_NEARDUP_SKETCH_WIDTH must be a power of two, got {self.sketch_width}"
            )
