"""Scrapy settings of the websim-crawler project: safe defaults for crawling untrusted sites."""

from __future__ import annotations

BOT_NAME = "websim_crawler"
SPIDER_MODULES = ["websim_crawler.spiders"]
NEWSPIDER_MODULE = "websim_crawler.spiders"

USER_AGENT = "websim-crawler/0.1 (+https://github.com/websim-crawler/websim-crawler)"
ROBOTSTXT_OBEY = True
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"

ITEM_PIPELINES = {
    "websim_crawler.pipelines.PageAnalysisPipeline": 300,
}
