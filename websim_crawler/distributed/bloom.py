"""A compact shared duplicate filter: a scalable Bloom filter in plain Redis bitmaps.

scrapy-redis keeps every request fingerprint (40 hex characters) in a Redis set: about 90 bytes
per URL, gigabytes at tens of millions of URLs. ``WEBSIM_REDIS_DUPEFILTER=bloom`` keeps them in
the bits of a scalable Bloom filter (:mod:`websim_crawler.distributed.bloom_layout`) instead: a
few bytes per URL, at the price of a stated false-positive rate (a new URL taken for seen, so
never fetched).

Keys, under the crawl's ``PREFIX:SPIDER:dupefilter``:

- ``...:dupefilter:bloom``: a hash with ``layers`` (how many layers are open) and ``count:I``
  (items added to layer ``I``);
- ``...:dupefilter:bloom:I``: layer ``I``'s bits (a Redis string, read and set with BITFIELD).

Check and add is one Lua script, atomic between workers: an item is seen when every one of its
bits is set in some layer; otherwise its bits are set in the newest layer, and when that layer
holds its capacity the next one is opened. Redis modules (RedisBloom) are not needed: Debian's
redis-server has none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from scrapy_redis.dupefilter import RFPDupeFilter

from websim_crawler.config import websim_config
from websim_crawler.config.distributed import DistributedParams
from websim_crawler.distributed.bloom_layout import BloomLayer, ScalableBloomLayout, item_hash

logger = logging.getLogger(__name__)

# Fingerprints checked in one script call: a script blocks the server while it runs (and
# redis-py gives up on a reply after its socket timeout), so big batches go in slices.
BATCH = 500

# ARGV: layers given, items, then (bits, hashes, capacity) per layer given, then for each item and
# layer the two halves of its hash reduced modulo the layer's bits. The script derives the bit
# positions as bloom_layout.bit_positions does (every value stays below 2^34: exact in Lua's
# doubles). Returns {items processed, result per item (1 new, 0 seen)}; fewer processed than
# sent means the newest layer filled and the next one was not given.
_CHECK_AND_ADD_FUNCTION = """
local function check_and_add(meta, A)

local given = tonumber(A[1])
local items = tonumber(A[2])
local active = tonumber(redis.call('HGET', meta, 'layers') or '1')
if active > given then return {0} end
local size, hashes, capacity = {}, {}, {}
for layer = 1, given do
  size[layer] = tonumber(A[3 * layer])
  hashes[layer] = tonumber(A[3 * layer + 1])
  capacity[layer] = tonumber(A[3 * layer + 2])
end
local first = 3 + 3 * given
local results = {0}
local function bits(layer, start, operation)
  local bitcount = size[layer]
  local position, step = tonumber(A[start]), tonumber(A[start + 1])
  local arguments, used = {}, 0
  for round = 1, hashes[layer] do
    arguments[used + 1], arguments[used + 2], arguments[used + 3] = operation, 'u1', position
    used = used + 3
    if operation == 'SET' then used = used + 1 arguments[used] = 1 end
    position = (position + step) % bitcount
    step = (step + round) % bitcount
  end
  return redis.call('BITFIELD', meta .. ':' .. (layer - 1), unpack(arguments, 1, used))
end
local count = tonumber(redis.call('HGET', meta, 'count:' .. (active - 1)) or '0')
local function close()
  redis.call('HSET', meta, 'layers', active, 'count:' .. (active - 1), count)
end
local function all_set(answer)
  for _, bit in ipairs(answer) do
    if bit == 0 then return false end
  end
  return true
end
for item = 1, items do
  local start = first + (item - 1) * 2 * given
  local seen = false
  for layer = 1, active - 1 do  -- full layers: only read
    if all_set(bits(layer, start + 2 * (layer - 1), 'GET')) then seen = true break end
  end
  if not seen and count >= capacity[active] then  -- the newest layer is full: read it, open one
    if active == given then close() return results end
    seen = all_set(bits(active, start + 2 * (active - 1), 'GET'))
    if not seen then
      close()
      active, count = active + 1, 0
    end
  end
  -- the newest layer: setting the bits returns their old values, so one call checks and adds
  if not seen and all_set(bits(active, start + 2 * (active - 1), 'SET')) then seen = true end
  if not seen then count = count + 1 end
  results[1] = item
  results[#results + 1] = seen and 0 or 1
end
close()
return results
end
"""
_CHECK_AND_ADD = _CHECK_AND_ADD_FUNCTION + "return check_and_add(KEYS[1], ARGV)\n"

# The shared queue's push (``distributed.leases``) with this filter in place of the fingerprint
# set, in one script: the run marker checked, the fingerprint checked and added, the budget
# counted, the request queued, or nothing. KEYS: the filter's counts, the queue, the budgets,
# the run marker. ARGV: run id, "1" (check the fingerprint) or "", score, data, budget name,
# budget limit, then the filter's arguments for the one fingerprint. Returns 1 (queued), 0
# (seen), 2 (over budget), -1 (the run marker is gone), -2 (a layer filled: call again).
_PUSH = (
    _CHECK_AND_ADD_FUNCTION
    + """
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return -1 end
if ARGV[2] ~= '' then
  local filter_arguments = {}
  for i = 7, #ARGV do filter_arguments[#filter_arguments + 1] = ARGV[i] end
  local answer = check_and_add(KEYS[1], filter_arguments)
  if answer[1] == 0 then return -2 end
  if answer[2] == 0 then return 0 end
end
if ARGV[5] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[5], 1) > tonumber(ARGV[6]) then
  return 2
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""
)


