"""A conversation's content key: a hash of its rendered token ids.

The split and dedup rules both follow the content, and the content is what a model is
trained on: the ids.  Two records that render to the same ids (the same conversation
twice, in one source or two, whatever its record shape) have the same key; the mask is
not part of it (the same conversation under two mask policies is still the same text).
"""

from __future__ import annotations

import hashlib

import numpy as np

KEY_WORDS = 2  # a key is 128 bits, as two uint64 words


def content_keys(ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``[docs, 2]`` uint64: BLAKE2b-128 of each document's ids (little-endian int32)."""
    data = np.ascontiguousarray(ids, dtype="<i4")
    buf = data.data.cast("B")
    n = len(offsets) - 1
    out = np.empty((n, KEY_WORDS), dtype=np.uint64)
    raw = bytearray(16 * n)
    for k in range(n):  # one hash call per document (the bytes are hashed in C)
        a, b = int(offsets[k]) * 4, int(offsets[k + 1]) * 4
        raw[16 * k:16 * k + 16] = hashlib.blake2b(buf[a:b], digest_size=16).digest()
    out[:] = np.frombuffer(bytes(raw), dtype="<u8").reshape(n, KEY_WORDS)
    return out


__all__ = ["KEY_WORDS", "content_keys"]
