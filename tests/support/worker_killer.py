"""Test helper: a spider middleware that SIGKILLs its own crawl process on a poison page.

It stands for a page whose handling kills the worker (a parser crash, memory exhausted by the
analysis): the response has arrived and is being handled when the process dies. Only the tests
load it (``-s SPIDER_MIDDLEWARES=...`` with this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import signal

from scrapy.http import Response

POISON_HEADER = b"X-Websim-Test-Poison"


class KillOnPoison:
    """Kill this process when a response carries ``X-Websim-Test-Poison``."""

    def process_spider_input(self, response: Response) -> None:
        if POISON_HEADER in response.headers:
            os.kill(os.getpid(), signal.SIGKILL)
