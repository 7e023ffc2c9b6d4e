"""The packer's result types: ``Packed`` (rows + segment table) and ``PackReport``.

Rows are stored twice, in the two shapes consumers want:

- dense ``[rows, seq_len]`` arrays (``input_ids``, ``labels``, ``position_ids``) for
  ``.npy`` shards and fixed-shape loaders;
- a flat *segment table* (``segment_offsets`` [rows+1] into ``segment_lengths`` /
  ``segment_doc`` / ``segment_start`` [segments]) for Parquet list columns
  (``pa.ListArray.from_arrays(segment_offsets, segment_lengths)`` is TRL's ``seq_lengths``)
  and flash-attn varlen ``cu_seqlens``, without per-row Python.

Padding is a segment of its own, always the last of its row, with ``segment_doc == -1``:
so every row's segment lengths sum to ``seq_len`` and ``cu_seqlens`` ends at ``seq_len``
(TRL's collator rebuilds ``position_ids`` from ``seq_lengths`` by cumsum: padding then
restarts at 0, exactly as ``position_ids`` here do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from ..errors import InputError, InputIndexError
from ..masks import IGNORE as IGNORE  # re-exported: the label of untrained tokens (one home: encoder.masks)

PAD_DOC = -1  # segment_doc of a padding segment


class Overlong(str, Enum):
    """What to do with a document longer than ``seq_len``."""

    DROP = "drop"          # leave it out (reported)
    TRUNCATE = "truncate"  # cut at the last assistant-message end that fits (reported)
    SPLIT = "split"        # cut into seq_len pieces, each packed as its own document (reported)


def fill_rate(tokens: int, rows: int, seq_len: int) -> float:
    """Packed tokens / row capacity: the one formula for every report (0.0 before any row)."""
    cap = rows * seq_len
    return tokens / cap if cap else 0.0


@dataclass(frozen=True, slots=True)
class OverlongRecord:
    """One overlong document and what was done to it."""

    index: int    # input index of the document
    length: int   # its length in tokens
    kept: int     # tokens packed (0 when dropped; == length when split)
    pieces: int   # segments it became (0 dropped, 1 truncated, >= 2 split)
    reason: str   # why, in words (e.g. "prompt + first assistant message longer than seq_len")
    trained: int = 0       # trained tokens of the document (its mask)
    trained_kept: int = 0  # of those, trained in the rows (segment starts are never trained)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "length": self.length, "kept": self.kept,
                "pieces": self.pieces, "reason": self.reason, "trained": self.trained,
                "trained_kept": self.trained_kept}


@dataclass
class PackReport:
    """Counts over everything packed so far (``Packer.report``) or one ``pack()`` call.

    ``tokens`` counts input tokens of packed documents after truncation (== the non-padding
    tokens of all rows); ``trained_tokens`` the labels that are not -100 (the first token
    of each document is never trained, see ``ocml.encoder.pack``).  Overlong documents are
    listed by input index in ``dropped`` / ``truncated`` / ``split``; ``skipped`` holds the
    input indices of failed renders (None results) that were passed in.
    """

    seq_len: int
    documents: int = 0          # input documents packed (a split document counts once)
    segments: int = 0           # document segments in rows (split pieces counted each)
    tokens: int = 0             # document tokens in rows
    trained_tokens: int = 0     # labels != -100
    rows: int = 0
    padding_tokens: int = 0
    dropped: list[OverlongRecord] = field(default_factory=list)
    truncated: list[OverlongRecord] = field(default_factory=list)
    split: list[OverlongRecord] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)

    @property
    def fill_rate(self) -> float:
        """Document tokens / row capacity (1.0 = no padding); 0.0 before any row."""
        return fill_rate(self.tokens, self.rows, self.seq_len)

    @property
    def dropped_tokens(self) -> int:
        """Input tokens not packed: dropped documents plus truncated tails."""
        return sum(r.length - r.kept for r in self.dropped) + sum(r.length - r.kept for r in self.truncated)

    def merge(self, other: PackReport) -> None:
        """Add ``other``'s counts and records to this report (same ``seq_len``)."""
        for name in ("documents", "segments", "tokens", "trained_tokens", "rows", "padding_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.dropped += other.dropped
        self.truncated += other.truncated
        self.split += other.split
        self.skipped += other.skipped

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq_len": self.seq_len, "documents": self.documents, "segments": self.segments,
            "tokens": self.tokens, "trained_tokens": self.trained_tokens, "rows": self.rows,
            "padding_tokens": self.padding_tokens, "fill_rate": self.fill_rate,
            "dropped_tokens": self.dropped_tokens,
            "dropped": [r.to_dict() for r in self.dropped],
            "truncated": [r.to_dict() for r in self.truncated],
            "split": [r.to_dict() for r in self.split],
            "skipped": list(self.skipped),
        }


