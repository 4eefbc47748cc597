"""Leases on the shared frontier: no request is lost when a worker dies.

A worker takes a request from the shared queue by moving it, in one Lua script, into its own
in-flight hash (``PREFIX:SPIDER:inflight:WORKER``), and deletes it from there once the engine is
done with it (items exported, follow-up requests queued). Its heartbeat key
(``PREFIX:SPIDER:alive:WORKER``) expires after ``WEBSIM_REDIS_LEASE`` seconds unless refreshed.
Every worker looks, at each heartbeat, for registered workers whose heartbeat has expired, and
puts their in-flight requests back on the queue in one Lua script that also deletes the dead
worker's hash, so the requeue happens once however many workers look. A request that was in
flight on ``WEBSIM_REDIS_MAX_ATTEMPTS`` dead workers while its response was being handled (a page
that kills its worker: a parser crash, memory exhausted by its analysis) goes to the dead-letter
list ``PREFIX:SPIDER:dead`` instead. Only requests whose response had arrived count an attempt:
the requests a dying worker was still downloading are innocent bystanders and are requeued as
they are (a page that kills its worker while downloading is bounded by ``DOWNLOAD_MAXSIZE``).
A request with an attempt is a suspect: it goes to ``PREFIX:SPIDER:suspects``, and a worker holds
at most one suspect at a time, so a poison page and the pages that happened to be handled beside
it are not taken together again (the innocent ones finish, and their attempts are forgotten).

A run marker (``PREFIX:SPIDER:run``, a random id set by the first worker of a crawl) tells a
Redis that kept the crawl from one that lost it: taking, queueing and the heartbeat check it in
the same script, and raise :class:`CrawlStateLost` when it is gone (a Redis restarted without
persistence, or flushed).

Seeds are leased the same way: one script moves them from the seed list into the worker's
``PREFIX:SPIDER:inflight-seeds:WORKER`` hash, the worker deletes them once their requests are
queued, and the requeue, give-back and reconcile scripts put the ones left there back at the head
of the seed list.

After an outage a worker reconciles its in-flight hash with what it really holds
(:meth:`RedisLeases.reconcile`): the leases it finished meanwhile are released, and a lease it
does not know (taken by a script whose reply was lost with the connection) goes back on the
queue, so nothing stays leased to a live worker that no longer holds it.

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

from websim_crawler.config.distributed import RedisKeys
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

_RUN_LOST = -1
"""What a script returns when the run marker is not the one this worker joined."""

# KEYS: queue, in-flight hash, lease counter, suspects queue, run marker. ARGV: run id.
# Returns {lease id, data}, nil (nothing queued) or -1 (the run marker is gone).
# A worker holds at most one suspect (field 's' of its in-flight hash names its lease).
_TAKE = """
if redis.call('GET', KEYS[5]) ~= ARGV[1] then return -1 end
local popped, suspect = {}, false
if redis.call('HEXISTS', KEYS[2], 's') == 0 then
  popped = redis.call('ZPOPMIN', KEYS[4])
  suspect = #popped > 0
