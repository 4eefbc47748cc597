"""Scrapy settings of the websim-crawler project: safe defaults for crawling untrusted sites."""

from __future__ import annotations

BOT_NAME = "websim_crawler"
SPIDER_MODULES = ["websim_crawler.spiders"]
NEWSPIDER_MODULE = "websim_crawler.spiders"
# `scrapy crawl` ends with exit code 1 when the crawl could do nothing (websim_crawler/commands).
COMMANDS_MODULE = "websim_crawler.commands"

USER_AGENT = "websim-crawler/0.1 (+https://github.com/websim-crawler/websim-crawler)"
ROBOTSTXT_OBEY = True
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
# Feeds written item by item (a killed crawl leaves valid JSON Lines); see websim_crawler/feeds.py.
FEED_STORAGES = {
    "": "websim_crawler.feeds.DurableFileFeedStorage",
    "file": "websim_crawler.feeds.DurableFileFeedStorage",
}
# JSON Lines encoded by orjson (Scrapy's exporter cost the crawl's process as much as a download).
FEED_EXPORTERS = {
    name: "websim_crawler.feeds.OrjsonLinesItemExporter" for name in ("jsonlines", "jsonl", "jl")
}

# Politeness and limits: a crawl of someone else's site stays slow, small and bounded.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
CONCURRENT_REQUESTS_PER_DOMAIN = 4
# Items handled at a time per response (Scrapy's default, 100, starts 100 asyncio tasks for
# every response, and a websim response yields one page item and its requests).
CONCURRENT_ITEMS = 16
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024  # larger responses are cancelled (Scrapy's default: 1 GiB)
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
RETRY_TIMES = 2
# Retries of 429/503 answers wait for their Retry-After (up to WEBSIM_RETRY_AFTER_MAX s).
DOWNLOADER_MIDDLEWARES = {
    "websim_crawler.middlewares.retry_after.RetryAfterMiddleware": 560,
    # After decompression (590): decode pages as browsers do (see middlewares/response_decoding.py).
    "websim_crawler.middlewares.response_decoding.PageDecodingMiddleware": 585,
}
DEPTH_LIMIT = 4  # the site spider's link depth; deepweb is bounded by max_pages instead
CLOSESPIDER_PAGECOUNT = 5000  # a safety cap on responses per crawl

ITEM_PIPELINES = {"websim_crawler.pipelines.PageAnalysisPipeline": 300}
# Scraped and dropped items are logged as one line (URL, kind, main text, keywords), not whole.
LOG_FORMATTER = "websim_crawler.logformatter.ItemSummaryLogFormatter"

# With JOBDIR, queue, seen requests and leases live in one SQLite file, so a crawl resumes after
# SIGKILL too (recrawling at most the requests in flight); without JOBDIR: Scrapy's scheduler.
SCHEDULER = "websim_crawler.frontier.jobdir_scheduler.JobdirScheduler"
ADDONS = {
    # The collection-wide stages join ITEM_PIPELINES when their output setting is given
    # (WEBSIM_CLUSTERS_OUTPUT, WEBSIM_SIMILARITY_OUTPUT, WEBSIM_NEARDUP_OUTPUT), and the stats
    # file joins EXTENSIONS with -s WEBSIM_STATS_OUTPUT=stats.json (failures by reason).
    "websim_crawler.addon.OutputsAddon": 0,
    # -s WEBSIM_REDIS_URL=redis://host:6379/0 turns a crawl into a worker on a shared frontier.
    "websim_crawler.distributed.redis_addon.RedisAddon": 0,
}
