"""Best-fit-decreasing bin packing over integer lengths, grouped by size.

Items are taken longest first (ties: the ``keys`` given, e.g. input index); each goes to
the open bin with the *least* remaining space that still holds it (ties: the bin that
reached that space first), else to a new bin.  That is plain sequential BFD, but run in
groups, so Python works per (item size, space class) pair instead of per item:

for k items of size s, the best class is the smallest non-empty space r >= s; sequential
BFD then fills its bins one after another with q = r // s items each (after one item a
bin's space r - s is again the smallest class >= s while it still fits), so a whole class
is consumed with one ``np.repeat``, and only the last bin may be partly used.  New bins
take ``capacity // s`` items each.  Open-bin spaces live in a sorted list of classes
(``bisect``), so the cost does not grow with ``capacity``.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass

import numpy as np


@dataclass
class BfdResult:
    bin: np.ndarray    # int64 [n] bin of each item (open bins given first are 0..m-1)
    order: np.ndarray  # int64 [n] items in placement order (longest first)
    space: np.ndarray  # int64 [bins] remaining space of every bin


def best_fit_decreasing(lengths: np.ndarray, capacity: int, keys: tuple[np.ndarray, ...] = (),
                        open_space: np.ndarray | None = None) -> BfdResult:
    """Pack items of ``lengths`` (each 1..capacity) into bins of ``capacity``.

    ``keys``: tie-break keys for equal lengths, most significant first (default: item
    order).  ``open_space``: remaining space of bins already open (numbered 0..m-1, which
    is also their tie-break order).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = lengths.shape[0]
    order = np.lexsort(tuple(reversed(keys)) + (-lengths,)) if keys else np.argsort(-lengths, kind="stable")
    sizes = lengths[order]
    spaces: list[int] = [] if open_space is None else [int(x) for x in open_space]
    next_bin = len(spaces)
    classes: dict[int, list[int]] = {}
    active: list[int] = []  # sorted spaces r with classes[r] non-empty (0 < r < capacity)

    def put(r: int, bins: list[int]) -> None:
        if r <= 0 or not bins:
            return  # full bins can take nothing more
        cls = classes.get(r)
        if cls:
            cls.extend(bins)
        else:
            classes[r] = list(bins)
            insort(active, r)

    for b, r in enumerate(spaces):
        put(r, [b])
    bin_sorted = np.empty(n, dtype=np.int64)

    if n:
        cuts = np.flatnonzero(sizes[1:] != sizes[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        ends = np.concatenate((cuts, [n])).tolist()
        size_of = sizes[starts].tolist()
    else:
        starts, ends, size_of = [], [], []
    for a, e, s in zip(starts, ends, size_of):
        k = e - a
        pos = a
        while k:
            i = bisect_left(active, s)
            if i == len(active):
                break
            r = active[i]
            cls = classes[r]
            q = r // s
            c = len(cls)
            if k >= c * q:  # the whole class: every bin takes q items
                bin_sorted[pos:pos + c * q] = np.repeat(np.asarray(cls, dtype=np.int64), q)
                pos += c * q
                k -= c * q
                del classes[r]
                active.pop(i)
                put(r - q * s, cls)
            else:  # m full bins and one partly used bin; items of size s run out here
                m, j = divmod(k, q)
                used = cls[:m + (1 if j else 0)]
                del cls[:len(used)]
                if not cls:
                    del classes[r]
                    active.pop(i)
                bin_sorted[pos:pos + k] = np.repeat(np.asarray(used, dtype=np.int64), q)[:k]
                pos += k
                k = 0
                put(r - q * s, used[:m])
                if j:
                    put(r - j * s, used[m:])
        if k:  # open new bins of q items each, the last maybe partly used
            q = capacity // s
            m, j = divmod(k, q)
            nb = m + (1 if j else 0)
            ids = np.arange(next_bin, next_bin + nb, dtype=np.int64)
            bin_sorted[pos:pos + k] = np.repeat(ids, q)[:k]
            put(capacity - q * s, list(range(next_bin, next_bin + m)))
            if j:
                put(capacity - j * s, [next_bin + m])
            next_bin += nb
    # Every bin with space left sits in exactly one class; the others are full.
    space = np.zeros(next_bin, dtype=np.int64)
    for r, bins in classes.items():
        space[bins] = r
    item_bin = np.empty(n, dtype=np.int64)
    item_bin[order] = bin_sorted
    return BfdResult(item_bin, order.astype(np.int64), space)
