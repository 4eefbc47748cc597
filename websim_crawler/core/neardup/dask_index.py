"""The sentence index as a Dask bag, for collections one machine cannot index alone.

Same selection and classes as the exact index: pages are read from JSON Lines in blocks, each
worker extracts content-region sentences, ``foldby`` gathers the pages of each sentence (capped
at F + 1, which is enough to tell a frequent sentence), a sentence's pages on a site it is the
template of are dropped (the exact index's rule), the other sentences on at most F pages count
towards their pages' totals, and those on 2..F pages give their page pairs, counted with
``frequencies``. Run it on any ``dask.distributed`` client, a ``LocalCluster`` included.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from websim_crawler._imports import require
from websim_crawler.core.neardup.detect import (
    NeardupReport,
    classify_pairs,
    report_stats,
)
from websim_crawler.core.neardup.index import IndexStats, SiteTemplateRule
from websim_crawler.core.neardup.pages import page_sentences
from websim_crawler.core.neardup.params import NeardupParams
from websim_crawler.core.urls import registered_domain_of
from websim_crawler.errors import PageError

logger = logging.getLogger(__name__)

# A record of the extracted bag: ("page", url, link hashes, sentence hashes) or ("drop", reason).
Record = tuple[Any, ...]


def _extract(line: str, params: NeardupParams) -> Record:
    if not line.strip():
        return ("drop", "blank_line")
    try:
        item = json.loads(line)
    except json.JSONDecodeError:
        return ("drop", "invalid_json")
    if not isinstance(item, dict):
        return ("drop", "not_an_object")
    return _page_record(item, params)


def _page_record(item: dict[str, Any], params: NeardupParams) -> Record:
    try:
        page = page_sentences(item, params)
    except PageError as exc:
        return ("drop", exc.reason)
    return (
        "page",
        page.url,
        tuple(page.link_hashes.tolist()),
        tuple(page.sentence_hashes.tolist()),
    )


def _archive_pages(
    path: str, params: NeardupParams, max_page_bytes: int, engine: str
) -> list[Record]:
    """Read one WARC/WACZ in a worker: a record per page, a drop per record left out."""
    from websim_crawler.core.archive.reading import archive_records

    return [
        ("drop", item) if isinstance(item, str) else _page_record(item, params)
        for item in archive_records(path, max_page_bytes=max_page_bytes, engine=engine)
    ]


def _add_capped(cap: int, pages: tuple[str, ...], entry: tuple[int, str]) -> tuple[str, ...]:
    return pages if len(pages) > cap else (*pages, entry[1])


def _merge_capped(cap: int, left: tuple[str, ...], right: tuple[str, ...]) -> tuple[str, ...]:
    return left if len(left) > cap else (*left, *right)[: cap + 1]


def _entries(record: Record) -> list[tuple[int, str]]:
    return [(sentence, record[1]) for sentence in record[3]]


def _without_site_template(
    members: tuple[str, ...], rule: SiteTemplateRule, site_pages: dict[str, int]
) -> tuple[tuple[str, ...], int]:
    """Drop a sentence's pages of the sites it is template of; also return how many sites."""
    on_site = Counter(registered_domain_of(url) for url in members)
    template = {
        site for site, count in on_site.items() if rule.is_template(count, site_pages[site])
    }
    return tuple(url for url in members if registered_domain_of(url) not in template), len(template)


def _pairs(pages: tuple[str, ...]) -> list[tuple[str, str]]:
    return list(combinations(sorted(pages), 2))


