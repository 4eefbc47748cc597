"""The layout of a scalable Bloom filter: layer sizes, hash counts and bit positions.

A Bloom filter (Bloom 1970) of ``m`` bits and ``k`` hash functions holding ``n`` items answers
"seen before?" with a false-positive rate of about ``(1 - e^(-kn/m))^k``; for a target rate ``p``
the best choice is ``m = -n ln p / (ln 2)^2`` and ``k = -log2 p`` (about 14.4 bits and 10 hashes
an item at ``p = 0.001``). A crawl does not know ``n`` in advance, so the filter scales as in
Almeida et al., "Scalable Bloom Filters" (2007): when a layer holds its capacity a new layer is
opened, ``growth`` times larger and with its rate tightened by ``tightening``, so that the rates
of all layers sum to at most ``error_rate``. Each layer's ``k`` positions come from two 64-bit
halves of the item's hash by enhanced double hashing (Dillinger and Manolios 2004).

The filter's bits live elsewhere (Redis bitmaps, see ``distributed.bloom``); this module only
says which bits.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

# A Redis string holds at most 512 MiB: a layer never grows past this many bits.
MAX_LAYER_BITS = 2**32 - 1


@dataclass(frozen=True)
class BloomLayer:
    """One layer: ``bits`` bits, ``hashes`` positions per item, full at ``capacity`` items."""

    index: int
    capacity: int
    error_rate: float
    bits: int
    hashes: int


@dataclass(frozen=True)
class ScalableBloomLayout:
    """Layers of a scalable Bloom filter whose total false-positive rate is ``error_rate``."""

    capacity: int = 1_000_000
    error_rate: float = 0.001
    growth: int = 2
    tightening: float = 0.9

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {self.capacity!r}")
        if not 0.0 < self.error_rate < 1.0:
            raise ValueError(f"error_rate must be in (0, 1), got {self.error_rate!r}")
        if self.growth < 1:
            raise ValueError(f"growth must be >= 1, got {self.growth!r}")
        if not 0.0 < self.tightening < 1.0:
            raise ValueError(f"tightening must be in (0, 1), got {self.tightening!r}")

    def layers(self, count: int) -> tuple[BloomLayer, ...]:
        """Return the first ``count`` layers (each a few arithmetic operations)."""
        return tuple(self.layer(index) for index in range(count))

    def layer(self, index: int) -> BloomLayer:
        """Return layer ``index`` (0 is the first); later layers are larger and stricter."""
        # Rates p0 * r^i sum to p0 / (1 - r) = error_rate over infinitely many layers.
        rate = self.error_rate * (1.0 - self.tightening) * self.tightening**index
        bits_per_item = -math.log(rate) / math.log(2) ** 2
        capacity = self.capacity * self.growth**index
        capacity = min(capacity, int(MAX_LAYER_BITS / bits_per_item))
        bits = max(64, math.ceil(capacity * bits_per_item))
        hashes = max(1, math.ceil(-math.log2(rate)))
        return BloomLayer(index, capacity, rate, bits, hashes)


def item_hash(item: str | bytes) -> tuple[int, int]:
    """Return two independent 64-bit hashes of ``item`` (BLAKE2b, 128 bits split in two)."""
    data = item.encode() if isinstance(item, str) else item
    digest = hashlib.blake2b(data, digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


def bit_positions(hashes: tuple[int, int], layer: BloomLayer) -> list[int]:
    """Return the ``layer.hashes`` bit positions of an item (enhanced double hashing)."""
    first, second = hashes
    bits = layer.bits
    position, step = first % bits, second % bits
    positions = []
    for round_ in range(layer.hashes):
        positions.append(position)
        position = (position + step) % bits
        step = (step + round_ + 1) % bits
    return positions
