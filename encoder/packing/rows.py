"""Segment table -> dense rows.

Inputs are a token buffer of ids and of int32 labels (-100 where untrained) that ends
with ``seq_len`` padding tokens (pad id, label -100): a padding segment points there.
Each segment is one contiguous run in the buffer and in the output, so rows are built
with one slice copy per segment (measured faster than a whole-array fancy gather:
~2x on the lognormal mix of ``scripts/bench_pack.py``, where segments average ~650
tokens); positions and the segment-start labels are whole-array numpy.
"""

from __future__ import annotations

import numpy as np

from .packed import IGNORE, PAD_DOC, Packed, PackReport
from .padding import padded


def label_buffer(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """int32 labels: ``ids`` where ``mask``, -100 elsewhere (arithmetic: ~3x ``np.where``)."""
    out: np.ndarray = ids.astype(np.int32) + np.int32(-IGNORE)  # ids are >= 0, so untrained -> 0 -> -100
    out *= mask
    out += np.int32(IGNORE)
    return out


def build_rows(buf_ids: np.ndarray, buf_lab: np.ndarray, pad_src: int, seg_row: np.ndarray,
               seg_src: np.ndarray, seg_len: np.ndarray, seg_doc: np.ndarray, seg_start: np.ndarray,
               rows: int, seq_len: int, pad_id: int, multiple: int = 1) -> Packed:
    """Rows ``0..rows-1`` from segments sorted by (row, order in row).

    ``pad_src``: where the buffer's padding area starts; ``seg_src``: buffer offset of each
    segment's first token; ``seg_len``: its real tokens; ``seg_doc``/``seg_start``: input
    index and offset inside the document (copied to the segment table).  ``multiple``:
    each segment takes its length rounded up to it, the tail being pad tokens (label -100,
    positions continuing), see ``padding``.
    """
    s = seg_row.shape[0]
    seg_slots = padded(seg_len, multiple)
    per_row = np.bincount(seg_row, minlength=rows).astype(np.int64)
    used = np.bincount(seg_row, weights=seg_slots, minlength=rows).astype(np.int64)
    pad = seq_len - used
    has_pad = pad > 0
    # Combined table: each row's segments, then its padding segment (if any).
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(per_row + has_pad, out=offsets[1:])
    total_seg = int(offsets[-1])
    first_real = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(per_row, out=first_real[1:])
    slot = offsets[seg_row] + (np.arange(s, dtype=np.int64) - first_real[seg_row])
    pad_rows = np.flatnonzero(has_pad)
    pad_slot = offsets[pad_rows + 1] - 1

    t_len = np.empty(total_seg, dtype=np.int64)   # slots (padded length)
    t_real = np.zeros(total_seg, dtype=np.int64)  # real tokens (0 for a row's padding segment)
    t_src = np.empty(total_seg, dtype=np.int64)
    t_doc = np.empty(total_seg, dtype=np.int64)
    t_start = np.empty(total_seg, dtype=np.int32)
    t_len[slot] = seg_slots
    t_real[slot] = seg_len
    t_len[pad_slot] = pad[pad_rows]
    t_src[slot] = seg_src
    t_src[pad_slot] = pad_src
    t_doc[slot] = seg_doc
    t_doc[pad_slot] = PAD_DOC
    t_start[slot] = seg_start
    t_start[pad_slot] = 0

    total = rows * seq_len
    first = np.zeros(total_seg, dtype=np.int64)  # output offset of each segment's first token
    if total_seg > 1:
        np.cumsum(t_len[:-1], out=first[1:])
    ids = np.empty(total, dtype=np.int32)
    labels = np.empty(total, dtype=np.int64)
    is_pad = t_doc == PAD_DOC
    copy = np.where(is_pad, t_len, t_real)  # a row's padding segment copies from the buffer's pad area
    for a, b, n in zip(first.tolist(), t_src.tolist(), copy.tolist()):
        ids[a:a + n] = buf_ids[b:b + n]
        labels[a:a + n] = buf_lab[b:b + n]
    if multiple > 1:  # the pad tails of document segments
        tail = np.flatnonzero((t_len > t_real) & ~is_pad)
        for a, n in zip((first[tail] + t_real[tail]).tolist(), (t_len[tail] - t_real[tail]).tolist()):
            ids[a:a + n] = pad_id
            labels[a:a + n] = IGNORE
    labels[first] = IGNORE  # no target across a segment start
    itype = np.int32 if total < np.iinfo(np.int32).max else np.int64
    pos = np.arange(total, dtype=itype)
    pos -= np.repeat(first.astype(itype), t_len)  # position inside the segment
    doc_tokens = int(seg_len.sum())
    real = t_doc != PAD_DOC
    report = PackReport(
        seq_len=seq_len,
        documents=int(np.count_nonzero(real & (t_start == 0))),
        segments=s,
        tokens=doc_tokens,
        trained_tokens=int(np.count_nonzero(labels != IGNORE)),
        rows=rows,
        padding_tokens=total - doc_tokens,
    )
    return Packed(
        input_ids=ids.reshape(rows, seq_len),
        labels=labels.reshape(rows, seq_len),
        position_ids=pos.astype(np.int32, copy=False).reshape(rows, seq_len),
        segment_offsets=offsets,
        segment_lengths=t_len.astype(np.int32),
        segment_doc=t_doc,
        segment_start=t_start,
        segment_pad=(t_len - t_real).astype(np.int32),
        pad_id=pad_id,
        report=report,
    )
