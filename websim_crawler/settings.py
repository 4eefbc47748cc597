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
DEPTH_LIMIT = 4  # the site spider's link depth; deepweb is bounded by max_pages instead
CLOSESPIDER_PAGECOUNT = 5000  # a safety cap on responses per crawl

# Every websim component (pipelines, middlewares, feeds, rendering, the optional stages once
# their output setting is given, the Redis frontier with -s WEBSIM_REDIS_URL=redis://host/0) is
# wired by the one add-on: websim_crawler/addon.py.
ADDONS = {"websim_crawler.addon.WebsimAddon": 0}
