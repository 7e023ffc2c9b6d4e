"""Exact deduplication: conversations whose rendered ids are identical (same content key).

Within and across sources, the first occurrence in input order (sources in recipe order)
is kept.  It runs after the validation split, which puts every copy of a content on one
side, so a duplicate is removed from the side it is on.  The report counts duplicates
whether or not ``dedup: exact`` removes them.
"""

from __future__ import annotations

import numpy as np


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Bool per document: True where its key appeared at an earlier position."""
    n = keys.shape[0]
    dup = np.ones(n, dtype=bool)
    if n:
        view = np.ascontiguousarray(keys).view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
        _, first = np.unique(view, return_index=True)
        dup[first] = False
    return dup



__all__ = ["first_occurrences"]