def dask_near_duplicates(
    paths: str | Sequence[str],
    params: NeardupParams | None = None,
    *,
    blocksize: str | int | None = "16MiB",
    archives: Sequence[str] = (),
    max_page_bytes: int = 32_000_000,
    archive_engine: str = "auto",
) -> NeardupReport:
    """Find near duplicates in JSON Lines files and WARC/WACZ ``archives`` (one task per
    archive, read in the worker) with Dask (uses the current Dask client)."""
    bag_module = require("dask.bag")
    dask = require("dask")
    params = params or NeardupParams()
    started = time.perf_counter()
    cap = params.max_sentence_frequency
    path_list = [paths] if isinstance(paths, str) else list(paths)
    compressed = any(path.endswith(".gz") for path in path_list)
    bags = []
    if path_list:
        lines = bag_module.read_text(path_list, blocksize=None if compressed else blocksize)
        bags.append(lines.map(_extract, params))
    if archives:
        tasks = bag_module.from_sequence(list(archives), npartitions=len(archives))
        bags.append(tasks.map(_archive_pages, params, max_page_bytes, archive_engine).flatten())
    records = bags[0] if len(bags) == 1 else bag_module.concat(bags)
    dropped = records.filter(lambda record: record[0] == "drop").pluck(1).frequencies()
    pages = records.filter(lambda record: record[0] == "page")
    unique_pages = pages.distinct(key=lambda record: record[1]).persist()
    groups = (
        unique_pages.map(_entries)
        .flatten()
        .foldby(
            key=0,
            binop=lambda acc, entry: _add_capped(cap, acc, entry),
            initial=(),
            combine=lambda left, right: _merge_capped(cap, left, right),
            combine_initial=(),
        )
    )
    site_pages = dict(
        unique_pages.map(lambda record: registered_domain_of(record[1])).frequencies().compute()
    )
    rule = SiteTemplateRule(params.site_template_share, params.site_template_min_pages)
    not_frequent = groups.pluck(1).filter(lambda members: len(members) <= cap)
    filtered = not_frequent.map(_without_site_template, rule, site_pages)
    selected = filtered.pluck(0)
    shared_groups = selected.filter(lambda members: len(members) >= 2)
    (
        n_page_records,
        n_unique,
        drops,
        page_counts,
        pair_counts,
        n_entries,
        n_distinct,
        n_selected,
        n_template,
        n_shared,
    ) = dask.compute(
        pages.count(),
        unique_pages.count(),
        dropped,
        selected.flatten().frequencies(),
        shared_groups.map(_pairs).flatten().frequencies(),
        unique_pages.map(lambda record: len(record[3])).sum(),
        groups.count(),
        not_frequent.count(),
        filtered.pluck(1).sum(),
        shared_groups.count(),
    )
    kept_pairs = [
        (pair, count) for pair, count in pair_counts if count >= params.min_shared_sentences
    ]
    needed = {url for (first, second), _ in kept_pairs for url in (first, second)}
    infos = unique_pages.filter(lambda record: record[1] in needed).pluck([1, 2]).compute()
    ids = {url: number for number, url in enumerate(sorted(needed))}
    counts_by_url = dict(page_counts)
    page_info = {ids[url]: (url, frozenset(links)) for url, links in infos}
    counts = np.zeros(len(ids), dtype=np.int64)
    for url, number in ids.items():
        counts[number] = counts_by_url.get(url, 0)
    kept_pairs.sort()
    first_ids = np.asarray([ids[first] for (first, _), _ in kept_pairs], dtype=np.int64)
    second_ids = np.asarray([ids[second] for (_, second), _ in kept_pairs], dtype=np.int64)
    shared = np.asarray([count for _, count in kept_pairs], dtype=np.int64)
    pairs = classify_pairs(first_ids, second_ids, shared, counts, page_info, params)
    drop_counts = {reason: count for reason, count in drops if reason != "blank_line"}
    n_seen = n_page_records + sum(drop_counts.values())
    if n_page_records > n_unique:
        drop_counts["duplicate_url"] = n_page_records - n_unique
    index_stats = IndexStats(
        entries=int(n_entries),
        distinct_sentences=int(n_distinct),
        frequent_sentences=int(n_distinct) - int(n_selected),
        site_template_sentences=int(n_template),
        shared_sentences=int(n_shared),
        pair_entries=int(sum(count for _, count in pair_counts)),
    )
    n_without = n_unique - len(counts_by_url)
    stats = report_stats(
        pairs,
        method="dask",
        pages={
            "seen": int(n_seen),
            "indexed": int(n_unique),
            "without_selected_sentences": int(n_without),
            "dropped": dict(sorted(drop_counts.items())),
        },
        index_stats=index_stats,
        params=params,
        seconds=time.perf_counter() - started,
    )
    return NeardupReport(pairs, stats)
