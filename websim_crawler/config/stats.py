"""Every ``websim/...`` stats key the package counts, with what it means: the stats reference.

``docs/stats.md`` is generated from ``STATS`` (``python -m websim_crawler.config.reference
--write``); ``tests/project/test_reference.py`` checks that every key the code counts is declared
here and that the page is current. A key's ``<placeholder>`` stands for the values listed in its
meaning. Add a row here when you count a new key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatDoc:
    """Stats keys of one section that share a meaning (a row of ``docs/stats.md``)."""

    section: str
    keys: tuple[str, ...]
    meaning: str


STATS: tuple[StatDoc, ...] = (
    StatDoc(
        "crawling",
        ("websim/pages/results", "websim/pages/record", "websim/pages/page"),
        "items yielded, by kind",
    ),
    StatDoc(
        "crawling",
        ("websim/pages/failed/<reason>",),
        (
            "pages that could not be fetched, by reason (see "
            "[Reliability](../README.md#reliability-and-safe-defaults)): `http_404`, `timeout`, "
            "`too_large`, `robots_txt` ..."
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/pages/skipped/not_html",),
        "responses that are not HTML (PDF, image, plain text)",
    ),
    StatDoc(
        "crawling",
        ("websim/pages/skipped/too_many_elements",),
        (
            "pages whose markup opens more tags than `WEBSIM_MAX_ELEMENTS`: not parsed by the "
            "spider (which would stall the crawl), not analysed"
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/pages/encoding/<confidence>",),
        (
            "HTML responses by `encoding_confidence`: `declared`, `detected`, `doubtful` (each "
            "doubtful one is also logged as a warning); without the middleware, the analysis "
            "pipeline counts the items it wrote one for (`html` as bytes), so "
            "`websim/pages/encoding/doubtful` counts doubtful decodings either way"
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/pages/encoding/redecoded",),
        (
            "responses decoded otherwise than Scrapy would have (a UTF-16 `<meta>` or header on "
            "bytes that are not UTF-16)"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/retry_after/waited",
            "websim/retry_after/too_long",
        ),
        (
            "429/503 retries that waited for their `Retry-After`, asks longer than "
            "`WEBSIM_RETRY_AFTER_MAX` (not retried)"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/crawl/search_form/get",
            "websim/crawl/search_form/post",
            "websim/crawl/search_form/skipped/<reason>",
            "websim/crawl/search_form/unfillable_input",
        ),
        "the search form found; forms skipped (`<reason>`): `not_http`, an action not http(s); "
        "`offsite`, another scheme, host or port; a form requiring a CAPTCHA or log-in (exit 1)",
    ),
    StatDoc(
        "surfacing",
        (
            "websim/surfacing/queries",
            "websim/surfacing/result_pages",
            "websim/surfacing/records",
            "websim/surfacing/estimate",
            "websim/surfacing/estimate_low",
            "websim/surfacing/estimate_high",
            "websim/surfacing/estimate_method",
            "websim/surfacing/stopped",
            "websim/surfacing/answers_nothing",
        ),
        (
            "queries surfacing chose, their result pages (failed answers too), records reached; "
            "the estimated number of records the site holds with its 95 % interval and method "
            "(`stated`: the site says it; `partition`: a select's stated counts added up; "
            "`capture-recapture`: Chao's and the jackknife's, see docs/surfacing.md); why it "
            "stopped (`estimate covered`, `every record reached`, `the last queries brought almost "
            "nothing new`, `budget (max_queries)`, `no terms left`, `the search answers "
            "nothing`: then `answers_nothing` is `1` and the crawl exits 1)"
        ),
    ),
    StatDoc(
        "surfacing",
        (
            "websim/crawl/entrance/tried/<how>",
            "websim/crawl/entrance/opensearch",
            "websim/crawl/entrance/nearby_form",
            "websim/surfacing/query_log",
            "websim/surfacing/curve",
            "websim/surfacing/site_cap",
            "websim/surfacing/site_stems",
            "websim/surfacing/site_semantics",
            "websim/surfacing/site_order",
            "websim/surfacing/terms_dropped",
        ),
        (
            "no form on the start page: places looked at (`<how>`: `opensearch`, `page`: one "
            "link away or the 404 page), where it was found; each query's `query`, `new`, "
            "`shown`, `matches` stated, `pages`, `capped`, `failed`; `[result pages, records]` "
            "after each page; the site's cap, stemming, AND/OR, order (`ids ascending`); terms cut"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/feed/write_failed",
            "websim/feed/requests_kept",
        ),
        (
            "`1`: a feed write failed and stopped the crawl (finish reason `feed_write_failed`; "
            "the feed keeps its whole lines and its `.incomplete` marker); requests finished from"
            " that write on, kept leased so a resumed JOBDIR crawl or the next Redis worker "
            "crawls them again"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/crawl/no_search_form",
            "websim/offsite/other_origin",
            "websim/robotstxt/truncated",
        ),
        (
            "the start page has no search form; requests dropped for another scheme or port of "
            "the crawled host (a crawl stays on its start URL's scheme, host and port: links, "
            "redirects, forms, `<base href>`); robots.txt files read up to their first 500 KiB "
            "only, as Google reads them"
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/crawl/results_without_records",),
        "result pages where no record link was found",
    ),
    StatDoc(
        "crawling",
        (
            "websim/diagnosis/result_pages",
            "websim/diagnosis/result_pages_empty",
            "websim/diagnosis/result_pages_without_records",
            "websim/diagnosis/result_lists",
            "websim/diagnosis/result_pages_with_several_lists",
            "websim/diagnosis/records/from_region",
            "websim/diagnosis/records/by_pattern_only",
            "websim/diagnosis/records/chrome_like",
            "websim/diagnosis/record_patterns",
            "websim/diagnosis/queries_without_records",
            "websim/diagnosis/warning",
            "websim/diagnosis/no_data_region",
            "websim/diagnosis/bound_hit",
            "websim/crawl/regions/truncated",
        ),
        (
            "deepweb's end-of-crawl diagnosis: result pages, those that say they are empty (or "
            "a pager past the last result), those whose records were not found; result lists, "
            "result pages with several; record links "
            "(per page) from a data region or by URL pattern alone; of those, the ones whose "
            "pattern is on every result page; distinct patterns; queries that found nothing; `1` "
            "when it warned, when no record came from a data region (exit 1), when a memory bound"
            " was met. Result pages whose data-region search stopped at 50,000 elements"
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/crawl/page_limit_reached",),
        "site-spider pages whose links were cut by `max_pages`",
    ),
    StatDoc(
        "crawling",
        (
            "websim/crawl/next_page/<how>",
            "websim/crawl/next_page/click/<kind>",
            "websim/crawl/next_page/skipped/not_http",
        ),
        (
            "next result pages reached by `link`, `parameter` (page number moved on), `postback` "
            "(form submitted), a click in the rendered page on a `script` or `postback` control; "
            "`needs_render` (a script control, not rendering), `click_failed`; postback forms "
            "skipped for an action that is not http(s)"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/pages/failed/offsite_navigation",
            "websim/pages/failed/render_memory",
            "websim/pages/failed/render_crashed",
            "websim/pages/dropped/too_large",
            "websim/render/too_large/<bound>",
        ),
        (
            "pages not stored: navigated off the crawl's sites, killed by the watchdog for their "
            "own memory (over `WEBSIM_RENDER_MAX_PAGE_MEMORY`, or when rendered alone), crashed, "
            "too large (the bound: `response`, one response past `DOWNLOAD_MAXSIZE`; `page`, the "
            "page's total past `WEBSIM_RENDER_MAX_PAGE_BYTES`)"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/render/memory_kills/<kind>",
            "websim/render/deferred",
            "websim/render/retried",
            "websim/render/retried_alone",
        ),
        (
            "renderers the watchdog killed, by whose fault: `own` (a page over its own memory), "
            "`shared` (the youngest page, when ordinary pages together passed the browser's cap); "
            "pages so deferred, and tried again with fewer pages open or, after "
            "`WEBSIM_RENDER_PRESSURE_RETRIES`, alone"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/warc/records",
            "websim/warc/bytes",
            "websim/warc/files",
            "websim/warc/skipped/<why>",
            "websim/warc/recovered_files",
            "websim/warc/truncated_dropped",
            "websim/warc/write_failed",
        ),
        (
            "with `WEBSIM_WARC_OUTPUT`: WARC records, compressed bytes and files written; "
            "responses not archived (`cached`, `too_large`); files a killed crawl left open that "
            "this run repaired, cut last records dropped from them; `1` when a write failed "
            "(finish reason `warc_write_failed`, exit 1, leases kept)"
        ),
    ),
    StatDoc(
        "crawling",
        ("websim/render/allowed/<destination>", "websim/render/blocked/<reason>"),
        (
            "connections rendered pages opened, to `own_site` or (`WEBSIM_RENDER_OTHER_HOSTS`) "
            "`public` hosts; refused: `other_host`, `private_address`, `unresolved`, "
            "`websocket`, `scheme`, `malformed`, `offsite_navigation`; `popup`, `download`"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/render/partial",
            "websim/render/settle_timeout",
            "websim/render/memory_kills",
            "websim/render/scrolls",
            "websim/render/boxes_truncated",
            "websim/render/screenshot_clipped",
        ),
        (
            "pages still growing at `WEBSIM_RENDER_SETTLE_GROWING_MAX` (kept, `render_partial`), "
            "pages taken unsettled, renderers killed by the watchdog, scrolls, pages past "
            "`WEBSIM_RENDER_MAX_BOXES`, screenshots clipped"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/render/auto/<plan>",
            "websim/render/auto/kept/<which>",
            "websim/render/auto/groups/<decision>",
            "websim/render/auto/switched",
        ),
        (
            "`render=auto`: requests by plan (`sample`, `render`, `plain`), samples that kept the"
            " `rendered` or `plain` page, groups by decision, plain groups switched to rendering"
        ),
    ),
    StatDoc(
        "crawling",
        (
            "websim/render/browser_restarts/<why>",
            "websim/render/watchdog_errors",
        ),
        (
            "browser restarts: `memory`, `every` (`WEBSIM_RENDER_RESTART_EVERY`); memory checks "
            "that failed (logged; the watchdog goes on)"
        ),
    ),
    StatDoc(
        "items",
        ("websim/pages/seen",),
        "items that reached the analysis pipeline",
    ),
    StatDoc(
        "items",
        ("websim/pages/analysed",),
        "items analysed and passed on",
    ),
    StatDoc(
        "items",
        ("websim/pages/dropped/<reason>",),
        (
            "items dropped: `no_html`, `empty`, `binary`, `too_large` (over "
            "`WEBSIM_MAX_PAGE_BYTES` or `WEBSIM_WORKER_MEMORY_MB`), `too_many_elements`, "
            "`analysis_timeout`, `unparseable`"
        ),
    ),
    StatDoc(
        "items",
        ("websim/analysis/deferred", "websim/analysis/retried_alone"),
        (
            "analyses that hit only the wall-time backstop of `WEBSIM_ANALYSIS_TIMEOUT` (the "
            "crowd, not the page's own CPU time) and were tried again with fewer pages at once; "
            "pages whose last try ran alone in the pool"
        ),
    ),
    StatDoc(
        "items",
        (
            "websim/pages/failed/worker_crash",
            "websim/pages/failed/analysis_error",
        ),
        (
            "items whose worker died (it is replaced), or whose analysis raised an unexpected "
            "error (logged with its traceback)"
        ),
    ),
    StatDoc(
        "items",
        ("websim/pages/no_main_text",),
        "analysed pages whose main content is empty (no text)",
    ),
    StatDoc(
        "items",
        (
            "websim/chunks/total",
            "websim/chunks/kept",
            "websim/chunks/noise",
            "websim/chunks/duplicate",
        ),
        "leaf chunks by fate",
    ),
    StatDoc(
        "items",
        ("websim/fields/undeclared",),
        "results left out because the item class lacks the field",
    ),
    StatDoc(
        "clustering",
        (
            "websim/cluster/pages/kept",
            "websim/cluster/pages/skipped",
        ),
        "pages buffered for clustering, pages left out",
    ),
    StatDoc(
        "clustering",
        ("websim/cluster/skipped/<reason>",),
        "pages left out, by reason (`other_kind`, `duplicate_url`, `no_keywords` ...)",
    ),
    StatDoc(
        "clustering",
        ("websim/cluster/documents",),
        "pages that were clustered",
    ),
    StatDoc(
        "clustering",
        (
            "websim/cluster/n_clusters",
            "websim/cluster/n_iter",
        ),
        "clusters found, iterations of the chosen run",
    ),
    StatDoc(
        "clustering",
        (
            "websim/cluster/failed",
            "websim/<stage>/records",
            "websim/<stage>/records/missing",
        ),
        (
            "the report could not be written (`scrapy crawl` exits 1); records a stage "
            "(`cluster`, `similarity`, `neardup`) took in the whole crawl, records its JOBDIR "
            "journal lost"
        ),
    ),
    StatDoc(
        "similarity",
        ("websim/similarity/pages",),
        "pages the pairwise stage kept",
    ),
    StatDoc(
        "similarity",
        ("websim/similarity/skipped/<reason>",),
        (
            "items left out: `no_url`, `duplicate_url` (each URL once), `bad_url`, `bad_html`, "
            "`bad_links`, `bad_keywords`, `bad_screenshot` (a field of the wrong type)"
        ),
    ),
    StatDoc(
        "similarity",
        ("websim/similarity/problems/<part>",),
        (
            "pages whose `html`, `analysis` or `screenshot` could not be used (the stage is"
            " skipped for them)"
        ),
    ),
    StatDoc(
        "similarity",
        (
            "websim/similarity/candidate_pairs",
            "websim/similarity/similar_pairs",
            "websim/similarity/failed",
        ),
        "pairs compared, pairs found similar; the pairs could not be written (exit 1)",
    ),
    StatDoc(
        "similarity",
        (
            "websim/similarity/capped_pairs",
            "websim/similarity/identical_groups",
            "websim/similarity/capped_buckets",
        ),
        (
            "candidate pairs left uncompared over `WEBSIM_SIMILARITY_MAX_PAIRS`; groups of "
            "identical pages (compared once); LSH buckets over `WEBSIM_SIMILARITY_LSH_MAX_BUCKET`"
        ),
    ),
    StatDoc(
        "similarity",
        ("websim/similarity/groups",),
        "groups of similar pages written",
    ),
    StatDoc(
        "similarity",
        ("websim/compare/<verdict>",),
        "the `compare` spider's verdict",
    ),
    StatDoc(
        "similarity",
        (
            "websim/match/pages",
            "websim/match/similar",
            "websim/match/skipped/<reason>",
            "websim/match/references",
            "websim/match/links_capped",
            "websim/match/brand_capped",
        ),
        (
            "the `MatchPipeline`: pages matched, those with a similar reference, left out "
            "(`no_html`, a field of the wrong type); references in the index; pages whose links' "
            "postings, or brand words (`MAX_BRAND_SCORED`, question `brand`), passed their read "
            "bound (the most shared left out of their candidate search)"
        ),
    ),
    StatDoc(
        "near-duplicates",
        ("websim/neardup/pages/indexed",),
        "pages whose sentences went into the index",
    ),
    StatDoc(
        "near-duplicates",
        ("websim/neardup/pages/skipped/<reason>",),
        "pages left out (`no_html`, `duplicate_url` ...)",
    ),
    StatDoc(
        "near-duplicates",
        (
            "websim/neardup/pairs",
            "websim/neardup/class/<class>",
        ),
        "pairs found, by class",
    ),
    StatDoc(
        "near-duplicates",
        ("websim/neardup/failed",),
        "the report could not be written (`scrapy crawl` exits 1)",
    ),
    StatDoc(
        "running on many machines",
        (
            "websim/redis/seeds/taken",
            "websim/redis/seeds/requests",
            "websim/redis/seeds/invalid",
            "websim/redis/seeds/requeued",
        ),
        (
            "seeds this worker took (leased like requests until their requests are queued), the "
            "requests they made, seeds skipped as malformed, seeds of dead workers (or of lost "
            "replies) put back on the seed list"
        ),
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/last_response_time",),
        "when this worker last received a response (its work ended)",
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/idle_close",),
        "the worker stopped because it ran out of work",
    ),
    StatDoc(
        "running on many machines",
        (
            "websim/redis/leased",
            "websim/redis/released",
        ),
        "requests this worker took from the shared queue, and finished",
    ),
    StatDoc(
        "running on many machines",
        (
            "websim/redis/requeued",
            "websim/redis/dead_workers",
            "websim/redis/dead_letter",
        ),
        (
            "requests of dead workers this worker put back (also summed in "
            "`PREFIX:SPIDER:requeued`), those workers, and the requests it moved to the "
            "dead-letter list"
        ),
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/lease_lost",),
        "requests this worker finished after being taken for dead (crawled twice)",
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/returned",),
        "requests given back at a clean close (none unless the close cut work short)",
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/budget_refused",),
        "requests refused because their start URL's `max_pages` was reached over all workers",
    ),
    StatDoc(
        "running on many machines",
        ("websim/redis/page_count",),
        "the crawl's response count when this worker closed for `CLOSESPIDER_PAGECOUNT`",
    ),
    StatDoc(
        "running on many machines",
        (
            "websim/redis/outage/count",
            "websim/redis/outage/seconds",
            "websim/redis/outage/held",
            "websim/redis/outage/held_limit",
            "websim/redis/orphans_requeued",
            "websim/redis/timeouts",
        ),
        (
            "Redis outages ridden out, their length, follow-ups held meanwhile (a stop at "
            "100,000), leases found in this worker's hash that it did not hold, put back, calls "
            "that got no reply within `WEBSIM_REDIS_SOCKET_TIMEOUT` ([Redis "
            "outages](reliability.md#redis-outages))"
        ),
    ),
    StatDoc(
        "reliability",
        ("websim/jobdir/requeued",),
        "requests in flight when the previous run of this JOBDIR stopped, queued again",
    ),
    StatDoc(
        "reliability",
        ("websim/jobdir/seen_before",),
        (
            "requests an earlier run of this JOBDIR had queued (a resumed crawl that finds "
            "nothing left to crawl then exits 0)"
        ),
    ),
)
