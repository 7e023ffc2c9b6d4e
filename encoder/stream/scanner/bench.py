"""``bench``: µs per token of scanning ids with given tables."""

from __future__ import annotations

import time
from typing import Optional, Sequence

from .core import Scanner
from .tables import ScannerTables


def bench(
    tables: ScannerTables,
    ids: Sequence[int],
    *,
    chunk: Optional[int] = None,
    repeat: int = 5,
) -> float:
    """Best-of-``repeat`` cost in µs per token of scanning ``ids``.

    ``chunk=None`` feeds everything in one call (the per-token loop cost);
    ``chunk=1`` is token-by-token streaming (includes per-call overhead).
    ``finish()`` is included.
    """
    ids = list(ids)
    if not ids:
        return 0.0
    chunks = [ids] if chunk is None else [ids[k : k + chunk] for k in range(0, len(ids), chunk)]
    best = float("inf")
    for _ in range(max(1, repeat)):
        sc = Scanner(tables)
        feed = sc.feed
        t0 = time.perf_counter()
        for c in chunks:
            feed(c)
        sc.finish()
        best = min(best, time.perf_counter() - t0)
    return best / len(ids) * 1e6
