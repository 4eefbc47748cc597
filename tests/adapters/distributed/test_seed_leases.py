"""Seeds are leased like requests: taken from Redis into a worker's in-flight seeds in one step.

A worker killed between taking a seed and queueing its requests, or a take whose reply was lost,
must not lose the seed: it goes back to the seed list.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from test_redis_workers import REPO, TreeSite, crawl_command, urls_of, worker_options

from websim_crawler.cli import main
from websim_crawler.config.distributed import RedisKeys
from websim_crawler.distributed.leases import Reconciled, RedisLeases

PAGES = 20


def test_seeds_taken_return_to_the_list_unless_released() -> None:
    redis = pytest.importorskip("redis")
    from tests.support.local_redis import LocalRedis

    with LocalRedis() as server:
        client = redis.Redis.from_url(server.url)
        keys = RedisKeys.of("s0", "site")
        client.rpush(keys.seeds, b"a", b"b", b"c", b"d")
        worker = RedisLeases(client, keys, lease_seconds=30, max_attempts=2)
        worker.join_run()
        worker.beat()
        taken = worker.take_seeds(3)
        assert [seed for _, seed in taken] == [b"a", b"b", b"c"]
        assert client.lrange(keys.seeds, 0, -1) == [b"d"]
        assert client.hlen(keys.seeds_in_flight(worker.worker)) == 3
        # "a" was queued and released; the others' take reply was lost with the connection.
        worker.release_seeds([taken[0][0]])
        assert worker.reconcile([], set()) == Reconciled(0, 0, seeds_requeued=2)
        assert sorted(client.lrange(keys.seeds, 0, -1)) == [b"b", b"c", b"d"]
        assert client.exists(keys.seeds_in_flight(worker.worker)) == 0
        # A worker that dies holding seeds: the next look for dead workers puts them back.
        dying = RedisLeases(client, keys, lease_seconds=30, max_attempts=2)
        dying.join_run()
        dying.beat()
        assert len(dying.take_seeds(10)) == 3 and client.llen(keys.seeds) == 0
        client.delete(keys.heartbeat(dying.worker))  # its heartbeat expired
        requeued = worker.requeue_dead()
        assert (requeued.workers, requeued.requests, requeued.seeds) == (1, 0, 3)
        assert sorted(client.lrange(keys.seeds, 0, -1)) == [b"b", b"c", b"d"]
        assert worker.take_seeds(10) and worker.take_seeds(10) == []  # none left


@pytest.mark.slow
def test_a_worker_killed_right_after_taking_its_seed_loses_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    site = TreeSite(pages=PAGES, delay=0.02)
    prefix = "seedkill"
    try:
        seed = ["seed", "site", f"{site.url}/p/0", "--redis", redis_url, "--prefix", prefix]
        assert main(seed) == 0
        options = worker_options(redis_url, prefix)
        for setting in ("WEBSIM_REDIS_LEASE=3", "WEBSIM_REDIS_SOCKET_TIMEOUT=1", "DEPTH_LIMIT=0"):
            options += ["-s", setting]
        environment = dict(
            os.environ,
            SCRAPY_SETTINGS_MODULE="websim_crawler.settings",
            PYTHONPATH=os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
        )
        killer = {"support.worker_killer.KillAtFirstScheduledRequest": 0}
        killed_feed, feed = tmp_path / "killed.jsonl", tmp_path / "worker.jsonl"
        killed = subprocess.run(
            crawl_command("site", killed_feed, *options, "-s", f"EXTENSIONS={json.dumps(killer)}"),
            cwd=REPO,
            env=environment,
            timeout=240,
        )
        assert killed.returncode == -9  # killed as its seed's request was being scheduled
        assert not killed_feed.exists() or not urls_of(killed_feed)
        worker = subprocess.run(
            crawl_command("site", feed, *options), cwd=REPO, env=environment, timeout=240
        )
        assert worker.returncode == 0
    finally:
        site.server.shutdown()
        site.server.server_close()
    assert sorted(urls_of(feed)) == sorted(f"{site.url}/p/{n}" for n in range(PAGES))
    log = feed.with_suffix(".log").read_text(encoding="utf-8")
    requeued = re.search(r"'websim/redis/seeds/requeued': (\d+)", log)
    assert requeued is not None and int(requeued.group(1)) >= 1, log[-3000:]
    client = pytest.importorskip("redis").Redis.from_url(redis_url)
    keys = RedisKeys.of(prefix, "site")
    assert client.llen(keys.seeds) == 0
    assert not list(client.scan_iter(match=keys.seeds_in_flight("*")))
