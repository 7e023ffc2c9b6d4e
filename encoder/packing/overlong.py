"""Documents -> segments: every document becomes 1 segment, except overlong ones.

A segment is ``(doc, start, length)``: tokens ``start:start+length`` of document ``doc``
(its position in ``Docs``).  Documents longer than ``seq_len`` are handled by policy:

- ``drop``: no segment;
- ``truncate``: one segment ``0:cut``, ``cut`` the last *assistant-message end* that fits:
  the end of a trained span (mask true -> false) or, with ``message_index``, a trained token
  whose next token belongs to another message.  So the prompt and whole assistant messages
  are kept; if not even the first assistant message fits (or nothing is trained), dropped;
- ``split``: ``ceil(L / seq_len)`` pieces of ``seq_len`` (the last shorter), each packed as
  its own segment (positions restart, first label -100), like TRL's ``bfd_split``.

Empty documents are dropped (and reported: nothing to train on, and a 0-length segment
would break ``cu_seqlens``).  Every overlong or empty document gets an ``OverlongRecord``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .docs import Docs
from .packed import Overlong, OverlongRecord


@dataclass
class Segments:
    doc: np.ndarray     # int64 [s] position of the document in Docs
    start: np.ndarray   # int64 [s] first token inside the document
    length: np.ndarray  # int64 [s]
    dropped: list[OverlongRecord]
    truncated: list[OverlongRecord]
    split: list[OverlongRecord]


def message_ends(mask: np.ndarray, message_index: np.ndarray | None) -> np.ndarray:
    """Token offsets p (1..L) where an assistant message ends: ``mask[p-1]`` is trained and
    ``p`` is the end, an untrained token, or (with ``message_index``) another message."""
    n = mask.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    nxt_off = np.ones(n, dtype=bool)
    nxt_off[:-1] = ~mask[1:]
    if message_index is not None:
        nxt_off[:-1] |= message_index[1:] != message_index[:-1]
    return np.flatnonzero(mask & nxt_off).astype(np.int64) + 1


def segments(docs: Docs, seq_len: int, policy: Overlong) -> Segments:
    lengths = docs.lengths
    n = lengths.shape[0]
    bad = np.flatnonzero((lengths > seq_len) | (lengths == 0))
    dropped: list[OverlongRecord] = []
    truncated: list[OverlongRecord] = []
    split: list[OverlongRecord] = []
    if bad.size == 0:
        return Segments(np.arange(n, dtype=np.int64), np.zeros(n, np.int64), lengths.astype(np.int64),
                        dropped, truncated, split)
    keep = np.ones(n, dtype=bool)
    keep[bad] = False
    parts_doc = [np.flatnonzero(keep)]
    parts_start = [np.zeros(parts_doc[0].size, np.int64)]
    parts_len = [lengths[parts_doc[0]].astype(np.int64)]
    for k in bad.tolist():  # overlong documents are few: per-document Python is fine here
        length = int(lengths[k])
        idx = int(docs.index[k])
        a, b = int(docs.offsets[k]), int(docs.offsets[k + 1])
        mask = docs.mask[a:b]
        trained = int(np.count_nonzero(mask))
        if length == 0:
            dropped.append(OverlongRecord(idx, 0, 0, 0, "empty document"))
        elif policy is Overlong.DROP:
            dropped.append(OverlongRecord(idx, length, 0, 0, f"longer than seq_len={seq_len}", trained, 0))
        elif policy is Overlong.SPLIT:
            pieces = -(-length // seq_len)
            starts = np.arange(pieces, dtype=np.int64) * seq_len
            parts_doc.append(np.full(pieces, k, np.int64))
            parts_start.append(starts)
            parts_len.append(np.minimum(seq_len, length - starts))
            kept = trained - int(np.count_nonzero(mask[starts]))  # each piece's first label is -100
            split.append(OverlongRecord(idx, length, length, pieces, f"split into {pieces} pieces of <= {seq_len}",
                                        trained, kept))
        else:
            mi = docs.message_index[a:b] if docs.message_index is not None else None
            ends = message_ends(mask, mi)
            fit = ends[ends <= seq_len]
            if fit.size == 0:
                why = ("no trained tokens to cut after" if ends.size == 0
                       else f"prompt + first assistant message ({int(ends[0])} tokens) longer than seq_len={seq_len}")
                dropped.append(OverlongRecord(idx, length, 0, 0, why, trained, 0))
                continue
            cut = int(fit[-1])
            parts_doc.append(np.array([k], np.int64))
            parts_start.append(np.zeros(1, np.int64))
            parts_len.append(np.array([cut], np.int64))
            kept = int(np.count_nonzero(mask[1:cut]))
            truncated.append(OverlongRecord(idx, length, cut, 1, f"cut after an assistant message at {cut}",
                                            trained, kept))
    doc = np.concatenate(parts_doc)
    start = np.concatenate(parts_start)
    seg_len = np.concatenate(parts_len)
    order = np.lexsort((start, doc))  # document order, pieces in order (BFD re-sorts anyway)
    return Segments(doc[order], start[order], seg_len[order], dropped, truncated, split)