@dataclass
class Packed:
    """Packed rows: every row exactly ``seq_len`` tokens.

    Dense arrays, ``[rows, seq_len]``:
      ``input_ids`` int32 (padding = ``pad_id``); ``labels`` int64: the token where its
      mask is true, -100 elsewhere, at the first token of every segment and on padding;
      ``position_ids`` int32: 0.. within each segment (padding too restarts at 0).
    Segment table (flat, see the module doc): ``segment_offsets`` int64 [rows+1];
      ``segment_lengths`` int32, ``segment_doc`` int64 (input index, -1 = padding),
      ``segment_start`` int32 (token offset of the segment inside its input document:
      non-zero for the 2nd.. pieces of a split document) — all [segments].
    ``segment_pad`` int32 [segments]: pad tokens at the end of each segment (the whole
      padding segment; ``pad_to_multiple_of`` tails of document segments; else 0).
    ``report``: counts for these rows (``Packer.report`` accumulates over chunks).
    """

    input_ids: np.ndarray
    labels: np.ndarray
    position_ids: np.ndarray
    segment_offsets: np.ndarray
    segment_lengths: np.ndarray
    segment_doc: np.ndarray
    segment_start: np.ndarray
    segment_pad: np.ndarray
    pad_id: int
    report: PackReport

    @property
    def seq_len(self) -> int:
        return int(self.input_ids.shape[1])

    @property
    def rows(self) -> int:
        return int(self.input_ids.shape[0])

    def __len__(self) -> int:
        return self.rows

    @property
    def seq_lengths(self) -> list[np.ndarray]:
        """Per row: its segment lengths (int32), padding last when present; each sums to seq_len."""
        return self._per_row(self.segment_lengths)

    @property
    def doc_index(self) -> list[np.ndarray]:
        """Per row: the input index of each segment (-1 = the padding segment)."""
        return self._per_row(self.segment_doc)

    def _per_row(self, values: np.ndarray) -> list[np.ndarray]:
        return np.split(values, self.segment_offsets[1:-1]) if self.rows else []

    @property
    def seq_idx(self) -> np.ndarray:
        """int32 [rows, seq_len]: index of each token's segment inside its row (0, 0, 1, 1, 1, ...;
        the padding segment counts as one): the ``seq_idx`` of transformers'
        ``DataCollatorWithFlattening(return_seq_idx=True)``, for block-diagonal masks."""
        return segment_index(self.segment_offsets, self.segment_lengths).reshape(self.rows, self.seq_len)

    @property
    def cu_seqlens(self) -> list[np.ndarray]:
        """Per row: int32 [segments+1] cumulative offsets 0..seq_len (flash-attn varlen)."""
        return [np.concatenate(([0], np.cumsum(x, dtype=np.int32))).astype(np.int32) for x in self.seq_lengths]

    def flat_cu_seqlens(self, rows: slice | None = None) -> np.ndarray:
        """int32 cumulative offsets of the segments of ``rows`` (default all) laid end to end,
        as for one flattened batch ``input_ids[rows].reshape(1, -1)`` (the ``cu_seq_lens_q/k``
        of ``DataCollatorWithFlattening`` / ``flash_attn_varlen_func``)."""
        r = range(self.rows)[rows] if rows is not None else range(self.rows)
        if r.step != 1:
            raise InputError("rows must be a contiguous slice", field="rows", hint="e.g. slice(8, 16)")
        a, b = int(self.segment_offsets[r.start]) if len(r) else 0, int(self.segment_offsets[r.stop]) if len(r) else 0
        out = np.zeros(b - a + 1, dtype=np.int32)
        np.cumsum(self.segment_lengths[a:b], out=out[1:])
        return out

    @property
    def padding(self) -> np.ndarray:
        """int64 [rows]: padding tokens at the end of each row."""
        pad = np.zeros(self.rows, dtype=np.int64)
        last = self.segment_offsets[1:] - 1
        has = self.segment_offsets[1:] > self.segment_offsets[:-1]
        is_pad = np.zeros(self.rows, dtype=bool)
        is_pad[has] = self.segment_doc[last[has]] == PAD_DOC
        pad[is_pad] = self.segment_lengths[last[is_pad]]
        return pad

    def row(self, i: int, *, padding: bool = True) -> dict[str, np.ndarray]:
        """Row ``i`` as TRL padding-free columns: ``input_ids``, ``labels``, ``position_ids``,
        ``seq_lengths``.  ``padding=False`` strips the padding segment (TRL's own rows are
        unpadded and their ``seq_lengths`` hold documents only)."""
        a, b = int(self.segment_offsets[i]), int(self.segment_offsets[i + 1])
        lens = self.segment_lengths[a:b]
        n = self.seq_len
        if not padding and b > a and self.segment_doc[b - 1] == PAD_DOC:
            n -= int(lens[-1])
            lens = lens[:-1]
        return {"input_ids": self.input_ids[i, :n], "labels": self.labels[i, :n],
                "position_ids": self.position_ids[i, :n], "seq_lengths": lens}

    def document_tokens(self, index: int) -> np.ndarray:
        """Input document ``index`` reassembled from the rows (its segments by offset)."""
        segs = np.flatnonzero(self.segment_doc == index)
        if segs.size == 0:
            raise InputIndexError(f"document {index} is not in these rows", field="index",
                                  hint="see report.dropped / report.skipped, or another chunk")
        segs = segs[np.argsort(self.segment_start[segs], kind="stable")]
        flat = self.input_ids.reshape(-1)
        starts = self.segment_offsets_tokens()[segs]
        real = (self.segment_lengths[segs] - self.segment_pad[segs]).tolist()  # pad-to-multiple tails left out
        return np.concatenate([flat[s:s + n] for s, n in zip(starts.tolist(), real)])

    def segment_offsets_tokens(self) -> np.ndarray:
        """int64 [segments]: flat token offset (into ``input_ids.reshape(-1)``) of each segment."""
        out = np.zeros(self.segment_lengths.shape[0], dtype=np.int64)
        if out.shape[0] > 1:
            np.cumsum(self.segment_lengths[:-1], out=out[1:])
        return out


