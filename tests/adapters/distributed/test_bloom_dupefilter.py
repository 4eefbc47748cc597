"""The compact duplicate filter: scalable Bloom filter layout and its Redis bitmaps."""

from __future__ import annotations

import hashlib
import itertools
import math
from typing import Any

import pytest

from websim_crawler.distributed.bloom_layout import (
    MAX_LAYER_BITS,
    ScalableBloomLayout,
    bit_positions,
    item_hash,
)


def fingerprints(count: int, salt: str = "") -> list[str]:
    return [hashlib.sha1(f"{salt}{index}".encode()).hexdigest() for index in range(count)]


# --- the layout (pure) ---------------------------------------------------------------------------


def test_layer_rates_sum_to_at_most_the_error_rate() -> None:
    layout = ScalableBloomLayout(capacity=1000, error_rate=0.001)
    layers = layout.layers(60)
    assert sum(layer.error_rate for layer in layers) <= 0.001
    assert [layer.capacity for layer in layers[:3]] == [1000, 2000, 4000]
    first = layers[0]  # m = -n ln p / (ln 2)^2, k = -log2 p (Bloom 1970)
    assert first.bits == math.ceil(-1000 * math.log(first.error_rate) / math.log(2) ** 2)
    assert first.hashes == math.ceil(-math.log2(first.error_rate))
    assert all(later.hashes >= earlier.hashes for earlier, later in itertools.pairwise(layers))
    assert all(layer.bits <= MAX_LAYER_BITS for layer in layers)  # a Redis string's limit


def test_layout_refuses_bad_parameters() -> None:
    for bad in ({"capacity": 0}, {"error_rate": 0.0}, {"error_rate": 1.0}, {"tightening": 1.0}):
        with pytest.raises(ValueError):
            ScalableBloomLayout(**bad)


def test_bit_positions_are_in_range_and_deterministic() -> None:
    layer = ScalableBloomLayout(capacity=50).layer(0)
    for fingerprint in fingerprints(200):
        positions = bit_positions(item_hash(fingerprint), layer)
        assert len(positions) == layer.hashes
        assert all(0 <= position < layer.bits for position in positions)
        assert positions == bit_positions(item_hash(fingerprint.encode()), layer)


# --- in Redis ------------------------------------------------------------------------------------


@pytest.fixture
def server(redis_url: str) -> Any:
    return pytest.importorskip("redis").Redis.from_url(redis_url)


def bloom_filter(server: Any, key: str, capacity: int, error_rate: float = 1e-7) -> Any:
    """A filter whose false positives are too rare to meet in a test (but for the rate's own)."""
    from websim_crawler.distributed.bloom import RedisBloomFilter

    server.delete(key)
    bloom = RedisBloomFilter(server, key, ScalableBloomLayout(capacity, error_rate))
    bloom.clear()
    return bloom


def test_added_items_are_seen_and_layers_open_as_they_fill(server: Any) -> None:
    bloom = bloom_filter(server, "t:bloom-layers", capacity=100)
    items = fingerprints(1000)
    assert bloom.add_many(items[:500]) == [True] * 500
    assert bloom.add_many(items) == [False] * 500 + [True] * 500  # no false negative, ever
    assert all(not bloom.add(item) for item in items[::37])
    # 1000 items in layers of 100, 200, 400, 800: four layers, every item counted once
    assert len(bloom.layer_keys()) == 4
    assert bloom.count() == 1000
    assert bloom.add_many([]) == []


def test_the_script_sets_the_bits_the_layout_names(server: Any) -> None:
    bloom = bloom_filter(server, "t:bloom-bits", capacity=1000)
    layer = bloom.layout.layer(0)
    for item in fingerprints(20, salt="bits"):
        bloom.clear()
        assert bloom.add(item)
        expected = set(bit_positions(item_hash(item), layer))
        bitmap = server.get(f"{bloom.meta_key}:0")
        assert int.from_bytes(bitmap, "big").bit_count() == len(expected)
        assert all(server.getbit(f"{bloom.meta_key}:0", position) for position in expected)


def test_a_batch_that_fills_several_layers_is_answered_whole(server: Any) -> None:
    bloom = bloom_filter(server, "t:bloom-batch", capacity=10)
    items = fingerprints(500, salt="batch")
    assert bloom.add_many(items) == [True] * 500  # layers 10, 20, 40, 80, 160, 320 opened
    assert len(bloom.layer_keys()) == 6
    assert bloom.add_many(items) == [False] * 500


