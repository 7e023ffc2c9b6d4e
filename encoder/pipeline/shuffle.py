"""Seeded order of documents and rows, and the statistic that shows the order is mixed.

Best-fit-decreasing writes rows full of short documents first and long ones last; a
trainer that reads in order (streaming, Megatron-style) would see the mix drift through
the epoch.  A recipe run feeds the packer its documents in a seeded random order and
writes the packed rows in a seeded random permutation across all shards.
``order_correlation`` (Pearson, row index vs documents per row) measures what is left of
the packer's order: near 0 when mixed (about +-2/sqrt(rows) by chance).
"""

from __future__ import annotations

import numpy as np

from .seeding import generator


def permutation(n: int, seed: int, stream: str) -> np.ndarray:
    return generator(seed, "shuffle", stream).permutation(n).astype(np.int64)


def order_correlation(values: np.ndarray) -> float:
    """Pearson correlation of ``values`` with their index (0.0 when either is constant)."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape[0] < 2 or np.all(v == v[0]):
        return 0.0
    x = np.arange(v.shape[0], dtype=np.float64)
    return float(np.corrcoef(x, v)[0, 1])


__all__ = ["order_correlation", "permutation"]