class RedisBloomFilter:
    """A scalable Bloom filter shared by every worker through one Redis."""

    def __init__(self, server: Any, key: str, layout: ScalableBloomLayout) -> None:
        self.server = server
        self.key = key
        self.layout = layout
        self._script = server.register_script(_CHECK_AND_ADD)
        self.push_script = server.register_script(_PUSH)  # see distributed.leases.push
        self._layers = 1  # open layers as last seen; the script tells when there are more

    def add(self, fingerprint: str) -> bool:
        """Add ``fingerprint``; ``True`` if it was new, ``False`` if (probably) seen before."""
        return self.add_many([fingerprint])[0]

    def add_many(self, fingerprints: Sequence[str]) -> list[bool]:
        """Add fingerprints in order, atomically per call; ``True`` for each that was new."""
        hashes = [item_hash(fingerprint) for fingerprint in fingerprints]
        results: list[bool] = []
        while len(results) < len(hashes):
            layers = self.layout.layers(self._layers + 1)  # one spare: a layer may fill
            pending = hashes[len(results) : len(results) + BATCH]
            answer = self._script(keys=[self.meta_key], args=_arguments(layers, pending))
            processed = int(answer[0])
            results.extend(bool(flag) for flag in answer[1 : processed + 1])
            if processed < len(pending):
                self.refresh_layers()
        return results

    def arguments(self, fingerprint: str) -> list[int]:
        """Return the script arguments that check and add ``fingerprint`` (``push_script``)."""
        return _arguments(self.layout.layers(self._layers + 1), [item_hash(fingerprint)])

    def refresh_layers(self) -> None:
        """Read how many layers are open (after a script said a layer filled)."""
        self._layers = int(self.server.hget(self.meta_key, "layers") or 1)

    @property
    def meta_key(self) -> str:
        """The hash with the open layer count and each layer's item count."""
        return f"{self.key}:bloom"  # RedisKeys.bloom_filter when ``key`` is RedisKeys.dupefilter

    def layer_keys(self) -> list[str]:
        """Return the keys of the open layers' bits."""
        layers = int(self.server.hget(self.meta_key, "layers") or 1)
        return [f"{self.meta_key}:{index}" for index in range(layers)]

    def count(self) -> int:
        """Return how many items were added (each counted once, false positives excluded)."""
        counts = self.server.hgetall(self.meta_key)
        return sum(int(value) for name, value in counts.items() if name.startswith(b"count:"))

    def clear(self) -> None:
        """Delete the filter's keys."""
        self.server.unlink(self.meta_key, *self.layer_keys())
        self._layers = 1

    def migrate_set(self, set_key: str) -> int:
        """Add every fingerprint of the plain set ``set_key``, then delete it; return how many."""
        moved = 0
        batch: list[str] = []
        for member in self.server.sscan_iter(set_key, count=BATCH):
            batch.append(member.decode() if isinstance(member, bytes) else member)
            if len(batch) == BATCH:
                moved += _flush(self, batch)
        moved += _flush(self, batch)
        self.server.unlink(set_key)  # freed in the background: no call waits on it
        return moved


def _flush(bloom: RedisBloomFilter, batch: list[str]) -> int:
    bloom.add_many(batch)
    size = len(batch)
    batch.clear()
    return size


def _arguments(layers: Sequence[BloomLayer], hashes: Iterable[tuple[int, int]]) -> list[int]:
    items = list(hashes)
    arguments = [len(layers), len(items)]
    for layer in layers:
        arguments += [layer.bits, layer.hashes, layer.capacity]
    for first, second in items:
        for layer in layers:
            arguments += [first % layer.bits, second % layer.bits]
    return arguments


class BloomDupeFilter(RFPDupeFilter):
    """scrapy-redis' duplicate filter with the fingerprints in a scalable Bloom filter."""

    def __init__(self, server: Any, key: str, debug: bool = False, **kwargs: Any) -> None:
        params: DistributedParams = kwargs.pop("params", None) or DistributedParams()
        super().__init__(server, key, debug=debug)
        self.bloom = RedisBloomFilter(server, key, bloom_layout(params))
        if server.type(key) in (b"set", "set"):  # a crawl begun with the plain set
            moved = self.bloom.migrate_set(key)
            logger.info("duplicate filter: moved %d fingerprints from the set %s", moved, key)

    @classmethod
    def from_spider(cls, spider: Any) -> BloomDupeFilter:
        """Build the filter on the crawl's Redis and key (as scrapy-redis' scheduler asks)."""
        plain: RFPDupeFilter = RFPDupeFilter.from_spider(spider)
        params = websim_config(spider.crawler).distributed
        return cls(plain.server, plain.key, debug=plain.debug, params=params)

    def request_seen(self, request: Any) -> bool:
        """Tell whether the request's fingerprint was (probably) seen; add it if not."""
        return not self.bloom.add(self.request_fingerprint(request))

    def clear(self) -> None:
        """Delete the filter's keys."""
        self.bloom.clear()


def bloom_layout(params: DistributedParams) -> ScalableBloomLayout:
    """Return the filter layout the distributed settings ask for."""
    return ScalableBloomLayout(
        capacity=params.dupefilter_capacity, error_rate=params.dupefilter_error_rate
    )
