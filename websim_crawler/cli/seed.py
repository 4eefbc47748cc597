"""``websim seed``: push start URLs or queries into Redis for distributed ``site``/``deepweb``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from websim_crawler._imports import require
from websim_crawler.cli._settings import add_setting_flags, add_settings_option, command_config
from websim_crawler.config.distributed import redacted_url
from websim_crawler.distributed.leases import delete_worker_keys
from websim_crawler.distributed.outage import redis_client
from websim_crawler.errors import ConfigError, InputFormatError, WebsimError
from websim_crawler.spiders.args import parse_http_url

SEED_FIELDS = {"site": "url", "deepweb": "query"}


def register(subparsers: Any) -> None:
    """Add the ``seed`` subcommand."""
    parser = subparsers.add_parser(
        "seed",
        help="push start URLs (site) or queries (deepweb) into Redis for distributed workers",
        description=(
            "Push seeds into the Redis list PREFIX:SPIDER:seeds that workers started with "
            "'scrapy crawl SPIDER -s WEBSIM_REDIS_URL=...' read from: start URLs for 'site', "
            "queries for 'deepweb'. --reset first deletes the crawl's shared queue, duplicate "
            "filter and seeds (a fresh crawl)."
        ),
    )
    parser.add_argument("spider", choices=sorted(SEED_FIELDS), help="the spider the seeds are for")
    parser.add_argument("seeds", nargs="*", metavar="SEED", help="start URLs or queries")
    parser.add_argument(
        "-f", "--file", action="append", default=[], help="read seeds from a file, one a line"
    )
    add_setting_flags(parser, "seed")
    parser.add_argument(
        "--reset",
        action="store_true",
        help="delete the crawl's queue, duplicate filter, seeds, leases, dead-letter list and "
        "shared counts before pushing",
    )
    add_settings_option(parser, "WEBSIM_REDIS_PREFIX=crawl1")
    parser.set_defaults(func=run)


def read_seeds(spider: str, values: list[str], files: list[str]) -> list[str]:
    """Collect the seeds (arguments, then files; ``#`` lines and repeats left out), checked."""
    collected = list(values)
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFormatError(f"cannot read seed file {name}: {exc}") from exc
        collected.extend(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    seeds = list(dict.fromkeys(" ".join(value.split()) for value in collected))
    seeds = [seed for seed in seeds if seed]
    if spider == "site":
        seeds = [parse_http_url("seed", "start_url", seed) for seed in seeds]
    return seeds


def run(args: argparse.Namespace) -> int:
    """Push the seeds; print how many wait in Redis."""
    if os.environ.get("WEBSIM_REDIS_URL"):  # below -s and --redis
        args.set = [f"WEBSIM_REDIS_URL={os.environ['WEBSIM_REDIS_URL']}", *args.set]
    params = command_config(args, "seed").distributed
    if not params.redis_url:
        raise ConfigError("give the Redis URL: --redis redis://host:6379/0 or $WEBSIM_REDIS_URL")
    seeds = read_seeds(args.spider, args.seeds, args.file)
    if not seeds and not args.reset:
        raise ConfigError("no seeds given: pass them as arguments or with --file FILE")
    from websim_crawler.distributed.seeds import seed_entry  # Scrapy's request, imported here

    keys = params.keys(args.spider)
    redis = require("redis")
    try:
        server = redis_client(params.redis_url, params.socket_timeout)  # a hung Redis: one line
        if args.reset:
            delete_worker_keys(server, keys)
        with server.pipeline(transaction=True) as pipe:
            if args.reset:
                pipe.unlink(*keys.all(), *keys.bloom_layers(server))
            if seeds:
                pipe.rpush(keys.seeds, *(seed_entry(SEED_FIELDS[args.spider], s) for s in seeds))
            pipe.llen(keys.seeds)
            waiting = pipe.execute()[-1]
    except redis.RedisError as exc:
        raise WebsimError(f"Redis at {redacted_url(params.redis_url)}: {exc}") from exc
    reset = " (queue, duplicate filter and seeds reset)" if args.reset else ""
    print(f"pushed {len(seeds)} seed(s) to {keys.seeds}{reset}; {waiting} waiting")
    return 0
