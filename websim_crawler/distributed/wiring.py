"""The switch to distributed crawling: ``-s WEBSIM_REDIS_URL=redis://host:6379/0``.

Called by the websim add-on (inert while ``WEBSIM_REDIS_URL`` is unset), it puts
scrapy-redis' scheduler and duplicate filter in place, keeps the shared queue when a worker
finishes (``SCHEDULER_PERSIST``), and adds :class:`~websim_crawler.distributed.seeds.RedisSeeds`,
which feeds the spiders their seeds from Redis and stops a worker once it has been idle for
``WEBSIM_REDIS_MAX_IDLE`` seconds.
"""

from __future__ import annotations

import logging
import warnings

from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.settings import BaseSettings

from websim_crawler._imports import require
from websim_crawler.config.distributed import DistributedParams, redacted_url
from websim_crawler.core.params import params_from_settings
from websim_crawler.distributed.outage import CONNECT_TIMEOUT

logger = logging.getLogger(__name__)

SCHEDULER = "websim_crawler.distributed.scheduler.WorkerScheduler"
JOBDIR_SCHEDULER = "websim_crawler.frontier.jobdir_scheduler.JobdirScheduler"
DUPEFILTERS = {
    "set": "scrapy_redis.dupefilter.RFPDupeFilter",
    "bloom": "websim_crawler.distributed.bloom.BloomDupeFilter",
}
QUEUE = "scrapy_redis.queue.PriorityQueue"
SEEDS_EXTENSION = "websim_crawler.distributed.seeds.RedisSeeds"
CLOSE_SPIDER = "scrapy.extensions.closespider.CloseSpider"
GLOBAL_CLOSE_SPIDER = "websim_crawler.distributed.limits.GlobalCloseSpider"


def wire_distributed(settings: BaseSettings) -> None:
    """Turn the crawl into a worker on a shared Redis frontier when ``WEBSIM_REDIS_URL`` is set:
    the scrapy-redis scheduler, duplicate filter and keys (add-on priority)."""
    params = params_from_settings(DistributedParams, settings)
    if params.redis_url is None:
        return
    require("scrapy_redis")
    require("redis")
    # scrapy-redis 0.9.1 still calls APIs Scrapy 2.13+ deprecates; the warnings are its own.
    warnings.filterwarnings(
        "ignore", category=ScrapyDeprecationWarning, module=r"scrapy_redis(\.|$)"
    )
    template = f"{params.key_prefix}:%(spider)s"
    values = {
        "SCHEDULER": SCHEDULER,
        "DUPEFILTER_CLASS": DUPEFILTERS[params.dupefilter],
        "SCHEDULER_QUEUE_CLASS": QUEUE,
        "SCHEDULER_QUEUE_KEY": f"{template}:requests",
        "SCHEDULER_DUPEFILTER_KEY": f"{template}:dupefilter",
        "REDIS_URL": params.redis_url,
        # scrapy-redis' client (the scheduler's, the duplicate filter's) waits 30 s for a
        # reply by default: a hung Redis would block the reactor that long per call.
        "REDIS_PARAMS": {
            **settings.getdict("REDIS_PARAMS"),
            "socket_timeout": params.socket_timeout,
            "socket_connect_timeout": CONNECT_TIMEOUT,
        },
        # The first worker to finish must not wipe the queue the others still work on.
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_FLUSH_ON_START": False,
    }
    for name, value in values.items():
        settings.set(name, value, priority="addon")
    if settings.get("SCHEDULER") == JOBDIR_SCHEDULER:  # the project's default, not a choice
        settings.set("SCHEDULER", SCHEDULER, priority=settings.getpriority("SCHEDULER") or 0)
    settings["EXTENSIONS"][SEEDS_EXTENSION] = 0
    if params.global_limits:  # CLOSESPIDER_PAGECOUNT over all workers, counted in Redis
        settings["EXTENSIONS"][CLOSE_SPIDER] = None
        settings["EXTENSIONS"][GLOBAL_CLOSE_SPIDER] = 0
    if settings.get("JOBDIR"):
        logger.warning("JOBDIR is ignored by distributed workers: the frontier is in Redis")
    if settings.get("WEBSIM_CLUSTERS_OUTPUT"):
        logger.warning(
            "WEBSIM_CLUSTERS_OUTPUT clusters only this worker's pages; cluster the union "
            "with: websim cluster worker-1.jsonl worker-2.jsonl ... -o clusters.json"
        )
    logger.info(
        "distributed crawl: frontier, duplicate filter and seeds in %s under %s:SPIDER:*",
        redacted_url(params.redis_url),
        params.key_prefix,
    )
