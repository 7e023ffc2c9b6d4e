"""The validation split: drawn per conversation *content*, before weighting and packing.

A conversation goes to validation when its seeded draw ``unit(key, seed, "split")`` is
below the fraction (``validation: 0.01``), or among the ``count`` smallest draws of the
distinct contents (``validation: 500``).  The draw is a function of the content key
(``content``): duplicates always fall on the same side, so no validation conversation is
ever trained on, and the split is the same whatever the order, the weights or the number
of workers.
"""

from __future__ import annotations

import numpy as np

from .recipe import RecipeError, Validation
from .seeding import unit


def validation_mask(keys: np.ndarray, spec: Validation | None, seed: int) -> np.ndarray:
    """Bool per document (``keys``: ``[docs, 2]`` uint64): True = validation."""
    n = keys.shape[0]
    if spec is None or n == 0:
        return np.zeros(n, dtype=bool)
    u = unit(keys[:, 0] ^ keys[:, 1], seed, "split")
    if spec.fraction is not None:
        below: np.ndarray = u < spec.fraction  # numpy's stubs: an ndarray comparison gives Any
        return below
    count = int(spec.count or 0)
    distinct = np.unique(u)
    if count >= distinct.shape[0]:
        raise RecipeError(f"validation: {count} conversations asked, but the input has only "
                          f"{distinct.shape[0]} distinct ones", field="validation",
                          hint="ask for fewer, or a fraction such as 0.01")
    chosen: np.ndarray = u <= distinct[count - 1]
    return chosen


__all__ = ["validation_mask"]
