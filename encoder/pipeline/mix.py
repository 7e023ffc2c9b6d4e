"""Source weights and caps: which training conversations a source contributes, how often.

``weight`` multiplies a source's conversations: ``floor(weight)`` copies of every one, plus
a seeded sample of ``round(frac(weight) x n)`` of them once more (``2`` = all twice, ``0.5``
= a seeded half, ``1.5`` = all once + a seeded half again).  ``max_samples`` then caps the
count: a seeded sample of that many of the weighted copies.  Each source draws from its
own stream of the recipe's seed (named after the source), so editing one source never
changes what another takes.
"""

from __future__ import annotations

import math

import numpy as np

from .seeding import generator


def weighted_take(n: int, weight: float, max_samples: int | None, seed: int, name: str) -> np.ndarray:
    """Indices into the source's ``n`` conversations (repeats = copies), ascending."""
    whole = math.floor(weight)
    extra = int(math.floor((weight - whole) * n + 0.5))
    rng = generator(seed, "weights", name)
    parts = [np.tile(np.arange(n, dtype=np.int64), whole)]
    if extra:
        parts.append(rng.choice(n, size=extra, replace=False).astype(np.int64))
    take = np.sort(np.concatenate(parts), kind="stable")
    if max_samples is not None and take.shape[0] > max_samples:
        keep = generator(seed, "max_samples", name).choice(take.shape[0], size=max_samples, replace=False)
        take = take[np.sort(keep)]
    return take


__all__ = ["weighted_take"]
