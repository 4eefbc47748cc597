"""The ``websim`` commands' setting flags: each flag is an alias of one ``WEBSIM_*`` setting.

Default, type and choices of a flag are its setting's (``websim_crawler.config``);
``cli._settings`` adds the flags to each command's parser and lays them over ``-s``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandFlag:
    """A ``websim`` command-line flag that is an alias of one setting.

    Its default, type and choices are the setting's.
    """

    commands: tuple[str, ...]
    flags: tuple[str, ...]
    setting: str
    help: str


# Every flag of the ``websim`` commands that sets a setting, declared once. Precedence: a flag
# given on the command line beats the same setting given with ``-s``, which beats the default.
COMMAND_FLAGS: tuple[CommandFlag, ...] = (
    CommandFlag(("extract",), ("--chunks",), "WEBSIM_CHUNK_DETAIL", "which chunks to write"),
    CommandFlag(
        ("extract",), ("--language",), "WEBSIM_LANGUAGE", "ISO 639-1 language of the pages"
    ),
    CommandFlag(
        ("extract",),
        ("--workers",),
        "WEBSIM_ANALYSIS_WORKERS",
        "worker processes that analyse the pages (0: this one)",
    ),
    CommandFlag(("cluster",), ("-o", "--output"), "WEBSIM_CLUSTERS_OUTPUT", "clusters JSON file"),
    CommandFlag(("cluster",), ("--html",), "WEBSIM_CLUSTERS_HTML", "also write an HTML report"),
    CommandFlag(
        ("cluster", "demo"),
        ("--n-clusters",),
        "WEBSIM_CLUSTERS_N",
        "number of clusters, or 'auto' (chosen by a validity index)",
    ),
    CommandFlag(
        ("cluster",),
        ("--kind",),
        "WEBSIM_CLUSTERS_KIND",
        "pages to cluster: record (record pages, site pages and pages without a kind), "
        "results, all",
    ),
    CommandFlag(
        ("cluster",),
        ("--max-clusters",),
        "WEBSIM_CLUSTERS_MAX_K",
        "auto tries 2..min(this, pages / 5) clusters, coarse to fine",
    ),
    CommandFlag(
        ("cluster",), ("--index",), "WEBSIM_CLUSTERS_AUTO_INDEX", "validity index auto picks by"
    ),
    CommandFlag(
        ("cluster",),
        ("-m", "--fuzziness"),
        "WEBSIM_CLUSTERS_FUZZINESS",
        "fuzzy c-means exponent m > 1",
    ),
    CommandFlag(("cluster",), ("--metric",), "WEBSIM_CLUSTERS_METRIC", "distance of the rows"),
    CommandFlag(
        ("cluster",),
        ("--svd-components",),
        "WEBSIM_CLUSTERS_SVD_COMPONENTS",
        "LSA dimensions before clustering, 0 for none",
    ),
    CommandFlag(("cluster",), ("--n-init",), "WEBSIM_CLUSTERS_N_INIT", "runs per fit"),
    CommandFlag(("cluster",), ("--seed",), "WEBSIM_CLUSTERS_SEED", "random seed"),
    CommandFlag(
        ("cluster",),
        ("--engine",),
        "WEBSIM_CLUSTERS_ENGINE",
        "memory: fuzzy c-means in this process; dask: its iterations over row chunks on a "
        "Dask cluster, same clusters",
    ),
    CommandFlag(
        ("cluster",),
        ("--scheduler",),
        "WEBSIM_CLUSTERS_SCHEDULER",
        "with --engine dask: a running scheduler (tcp://host:8786); unset: a local cluster "
        "started for this run",
    ),
    CommandFlag(("similar",), ("-o", "--output"), "WEBSIM_SIMILARITY_OUTPUT", "pairs JSON file"),
    CommandFlag(
        ("compare", "similar", "match", "serve"),
        ("--question",),
        "WEBSIM_SIMILARITY_QUESTION",
        "what similar means (auto: compare and match looks-alike, similar same-template)",
    ),
    CommandFlag(
        ("compare", "similar", "match", "serve"),
        ("--mode",),
        "WEBSIM_SIMILARITY_PAIRS_MODE",
        "compare as a cascade, in full, or by the combined score alone",
    ),
    CommandFlag(
        ("compare", "similar", "match", "serve"),
        ("--weights",),
        "WEBSIM_SIMILARITY_WEIGHTS_FILE",
        "JSON stage weights fitted with StageCombiner",
    ),
    CommandFlag(
        ("compare", "index"),
        ("--layout-measure",),
        "WEBSIM_SIMILARITY_LAYOUT_MEASURE",
        "layout stage measure",
    ),
    CommandFlag(
        ("similar",),
        ("--blocking-min-pages",),
        "WEBSIM_SIMILARITY_BLOCKING_MIN_PAGES",
        "MinHash/LSH blocking above this many pages",
    ),
    CommandFlag(("match", "serve"), ("--index",), "WEBSIM_MATCH_INDEX", "reference index file"),
    CommandFlag(("match", "serve"), ("--top",), "WEBSIM_MATCH_TOP", "best references per page"),
    CommandFlag(("serve",), ("--host",), "WEBSIM_SERVE_HOST", "address to listen on"),
    CommandFlag(("serve",), ("--port",), "WEBSIM_SERVE_PORT", "port to listen on (0: any free)"),
    CommandFlag(
        ("serve",),
        ("--token",),
        "WEBSIM_SERVE_TOKEN",
        "token every request must carry (Authorization: Bearer TOKEN); required beyond loopback",
    ),
    CommandFlag(("neardup",), ("-o", "--output"), "WEBSIM_NEARDUP_OUTPUT", "report JSON file"),
    CommandFlag(
        ("neardup",),
        ("--method",),
        "WEBSIM_NEARDUP_METHOD",
        "exact sentence index, or MinHash/LSH candidates",
    ),
    CommandFlag(
        ("neardup",),
        ("--engine",),
        "WEBSIM_NEARDUP_ENGINE",
        "memory: the exact index in this process; dask: the exact index as a Dask bag on a "
        "cluster, same pairs",
    ),
    CommandFlag(
        ("neardup",),
        ("--scheduler",),
        "WEBSIM_NEARDUP_SCHEDULER",
        "with --engine dask: a running scheduler (tcp://host:8786); unset: a local cluster "
        "started for this run",
    ),
    CommandFlag(
        ("neardup",),
        ("--dask-workers",),
        "WEBSIM_NEARDUP_DASK_WORKERS",
        "with --engine dask and no --scheduler: workers of the local cluster",
    ),
    CommandFlag(
        ("neardup",),
        ("-L", "--min-sentence-chars"),
        "WEBSIM_NEARDUP_MIN_SENTENCE_CHARS",
        "L: shortest sentence compared, in characters",
    ),
    CommandFlag(
        ("neardup",),
        ("-F", "--max-frequency"),
        "WEBSIM_NEARDUP_MAX_SENTENCE_FREQUENCY",
        "F: sentences on more pages are ignored as boilerplate",
    ),
    CommandFlag(
        ("neardup",),
        ("--min-shared",),
        "WEBSIM_NEARDUP_MIN_SHARED_SENTENCES",
        "fewest shared sentences of a reported pair",
    ),
    CommandFlag(
        ("neardup",),
        ("--lsh-threshold",),
        "WEBSIM_NEARDUP_LSH_THRESHOLD",
        "minhash: Jaccard similarity the LSH is tuned to",
    ),
    CommandFlag(
        ("neardup",), ("--spill-dir",), "WEBSIM_NEARDUP_SPILL_DIR", "folder for temporary files"
    ),
    CommandFlag(
        ("seed",),
        ("--redis",),
        "WEBSIM_REDIS_URL",
        "Redis URL, e.g. redis://host:6379/0 (also read from $WEBSIM_REDIS_URL)",
    ),
    CommandFlag(
        ("seed",), ("--prefix",), "WEBSIM_REDIS_PREFIX", "key prefix, as the workers' setting"
    ),
)
