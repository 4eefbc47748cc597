"""Leases on the shared frontier: no request is lost when a worker dies.

A worker takes a request from the shared queue by moving it, in one Lua script, into its own
in-flight hash (``PREFIX:SPIDER:inflight:WORKER``), and deletes it from there once the engine is
done with it (items exported, follow-up requests queued). Its heartbeat key
(``PREFIX:SPIDER:alive:WORKER``) expires after ``WEBSIM_REDIS_LEASE`` seconds unless refreshed.
Every worker looks, at each heartbeat, for registered workers whose heartbeat has expired, and
puts their in-flight requests back on the queue in one Lua script that also deletes the dead
worker's hash, so the requeue happens once however many workers look. A request that was in
flight on ``WEBSIM_REDIS_MAX_ATTEMPTS`` dead workers (a page that kills its worker) goes to the
dead-letter list ``PREFIX:SPIDER:dead`` instead.

The scripts build per-worker key names inside Lua, so this works on one Redis server (or a
replicated one), not on Redis Cluster.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from websim_crawler.distributed.params import RedisKeys

logger = logging.getLogger(__name__)

# KEYS: queue, in-flight hash, lease counter. Returns {lease id, data} or nil.
_TAKE = """
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then return false end
local lease = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[2], lease, popped[2] .. '\\n' .. popped[1])
return {tostring(lease), popped[1]}
"""

# KEYS: in-flight hash, attempts hash. ARGV: lease id. Returns 1 if the lease was held.
_RELEASE = """
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return 0 end
local cut = string.find(entry, '\\n', 1, true)
redis.call('HDEL', KEYS[2], redis.sha1hex(string.sub(entry, cut + 1)))
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""

# KEYS: workers set, queue, dead-letter list, attempts hash.
# ARGV: key base (PREFIX:SPIDER), max attempts, 1 to requeue this worker ARGV[4] itself
# (a clean close) without counting an attempt, else 0.
# Returns {workers reaped, requests requeued, dead-lettered data...}.
_REQUEUE = """
local base, max_attempts, own, me = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4]
local reaped, requeued, dead = 0, 0, {}
local function requeue(worker, count_attempt)
  local in_flight = base .. ':inflight:' .. worker
  local entries = redis.call('HGETALL', in_flight)
  for i = 1, #entries, 2 do
    local entry = entries[i + 1]
    local cut = string.find(entry, '\\n', 1, true)
    local score, data = string.sub(entry, 1, cut - 1), string.sub(entry, cut + 1)
    local attempts = 0
    if count_attempt then
      attempts = redis.call('HINCRBY', KEYS[4], redis.sha1hex(data), 1)
    end
    if attempts >= max_attempts then
      redis.call('HDEL', KEYS[4], redis.sha1hex(data))
      redis.call('RPUSH', KEYS[3], data)
      dead[#dead + 1] = data
    else
      redis.call('ZADD', KEYS[2], score, data)
      requeued = requeued + 1
    end
  end
  redis.call('DEL', in_flight)
  redis.call('SREM', KEYS[1], worker)
end
if own then
  requeue(me, false)
  redis.call('DEL', base .. ':alive:' .. me)
else
  for _, worker in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if worker ~= me and redis.call('EXISTS', base .. ':alive:' .. worker) == 0 then
      requeue(worker, true)
      reaped = reaped + 1
    end
  end
end
local result = {reaped, requeued}
for _, data in ipairs(dead) do result[#result + 1] = data end
return result
"""


@dataclass
class Requeued:
    """What one look for dead workers did."""

    workers: int
    requests: int
    dead_letter: list[bytes]


class RedisLeases:
    """One worker's leases on the shared queue of ``keys``: take, release, heartbeat, reap."""

    def __init__(
        self, server: Any, keys: RedisKeys, lease_seconds: float, max_attempts: int
    ) -> None:
        self.server = server
        self.keys = keys
        self.lease_ms = max(1, round(lease_seconds * 1000))
        self.max_attempts = max_attempts
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._take = server.register_script(_TAKE)
        self._release = server.register_script(_RELEASE)
        self._requeue = server.register_script(_REQUEUE)

    def beat(self) -> None:
        """Register this worker and renew its heartbeat for one lease period."""
        with self.server.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.heartbeat(self.worker), b"1", px=self.lease_ms)
            pipe.sadd(self.keys.workers, self.worker)
            pipe.execute()

    def take(self) -> tuple[str, bytes] | None:
        """Move the queue's first request into this worker's in-flight hash; return it."""
        keys = [self.keys.requests, self.keys.in_flight(self.worker), self.keys.lease_counter]
        taken = self._take(keys=keys)
        if not taken:
            return None
        lease, data = taken
        return (lease.decode() if isinstance(lease, bytes) else str(lease)), bytes(data)

    def release(self, lease: str) -> bool:
        """Forget a finished request; ``False`` if it was not held (requeued meanwhile)."""
        keys = [self.keys.in_flight(self.worker), self.keys.attempts]
        return bool(self._release(keys=keys, args=[lease]))

    def in_flight(self) -> int:
        """Return how many requests this worker holds."""
        return int(self.server.hlen(self.keys.in_flight(self.worker)))

    def requeue_dead(self) -> Requeued:
        """Put the in-flight requests of every worker whose heartbeat expired back on the queue."""
        return self._run_requeue(own=False)

    def give_back(self) -> Requeued:
        """Put this worker's own in-flight requests back (a clean close) and unregister it."""
        return self._run_requeue(own=True)

    def _run_requeue(self, *, own: bool) -> Requeued:
        keys = [self.keys.workers, self.keys.requests, self.keys.dead_letter, self.keys.attempts]
        args = [self.keys.base, self.max_attempts, "1" if own else "0", self.worker]
        reaped, requeued, *dead = self._requeue(keys=keys, args=args)
        return Requeued(int(reaped), int(requeued), [bytes(data) for data in dead])


def delete_worker_keys(server: Any, keys: RedisKeys) -> int:
    """Delete every per-worker key (in-flight hashes, heartbeats) of a crawl; return how many."""
    names = [
        name
        for pattern in (keys.in_flight("*"), keys.heartbeat("*"))
        for name in server.scan_iter(match=pattern, count=1000)
    ]
    return int(server.delete(*names)) if names else 0
