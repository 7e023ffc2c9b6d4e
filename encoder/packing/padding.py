"""Pad-to-multiple: every document segment rounded up to a multiple of ``N`` tokens.

Context parallelism splits each sequence into ``2 x cp`` chunks, and tensor cores like
lengths that are multiples of 8/64.  Megatron-Bridge's packed SFT pads every *sequence*
of a pack (``PackedSequenceSpecs.pad_seq_to_mult``, = 2 x context-parallel size in its
recipes); TRL's padding-free collator pads the flattened batch (``pad_to_multiple_of``).
This does the former, which also makes every row a multiple for the latter.  Here a
segment of ``L`` real tokens takes ``ceil(L / N) * N`` slots: its real tokens, then
``pad_id`` tokens with label -100 whose positions continue the segment's (so
``position_ids`` stay monotone inside it and ``seq_lengths`` / ``cu_seqlens`` give the
padded lengths, as context-parallel attention needs).  Packing places the padded length.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError


def positive_int(value: Any, name: str, hint: str) -> int:
    """``value`` as an int >= 1 (typed errors naming ``name``): packing's sizes."""
    try:
        n = operator.index(value)
    except TypeError:
        raise InputTypeError(f"{name} must be an integer, got {value!r}", field=name, hint=hint) from None
    if n <= 0:
        raise InputError(f"{name}={n} must be >= 1", field=name, hint=hint)
    return n


def check_multiple(multiple: Any, seq_len: int) -> int:
    """``multiple`` as an int >= 1 (None -> 1) that divides ``seq_len``."""
    if multiple is None:
        return 1
    n = positive_int(multiple, "pad_to_multiple_of", "e.g. 8 (tensor cores) or 2 x context-parallel size")
    if seq_len % n:
        raise InputError(f"seq_len={seq_len} is not a multiple of pad_to_multiple_of={n}",
                         code="E-USAGE", field="pad_to_multiple_of",
                         hint=f"a padded segment must fit a row: use seq_len {seq_len - seq_len % n + n} "
                              f"or {seq_len - seq_len % n}")
    return n


def padded(lengths: np.ndarray, multiple: int) -> np.ndarray:
    """int64 lengths rounded up to ``multiple`` (unchanged for 1)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if multiple == 1:
        return lengths
    return -(-lengths // multiple) * multiple