def segment_index(segment_offsets: np.ndarray, segment_lengths: np.ndarray) -> np.ndarray:
    """int32 per token of the rows laid end to end: the index of its segment inside its row
    (one home for the ``seq_idx`` column of ``Packed`` and the shards)."""
    counts = np.diff(segment_offsets)
    in_row = np.arange(segment_lengths.shape[0], dtype=np.int32)
    in_row -= np.repeat(segment_offsets[:-1].astype(np.int32), counts)
    return np.repeat(in_row, segment_lengths)


def concat_packed(chunks: list[Packed]) -> Packed:
    """Several chunks (same ``seq_len`` and pad id) as one ``Packed``, rows in order."""
    if not chunks:
        raise InputError("nothing to concatenate", field="chunks")
    report = PackReport(chunks[0].report.seq_len)
    for c in chunks:
        report.merge(c.report)
    seg_counts = np.array([c.segment_lengths.shape[0] for c in chunks], dtype=np.int64)
    shift = np.concatenate(([0], np.cumsum(seg_counts)[:-1]))
    offsets = np.concatenate([np.zeros(1, np.int64)] + [c.segment_offsets[1:] + s for c, s in zip(chunks, shift)])
    return Packed(
        input_ids=np.concatenate([c.input_ids for c in chunks]),
        labels=np.concatenate([c.labels for c in chunks]),
        position_ids=np.concatenate([c.position_ids for c in chunks]),
        segment_offsets=offsets,
        segment_lengths=np.concatenate([c.segment_lengths for c in chunks]),
        segment_doc=np.concatenate([c.segment_doc for c in chunks]),
        segment_start=np.concatenate([c.segment_start for c in chunks]),
        segment_pad=np.concatenate([c.segment_pad for c in chunks]),
        pad_id=chunks[0].pad_id,
        report=report,
    )
