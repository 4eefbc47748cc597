"""A distributed worker and its Redis: an outage ridden out, a lost state and no Redis at all.

Each test starts its own ``redis-server`` on a free loopback port (with an append-only file, as a
production Redis keeps its data), crawls a local site with a real ``scrapy crawl site`` worker,
and kills or restarts the server under it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings
from test_redis_workers import REPO, TreeSite, crawl_command, lines_of, urls_of, worker_options

from tests.support.local_redis import LocalRedis, _free_port
from websim_crawler.cli import main
from websim_crawler.config.distributed import DistributedParams, RedisKeys
from websim_crawler.distributed.leases import CrawlStateLost, Reconciled, RedisLeases
from websim_crawler.distributed.wiring import wire_distributed
from websim_crawler.errors import ConfigError

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server is not installed (apt redis-server)"
)

PAGES = 60
CONCURRENCY = 3
ENVIRONMENT = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")


@pytest.fixture
def site() -> Iterator[TreeSite]:
    tree = TreeSite(pages=PAGES, delay=0.05)
    yield tree
    tree.server.shutdown()
    tree.server.server_close()


@pytest.fixture
def persistent_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = LocalRedis(append_only_dir=folder).start()
    yield server
    server.stop()


def crawl_through(
    redis: LocalRedis, site: TreeSite, out: Path, fault: Callable[[], None], *settings: str
) -> tuple[int, str, str]:
    """Crawl ``site`` with one worker and ``-s`` ``settings``; once 10 pages are written, call
    ``fault`` (which breaks Redis and brings it back). Return (exit code, log, stderr)."""
    prefix = "fault"
    assert main(["seed", "site", f"{site.url}/p/0", "--redis", redis.url, "--prefix", prefix]) == 0
    options = worker_options(redis.url, prefix)
    for setting in (
        "DOWNLOAD_DELAY=0.3",  # the crawl of the report: a polite worker, pages in flight
        "DEPTH_LIMIT=0",
        f"CONCURRENT_REQUESTS={CONCURRENCY}",
        "WEBSIM_ANALYSIS_WORKERS=0",
        *settings,
    ):
        options += ["-s", setting]
    command = crawl_command("site", out, *options)
    worker = subprocess.Popen(command, cwd=REPO, env=ENVIRONMENT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while lines_of(out) < 10:
            assert worker.poll() is None, "the worker stopped before the fault"
            assert time.monotonic() < deadline, "the worker did not start crawling"
            time.sleep(0.05)
        fault()
        _, stderr = worker.communicate(timeout=240)  # the worker ends by itself
    finally:
        if worker.poll() is None:
            worker.kill()
    return worker.returncode, out.with_suffix(".log").read_text(encoding="utf-8"), stderr.decode()


def crawl_through_a_redis_restart(
    redis: LocalRedis, site: TreeSite, out: Path, *, outage: float, empty: bool
) -> tuple[int, str, str]:
    """Crawl ``site`` with one worker; SIGKILL Redis once 10 pages are written, restart it
    ``outage`` s later (``empty``: without its append-only file). Return (exit code, log, stderr).
    """

    def restart() -> None:
        redis.kill()
        time.sleep(outage)
        if empty:
            redis.append_only_dir = None  # restarted without persistence
        redis.start()  # the same port (and its append-only file, unless empty)

    return crawl_through(redis, site, out, restart, "WEBSIM_REDIS_LEASE=30")  # > the outage


@pytest.mark.slow
def test_a_worker_rides_out_a_redis_restart_and_loses_nothing(
    persistent_redis: LocalRedis, site: TreeSite, tmp_path: Path
) -> None:
    out = tmp_path / "worker.jsonl"
    # An outage shorter than the lease, longer than a few fetches.
    code, log, stderr = crawl_through_a_redis_restart(
        persistent_redis, site, out, outage=4, empty=False
    )
    assert code == 0, log[-3000:]
    urls = Counter(urls_of(out))
    assert set(urls) == {f"{site.url}/p/{n}" for n in range(PAGES)}  # none lost
    # Repeats: at most the requests in flight when Redis went away (none expected).
    assert sum(urls.values()) - len(urls) <= CONCURRENCY, urls.most_common(3)
    assert out.read_bytes().endswith(b"\n")  # no cut line
    assert "Redis is back after" in log and "Traceback" not in log
    assert "'websim/redis/outage/count': 1" in log
    assert "Traceback" not in stderr


def test_a_redis_that_comes_back_empty_stops_the_worker_with_one_line(
    persistent_redis: LocalRedis, site: TreeSite, tmp_path: Path
) -> None:
    out = tmp_path / "worker.jsonl"
    code, log, stderr = crawl_through_a_redis_restart(
        persistent_redis, site, out, outage=1, empty=True
    )
    assert code == 1, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "run marker" in errors[0], errors
    assert "'finish_reason': 'redis_state_lost'" in log and "Traceback" not in log
    assert stderr.strip().splitlines()[-1] == (
        "scrapy crawl site: Redis lost the crawl's queue and leases (no run marker) "
        "(finish reason redis_state_lost)"
    )
    assert out.read_bytes().endswith(b"\n")  # the pages written are whole


@pytest.mark.slow
def test_a_hung_redis_is_an_outage_ridden_out_not_a_blocked_worker(
    site: TreeSite, tmp_path: Path
) -> None:
    """redis-server SIGSTOPped (it accepts connections, answers nothing) until the worker has
    seen a call time out, then SIGCONTed: well within the lease, so nothing is requeued."""
    out = tmp_path / "worker.jsonl"
    with LocalRedis() as redis:
        server = redis.process
        assert server is not None

        def hang() -> None:
            server.send_signal(signal.SIGSTOP)
            stopped = time.monotonic()
            try:
                # A blocked worker never logs the outage: give up well within the lease.
                while "holding follow-ups" not in out.with_suffix(".log").read_text("utf-8"):
                    if time.monotonic() > stopped + 15:
                        break
                    time.sleep(0.05)
                time.sleep(max(0.0, stopped + 3 - time.monotonic()))  # hung for 3 s at least
            finally:
                server.send_signal(signal.SIGCONT)

        code, text, stderr = crawl_through(
            redis,
            site,
            out,
            hang,
            "WEBSIM_REDIS_LEASE=40",  # longer than the hang, however long the worker takes
            "WEBSIM_REDIS_SOCKET_TIMEOUT=0.5",
        )
    assert code == 0, text[-3000:]
    assert "Timeout reading from" in text and "Redis is back after" in text
    timeouts = re.search(r"'websim/redis/timeouts': (\d+)", text)
    assert timeouts is not None and int(timeouts.group(1)) >= 1
    urls = Counter(urls_of(out))
    assert set(urls) == {f"{site.url}/p/{n}" for n in range(PAGES)}  # none lost
    assert sum(urls.values()) - len(urls) <= CONCURRENCY, urls.most_common(3)
    assert "Traceback" not in text and "Traceback" not in stderr


def test_websim_seed_on_a_hung_redis_is_one_line(tmp_path: Path) -> None:
    with LocalRedis() as server:
        assert server.process is not None
        server.process.send_signal(signal.SIGSTOP)
        try:
            command = ["seed", "site", "http://a.org/", "--redis", server.url]
            command += ["-s", "WEBSIM_REDIS_SOCKET_TIMEOUT=0.5"]
            done = subprocess.run(
                [sys.executable, "-m", "websim_crawler", *command],
                cwd=tmp_path,
                env=ENVIRONMENT,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            server.process.send_signal(signal.SIGCONT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # redis-py names the socket or the address depending on its version
    (line,) = done.stderr.strip().splitlines()
    assert re.fullmatch(
        rf"websim seed: error: Redis at {re.escape(server.url)}: Timeout reading from \S+", line
    ), line


def test_a_socket_timeout_longer_than_half_the_lease_is_refused() -> None:
    assert DistributedParams(socket_timeout=2.0, lease=4.0).socket_timeout == 2.0
    with pytest.raises(ConfigError, match=r"WEBSIM_REDIS_SOCKET_TIMEOUT \(3 s\) must be at most"):
        DistributedParams(socket_timeout=3.0, lease=4.0)
    settings = Settings(  # scrapy-redis' own client gets the timeout too
        {"EXTENSIONS": {}, "WEBSIM_REDIS_URL": "redis://h:1/0", "WEBSIM_REDIS_SOCKET_TIMEOUT": 0.5}
    )
    wire_distributed(settings)
    assert settings.getdict("REDIS_PARAMS")["socket_timeout"] == 0.5


# How each unusable Redis is set up, and what its one line says.
UNUSABLE_REDIS = {
    "nothing-listening": ({}, "Connection refused"),
    "wrong-password": ({"requirepass": "s3cret"}, "give its password in the URL"),
    # It answers PING, but the worker's first write fails: full, with no eviction allowed.
    "full": ({"maxmemory": "1", "maxmemory-policy": "noeviction"}, "it refuses writes"),
    "read-only-replica": (
        {"replica-read-only": "yes", "replicaof": "127.0.0.1 1"},
        "refuses writes",
    ),
}


@pytest.mark.parametrize("kind", list(UNUSABLE_REDIS))
def test_an_unusable_redis_at_start_is_one_line_and_exit_1(kind: str, tmp_path: Path) -> None:
    config, said = UNUSABLE_REDIS[kind]
    server = None
    if config:
        server = LocalRedis().start()
        client = pytest.importorskip("redis").Redis.from_url(server.url)
        for name, value in config.items():
            if name == "replicaof":  # a replica of a primary that is not there: read-only
                client.execute_command("REPLICAOF", *value.split())
            else:
                client.config_set(name, value)
        url = server.url
    else:
        url = f"redis://127.0.0.1:{_free_port()}/0"
    try:
        command = ["scrapy", "crawl", "site", "-s", f"WEBSIM_REDIS_URL={url}"]
        done = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=REPO,
            env=ENVIRONMENT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        if server is not None:
            server.stop()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, done.stderr[-3000:]
    assert f"cannot use Redis at {url} (WEBSIM_REDIS_URL)" in errors[0]
    assert said in errors[0]


def test_reconcile_releases_what_was_finished_and_requeues_what_is_not_held() -> None:
    redis = pytest.importorskip("redis")
    with LocalRedis() as server:
        client = redis.Redis.from_url(server.url)
        keys = RedisKeys.of("r0", "site")
        client.zadd(keys.requests, {b"finished": 0, b"held": 1, b"orphan": 2})
        leases = RedisLeases(client, keys, lease_seconds=30, max_attempts=2)
        leases.join_run()
        leases.beat()
        (finished, _), (held, _), (_, data) = [leases.take() for _ in range(3)]  # type: ignore[misc]
        # During an outage: "finished" was done, "held" is still in progress, and the reply
        # that gave "orphan" to this worker was lost with the connection.
        assert leases.reconcile([finished], {held}) == Reconciled(released=1, requeued=1)
        assert client.hkeys(keys.in_flight(leases.worker)) == [held.encode()]
        assert client.zrange(keys.requests, 0, -1) == [data] == [b"orphan"]
        assert leases.reconcile([], {held}) == Reconciled(0, 0)  # nothing left to do


def test_a_lost_run_marker_stops_take_push_and_beat_before_they_write() -> None:
    redis = pytest.importorskip("redis")
    with LocalRedis() as server:
        client = redis.Redis.from_url(server.url)
        keys = RedisKeys.of("r1", "site")
        leases = RedisLeases(client, keys, lease_seconds=30, max_attempts=2)
        run = leases.join_run()
        assert leases.push("fp", 0, b"request", None) == 1
        assert leases.push("fp", 0, b"request", None) == 0  # seen: a retried push is no twin
        client.flushall()  # a Redis restarted without persistence
        for operation in (leases.take, leases.beat, lambda: leases.push("fp2", 0, b"x", None)):
            with pytest.raises(CrawlStateLost, match="r1:site:run is gone"):
                operation()
        assert client.dbsize() == 0  # nothing written into the empty Redis
        assert RedisLeases(client, keys, 30, 2).join_run() != run  # a new crawl, a new run
