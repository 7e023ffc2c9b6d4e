"""One seed for everything random in a recipe run: named, independent streams derived from it.

Two kinds of randomness, both pure functions of (seed, stream name, input):

- ``generator(seed, stream, *tags)``: a NumPy ``Generator`` for draws over a known set
  (which conversations a weight of 0.5 takes, the order of rows);
- ``unit(keys, seed, stream)``: a uniform [0, 1) number per content key, for decisions that
  must follow the content (the validation split: duplicates draw the same number).
"""

from __future__ import annotations

import zlib

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def tag(text: str) -> int:
    """A stable 32-bit number for a name (CRC-32: the same on every machine and run)."""
    return zlib.crc32(text.encode("utf-8"))


def generator(seed: int, stream: str, *tags: str) -> np.random.Generator:
    """The stream ``stream`` (e.g. ``"weights"``) of ``seed``, specialised by ``tags``
    (e.g. a source's name): changing one stream never shifts another."""
    return np.random.default_rng([seed & 0xFFFFFFFF, seed >> 32 & 0xFFFFFFFF, tag(stream), *map(tag, tags)])


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection on uint64 with full avalanche)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        mixed: np.ndarray = x ^ (x >> np.uint64(31))  # numpy's stubs: uint64 operators give Any
        return mixed


def unit(keys: np.ndarray, seed: int, stream: str) -> np.ndarray:
    """Uniform [0, 1) float64 per uint64 key, seeded: equal keys give equal numbers."""
    salt = _mix(np.array([(seed ^ (tag(stream) << 32)) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        h = _mix(np.asarray(keys, dtype=np.uint64) ^ salt + _GOLDEN)
    uniform: np.ndarray = (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return uniform


__all__ = ["generator", "tag", "unit"]