def test_an_item_of_a_layer_that_just_filled_is_still_seen(server: Any) -> None:
    bloom = bloom_filter(server, "t:bloom-full", capacity=10)
    items = fingerprints(11, salt="full")
    assert bloom.add_many(items[:10]) == [True] * 10  # layer 0 holds exactly its capacity
    assert bloom.add_many([items[3], items[10], items[3]]) == [False, True, False]
    assert bloom.count() == 11


def test_two_clients_share_one_filter(server: Any) -> None:
    from websim_crawler.distributed.bloom import RedisBloomFilter

    first = bloom_filter(server, "t:bloom-shared", capacity=50)
    second = RedisBloomFilter(server, first.key, first.layout)  # a second worker, same key
    items = fingerprints(400, salt="shared")
    assert first.add_many(items[:300]) == [True] * 300  # first opens layers 0..2
    assert second.add_many(items) == [False] * 300 + [True] * 100  # second learns of them


@pytest.mark.slow
def test_false_positive_rate_stays_under_the_target(server: Any) -> None:
    bloom = bloom_filter(server, "t:bloom-rate", capacity=1000, error_rate=0.01)
    # Every item is new: each one answered "seen" is a false positive, while filling and after.
    answers = bloom.add_many(fingerprints(20_000))
    answers += bloom.add_many(fingerprints(20_000, salt="after"))
    false_positives = answers.count(False)
    # at most 0.01 of 40,000 (400) in expectation; allow 4 binomial sigmas (~80)
    assert false_positives <= 480, false_positives
    assert bloom.count() == 40_000 - false_positives


def test_migration_moves_a_plain_set_into_the_filter(server: Any) -> None:
    from websim_crawler.config.distributed import DistributedParams
    from websim_crawler.distributed.bloom import BloomDupeFilter

    key = "t:site:dupefilter"
    server.delete(key, f"{key}:bloom")
    items = fingerprints(2_500, salt="old crawl")
    server.sadd(key, *items)
    params = DistributedParams(dupefilter_capacity=1000, dupefilter_error_rate=1e-7)
    dupefilter = BloomDupeFilter(server, key, params=params)
    assert server.type(key) == b"none"  # the set is gone once its fingerprints moved
    assert dupefilter.bloom.count() == 2_500
    assert dupefilter.bloom.add_many(items) == [False] * 2_500
    dupefilter.clear()
    assert server.keys(f"{key}*") == []


def test_seed_reset_deletes_the_filter(server: Any, redis_url: str) -> None:
    from websim_crawler.cli import main
    from websim_crawler.config.distributed import RedisKeys
    from websim_crawler.distributed.bloom import RedisBloomFilter

    keys = RedisKeys.of("bloom-reset", "site")
    bloom = RedisBloomFilter(server, keys.dupefilter, ScalableBloomLayout(capacity=10))
    bloom.add_many(fingerprints(100))
    assert len(keys.bloom_layers(server)) == 4
    seed = ["seed", "site", "http://127.0.0.1:9/", "--redis", redis_url, "--prefix", "bloom-reset"]
    assert main([*seed, "--reset"]) == 0
    assert server.keys(f"{keys.dupefilter}*") == []
    assert server.llen(keys.seeds) == 1


def test_the_shared_queue_pushes_through_the_filter_as_layers_fill(server: Any) -> None:
    from websim_crawler.config.distributed import RedisKeys
    from websim_crawler.distributed.bloom import RedisBloomFilter
    from websim_crawler.distributed.leases import RedisLeases

    keys = RedisKeys.of("bloom-push", "site")
    server.delete(*keys.all(), *keys.bloom_layers(server))
    leases = RedisLeases(server, keys, lease_seconds=30, max_attempts=2)
    leases.join_run()
    bloom = RedisBloomFilter(server, keys.dupefilter, ScalableBloomLayout(10, 1e-7))
    items = fingerprints(40, salt="push")
    # 40 fingerprints through layers of 10, 20, 40: each new one queued once, each repeat seen
    assert [leases.push(item, 0.0, item.encode(), None, bloom=bloom) for item in items] == [1] * 40
    assert [leases.push(item, 0.0, b"again", None, bloom=bloom) for item in items] == [0] * 40
    assert server.zcard(keys.requests) == 40 and server.type(keys.dupefilter) == b"none"
    assert len(keys.bloom_layers(server)) == 3
    budget = ("start", 1)  # the filter checked first, then the budget, as with the set
    fresh = fingerprints(2, salt="budget")
    assert leases.push(fresh[0], 0.0, b"x", budget, bloom=bloom) == 1
    assert leases.push(fresh[1], 0.0, b"y", budget, bloom=bloom) == 2