end
if #popped == 0 then popped = redis.call('ZPOPMIN', KEYS[1]) end
if #popped == 0 then return false end
local lease = tostring(redis.call('INCR', KEYS[3]))
redis.call('HSET', KEYS[2], lease, popped[2] .. '\\n' .. popped[1])
if suspect then redis.call('HSET', KEYS[2], 's', lease) end
return {lease, popped[1]}
"""

# KEYS: seed list, in-flight seeds hash, lease counter, run marker. ARGV: run id, count.
# Returns {lease id, seed, lease id, seed, ...} (empty: no seed waits) or -1 (no run marker).
_TAKE_SEEDS = """
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return -1 end
local seeds = redis.call('LPOP', KEYS[1], ARGV[2])
if not seeds then return {} end
local taken = {}
for _, seed in ipairs(seeds) do
  local lease = tostring(redis.call('INCR', KEYS[3]))
  redis.call('HSET', KEYS[2], lease, seed)
  taken[#taken + 1] = lease
  taken[#taken + 1] = seed
end
return taken
"""

# KEYS: duplicate filter, queue, budgets hash, run marker.
# ARGV: run id, fingerprint ('' = not filtered), score, data, budget name ('' = none), limit.
# Returns 1 (queued), 0 (seen before), 2 (over its budget) or -1 (the run marker is gone).
# One script, so a push retried after a lost reply finds itself seen instead of queued twice.
_FILTER_NEEDS_LAYERS = -2  # the compact filter's push: a layer filled (distributed.bloom)
_PUSH = """
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return -1 end
if ARGV[2] ~= '' and redis.call('SADD', KEYS[1], ARGV[2]) == 0 then return 0 end
if ARGV[5] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[5], 1) > tonumber(ARGV[6]) then
  return 2
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""

# KEYS: heartbeat, workers set, run marker. ARGV: run id, lease ms, worker.
# Returns 1, or -1 (the run marker is gone: nothing is written).
_BEAT = """
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

# KEYS: in-flight hash, attempts hash, queue, suspects queue, in-flight seeds hash, seed list.
# ARGV: how many finished lease ids follow, the finished ids, then the ids still held.
# Releases the finished leases; puts every other lease this worker does not hold back on the
# queue (or the suspects queue if it has an attempt), and every seed lease not finished back at
# the head of the seed list (a seed is never held: its requests are queued as it is taken).
# Returns {released, requeued, seeds requeued}.
_RECONCILE = """
local finished, held = {}, {}
local count = tonumber(ARGV[1])
for i = 2, count + 1 do finished[ARGV[i]] = true end
for i = count + 2, #ARGV do held[ARGV[i]] = true end
local entries = redis.call('HGETALL', KEYS[1])
local released, requeued = 0, 0
for i = 1, #entries, 2 do
  local field = entries[i]
  if field ~= 's' and string.sub(field, 1, 1) ~= 'h' and not held[field] then
    local entry = entries[i + 1]
    local cut = string.find(entry, '\\n', 1, true)
    local score, data = string.sub(entry, 1, cut - 1), string.sub(entry, cut + 1)
    local id = redis.sha1hex(data)
    if finished[field] then
      redis.call('HDEL', KEYS[2], id)
      released = released + 1
    else
      local attempts = tonumber(redis.call('HGET', KEYS[2], id) or '0')
      redis.call('ZADD', attempts > 0 and KEYS[4] or KEYS[3], score, data)
      requeued = requeued + 1
    end
    redis.call('HDEL', KEYS[1], field, 'h' .. field)
    if redis.call('HGET', KEYS[1], 's') == field then redis.call('HDEL', KEYS[1], 's') end
  end
end
local seeds = redis.call('HGETALL', KEYS[5])
local seeds_requeued = 0
for i = #seeds - 1, 1, -2 do
  if finished[seeds[i]] then
    released = released + 1
  else
    redis.call('LPUSH', KEYS[6], seeds[i + 1])
    seeds_requeued = seeds_requeued + 1
  end
  redis.call('HDEL', KEYS[5], seeds[i])
end
return {released, requeued, seeds_requeued}
"""

# KEYS: in-flight hash, attempts hash. ARGV: lease id. Returns 1 if the lease was held.
_RELEASE = """
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return 0 end
local cut = string.find(entry, '\\n', 1, true)
redis.call('HDEL', KEYS[2], redis.sha1hex(string.sub(entry, cut + 1)))
redis.call('HDEL', KEYS[1], ARGV[1], 'h' .. ARGV[1])
if redis.call('HGET', KEYS[1], 's') == ARGV[1] then redis.call('HDEL', KEYS[1], 's') end
return 1
"""

# KEYS: in-flight hash. ARGV: lease id. Marks the request's response as being handled.
_HANDLING = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'h' .. ARGV[1], '1')
end
"""

# KEYS: workers set, queue, dead-letter list, attempts hash, suspects queue, seed list.
# ARGV: key base (PREFIX:SPIDER), max attempts, 1 to give back this worker ARGV[4]'s own
# requests (a clean close: no attempt counted), else 0 (requeue the dead workers' requests).
# A request with an attempt goes to the suspects queue (taken one per worker), else the queue;
# the worker's in-flight seeds go back to the head of the seed list.
# Returns {workers reaped, requests requeued, seeds requeued, dead-lettered data...}.
_REQUEUE = """
local base, max_attempts, own, me = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4]
local reaped, requeued, seeds_requeued, dead = 0, 0, 0, {}
local function requeue(worker, count_attempt)
  local seeds = base .. ':inflight-seeds:' .. worker
  local entries = redis.call('HGETALL', seeds)
  for i = #entries, 2, -2 do
    redis.call('LPUSH', KEYS[6], entries[i])
    seeds_requeued = seeds_requeued + 1
  end
  redis.call('DEL', seeds)
  local in_flight = base .. ':inflight:' .. worker
  local entries = redis.call('HGETALL', in_flight)
  local handling = {}
  for i = 1, #entries, 2 do
    if string.sub(entries[i], 1, 1) == 'h' then handling[string.sub(entries[i], 2)] = true end
  end
  for i = 1, #entries, 2 do
    local field = entries[i]
    if field ~= 's' and string.sub(field, 1, 1) ~= 'h' then
      local entry = entries[i + 1]
      local cut = string.find(entry, '\\n', 1, true)
      local score, data = string.sub(entry, 1, cut - 1), string.sub(entry, cut + 1)
      local id = redis.sha1hex(data)
      local attempts = tonumber(redis.call('HGET', KEYS[4], id) or '0')
      if count_attempt and handling[field] then
        attempts = redis.call('HINCRBY', KEYS[4], id, 1)
      end
      if attempts >= max_attempts then
        redis.call('HDEL', KEYS[4], id)
        redis.call('RPUSH', KEYS[3], data)
        dead[#dead + 1] = data
      else
        redis.call('ZADD', attempts > 0 and KEYS[5] or KEYS[2], score, data)
        requeued = requeued + 1
      end
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
  if requeued > 0 then redis.call('INCRBY', base .. ':requeued', requeued) end
end
local result = {reaped, requeued, seeds_requeued}
for _, data in ipairs(dead) do result[#result + 1] = data end
return result
"""


class CrawlStateLost(WebsimError):
    """The crawl's run marker is gone from Redis: its queue and leases went with it."""


@dataclass
class Requeued:
    """What one look for dead workers did."""

    workers: int
    requests: int
    dead_letter: list[bytes]
    seeds: int = 0


@dataclass
class Reconciled:
    """What reconciling a worker's in-flight hash with the leases it holds did."""

    released: int
    requeued: int
    seeds_requeued: int = 0


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
        self.run = ""
        self._take = server.register_script(_TAKE)
        self._take_seeds = server.register_script(_TAKE_SEEDS)
        self._push = server.register_script(_PUSH)
        self._beat = server.register_script(_BEAT)
        self._reconcile = server.register_script(_RECONCILE)
        self._release = server.register_script(_RELEASE)
        self._handling = server.register_script(_HANDLING)
        self._requeue = server.register_script(_REQUEUE)

    def join_run(self) -> str:
        """Join the crawl's run (marking a new one if none is marked); return its id."""
        with self.server.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.run_marker, uuid.uuid4().hex, nx=True)
            pipe.get(self.keys.run_marker)
            _, run = pipe.execute()
        self.run = run.decode() if isinstance(run, bytes) else str(run)
        return self.run

    def beat(self) -> None:
        """Register this worker and renew its heartbeat for one lease period."""
        keys = [self.keys.heartbeat(self.worker), self.keys.workers, self.keys.run_marker]
        self._check_run(self._beat(keys=keys, args=[self.run, self.lease_ms, self.worker]))

    def take(self) -> tuple[str, bytes] | None:
        """Move the queue's first request into this worker's in-flight hash; return it."""
        keys = [
            self.keys.requests,
            self.keys.in_flight(self.worker),
            self.keys.lease_counter,
            self.keys.suspects,
            self.keys.run_marker,
        ]
        taken = self._check_run(self._take(keys=keys, args=[self.run]))
        if not taken:
            return None
        lease, data = taken
        return (lease.decode() if isinstance(lease, bytes) else str(lease)), bytes(data)

    def take_seeds(self, count: int) -> list[tuple[str, bytes]]:
        """Move up to ``count`` seeds from the seed list into this worker's in-flight seeds.

        One script: a seed is always in the list or leased, so a worker killed before its
        requests are queued loses no seed (its seeds go back to the list with its requests).
        Return (lease id, seed) pairs.
        """
        keys = [
            self.keys.seeds,
            self.keys.seeds_in_flight(self.worker),
            self.keys.lease_counter,
            self.keys.run_marker,
        ]
        taken = self._check_run(self._take_seeds(keys=keys, args=[self.run, count]))
        pairs = zip(taken[::2], taken[1::2], strict=True)
        return [(lease.decode(), bytes(seed)) for lease, seed in pairs]

    def release_seeds(self, leases: list[str]) -> None:
        """Forget seeds whose requests are queued (or that were skipped as invalid)."""
        if leases:
            self.server.hdel(self.keys.seeds_in_flight(self.worker), *leases)

    def push(
        self,
        fingerprint: str | None,
        score: float,
        data: bytes,
        budget: tuple[str, int] | None,
        bloom: Any = None,
    ) -> int:
        """Queue ``data`` unless its fingerprint was seen or its budget is spent.

        ``bloom``: the crawl's compact duplicate filter (``distributed.bloom.RedisBloomFilter``)
        in place of the fingerprint set, checked in the same script. Return 1 (queued), 0 (seen
        before) or 2 (over budget).
        """
        name, limit = budget if budget is not None else ("", 0)
        if bloom is not None and fingerprint is not None:
            keys = [bloom.meta_key, self.keys.requests, self.keys.budgets, self.keys.run_marker]
            while True:
                args = [self.run, "1", score, data, name, limit, *bloom.arguments(fingerprint)]
                answer = int(self._check_run(bloom.push_script(keys=keys, args=args)))
                if answer != _FILTER_NEEDS_LAYERS:
                    return answer
                bloom.refresh_layers()  # a layer filled: the next one's positions are needed
        keys = [self.keys.dupefilter, self.keys.requests, self.keys.budgets, self.keys.run_marker]
        args = [self.run, fingerprint or "", score, data, name, limit]
        return int(self._check_run(self._push(keys=keys, args=args)))

    def reconcile(self, finished: list[str], held: set[str]) -> Reconciled:
        """Release ``finished`` leases; requeue every other lease in the hash not ``held``."""
        keys = [
            self.keys.in_flight(self.worker),
            self.keys.attempts,
            self.keys.requests,
            self.keys.suspects,
            self.keys.seeds_in_flight(self.worker),
            self.keys.seeds,
        ]
        answer = self._reconcile(keys=keys, args=[len(finished), *finished, *held])
        released, requeued, seeds = answer
        return Reconciled(int(released), int(requeued), int(seeds))

    def _check_run(self, answer: Any) -> Any:
        if answer == _RUN_LOST:
            raise CrawlStateLost(
                f"the run marker {self.keys.run_marker} is gone: Redis lost this crawl's queue "
                "and leases (restarted without persistence, or flushed); seed the crawl again "
                "and restart its workers"
            )
        return answer

    def release(self, lease: str) -> bool:
        """Forget a finished request; ``False`` if it was not held (requeued meanwhile)."""
        keys = [self.keys.in_flight(self.worker), self.keys.attempts]
        return bool(self._release(keys=keys, args=[lease]))

    def mark_handling(self, lease: str) -> None:
        """Note that the response of a leased request arrived and is being handled."""
        self._handling(keys=[self.keys.in_flight(self.worker)], args=[lease])

    def suspects_waiting(self) -> int:
        """Return how many requeued suspects (requests once handled by a dying worker) wait."""
        return int(self.server.zcard(self.keys.suspects))

    def requeue_dead(self) -> Requeued:
        """Put the in-flight requests of every worker whose heartbeat expired back on the queue."""
        return self._run_requeue(own=False)

    def give_back(self) -> Requeued:
        """Put this worker's own in-flight requests back (a clean close) and unregister it."""
        return self._run_requeue(own=True)

    def _run_requeue(self, *, own: bool) -> Requeued:
        keys = [
            self.keys.workers,
            self.keys.requests,
            self.keys.dead_letter,
            self.keys.attempts,
            self.keys.suspects,
            self.keys.seeds,
        ]
        args = [self.keys.base, self.max_attempts, "1" if own else "0", self.worker]
        reaped, requeued, seeds, *dead = self._requeue(keys=keys, args=args)
        return Requeued(int(reaped), int(requeued), [bytes(data) for data in dead], int(seeds))


def delete_worker_keys(server: Any, keys: RedisKeys) -> int:
    """Delete every per-worker key (in-flight hashes, heartbeats) of a crawl; return how many."""
    names = [
        name
        for pattern in (keys.in_flight("*"), keys.seeds_in_flight("*"), keys.heartbeat("*"))
        for name in server.scan_iter(match=pattern, count=1000)
    ]
    return int(server.delete(*names)) if names else 0
