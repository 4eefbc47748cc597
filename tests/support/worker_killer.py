"""Test helpers that SIGKILL their own crawl process: on a poison page, at the first request.

The poison page stands for a page whose handling kills the worker (a parser crash, memory
exhausted by the analysis): the response has arrived and is being handled when the process dies.
Only the tests load them (``-s SPIDER_MIDDLEWARES=...``, ``-s EXTENSIONS=...`` with this folder
on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import signal

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response

POISON_HEADER = b"X-Websim-Test-Poison"


class KillOnPoison:
    """Kill this process when a response carries ``X-Websim-Test-Poison``."""

    def process_spider_input(self, response: Response) -> None:
        if POISON_HEADER in response.headers:
            os.kill(os.getpid(), signal.SIGKILL)


class KillAtFirstScheduledRequest:
    """Extension: kill this process as the engine schedules its first request.

    In a Redis worker that request is a seed's: the seed has been taken from Redis and its
    request is not in the shared queue yet. Only the tests load it (``-s EXTENSIONS=...``).
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> KillAtFirstScheduledRequest:
        extension = cls()
        crawler.signals.connect(extension.request_scheduled, signal=signals.request_scheduled)
        return extension

    def request_scheduled(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)
