"""``scrapy crawl`` that ends with exit code 1 when the crawl could do nothing.

Scrapy's own ``crawl`` exits 0 whenever the spider ran, even when the start page was unreachable,
the site had no search form or every page failed. This command runs the same crawl, then reads
the finish reason and the stats: nothing scraped, a spider's own failure reason, an output
stage that could not write its file or result pages none of whose records came from a data region
(the deepweb diagnosis) end it with exit code 1 and one line on stderr saying why.
Enable it with ``COMMANDS_MODULE = "websim_crawler.commands"`` (this project's settings do).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from websim_crawler.archive.middleware import WARC_WRITE_FAILED
from websim_crawler.components import check_outputs_running
from websim_crawler.config import websim_config
from websim_crawler.errors import ConfigError, nearest_hint
from websim_crawler.feeds import FEED_WRITE_FAILED
from websim_crawler.logformatter import report_errors_plainly

# Finish reasons the websim spiders close with when they cannot do their job.
FAILED_FINISH_REASONS = {
    "start_page_failed": "the start page could not be fetched",
    "start_page_not_html": "the start page is not an HTML page",
    "no_search_form": (
        "no search form on the start page, in its OpenSearch description or on the pages near it"
    ),
    "unfillable_input": "the search form requires an input the crawl cannot fill (the error above "
    "names it)",
    FEED_WRITE_FAILED: "a feed could not be written and the crawl was stopped (the error above "
    "names the feed)",
    WARC_WRITE_FAILED: "the WARC files could not be written and the crawl was stopped (the error "
    "above names the folder)",
    "redis_unavailable": "Redis stayed unreachable longer than WEBSIM_REDIS_LEASE",
    "redis_state_lost": "Redis lost the crawl's queue and leases (no run marker)",
}
# Stats an output stage sets when it could not write its report.
FAILED_OUTPUTS = {
    "websim/cluster/failed": "the clusters report could not be written",
    "websim/neardup/failed": "the near-duplicate report could not be written",
    "websim/similarity/failed": "the similar pairs could not be written",
}
# Stats the deepweb spider's end-of-crawl diagnosis sets when its records cannot be results.
FAILED_DIAGNOSES = {
    "websim/diagnosis/no_data_region": (
        "no record came from a data region of the result pages (the links taken are page "
        "chrome or one-offs; see the 'deepweb diagnosis' log line)"
    ),
    "websim/surfacing/answers_nothing": (
        "the search answered nothing (errors or empty result pages) to every query surfacing "
        "tried (see the 'deepweb surfacing' log line)"
    ),
}


def crawl_failure(stats: Mapping[str, Any], shared_frontier: bool = False) -> str | None:
    """Return why a finished crawl counts as failed (from its stats), or ``None``.

    A worker on a shared frontier that scraped nothing and failed nothing found the queue
    emptied by the other workers, and a JOBDIR crawl that did so had been finished by an earlier
    run: neither is a failure.
    """
    reason = str(stats.get("finish_reason", ""))
    if reason in FAILED_FINISH_REASONS:
        return f"{FAILED_FINISH_REASONS[reason]} (finish reason {reason})"
    for key, message in (FAILED_OUTPUTS | FAILED_DIAGNOSES).items():
        if stats.get(key):
            return message
    if stats.get("item_scraped_count", 0):
        return None
    failed = _counts(stats, "websim/pages/failed/")
    dropped = _counts(stats, "websim/pages/dropped/")
    if failed or dropped:
        return (
            "every page failed ("
            + ", ".join(f"{what}: {count}" for what, count in sorted({**failed, **dropped}.items()))
            + ")"
        )
    if reason == "shutdown" or shared_frontier or stats.get("websim/jobdir/seen_before"):
        # Stopped by the user (Ctrl-C), the other workers took every request, or a JOBDIR crawl
        # resumed after its last page had been crawled (its outputs come from the journals).
        return None
    return f"no page was scraped (finish reason {reason or 'unknown'})"


def _counts(stats: Mapping[str, Any], prefix: str) -> dict[str, int]:
    kind = prefix.rstrip("/").rsplit("/", 1)[-1]
    return {
        f"{kind} {key[len(prefix) :]}": int(value)
        for key, value in stats.items()
        if key.startswith(prefix) and value
    }


class Command(ScrapyCrawlCommand):
    """``scrapy crawl SPIDER``: exit code 1 when the crawl could do nothing."""

    def short_desc(self) -> str:
        """One line for ``scrapy -h``."""
        return "Run a spider; exit code 1 when the crawl could do nothing"

    def long_desc(self) -> str:
        """The text under the usage line of ``scrapy crawl -h``."""
        return (
            "Run a spider; exit code 1 when the crawl could do nothing. Keep every response "
            "fetched as WARC/1.1 files with -a warc=FOLDER (the websim spiders) or "
            "-s WEBSIM_WARC_OUTPUT=FOLDER (any spider of a project with the websim add-on)."
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Run the crawl as Scrapy does, then set the exit code from its stats."""
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's usage errors
            return
        assert self.crawler_process is not None
        report_errors_plainly()  # a bad setting met by a pipeline of any spider: one line
        try:
            crawler = self._create_crawler(args[0])
        except KeyError:  # Scrapy's "Spider not found", as a traceback
            names = self.crawler_process.spider_loader.list()
            print(
                f"scrapy crawl: no spider named {args[0]!r}{nearest_hint(args[0], names)}; "
                f"the spiders: {', '.join(sorted(names)) or 'none'}",
                file=sys.stderr,
            )
            self.exitcode = 1
            return
        try:
            check_outputs_running(crawler.settings)
        except ConfigError as exc:
            print(f"scrapy crawl: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
            return
        if crawler.stats is None:
            return
        shared_frontier = websim_config(crawler).distributed.redis_url is not None
        failure = crawl_failure(crawler.stats.get_stats(), shared_frontier)
        if failure is not None:
            print(f"scrapy crawl {args[0]}: {failure}", file=sys.stderr)
            self.exitcode = 1
