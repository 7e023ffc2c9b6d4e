"""Packing helpers: ragged per-document arrays for the packer tests."""

from __future__ import annotations

import numpy as np


def ragged(lengths, seed: int = 0, turn: int = 5) -> dict[str, np.ndarray]:
    """Synthetic documents: random ids, mask alternating untrained/trained runs of ``turn``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    total = int(offsets[-1])
    pos = np.arange(total) - np.repeat(offsets[:-1], lengths)
    msg = (pos // turn).astype(np.int32)
    rng = np.random.default_rng(seed)
    return {"ids": rng.integers(100, 50_000, total).astype(np.int32), "mask": msg % 2 == 1, "offsets": offsets,
            "message_index": msg}
