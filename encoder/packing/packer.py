"""``Packer``: best-fit-decreasing over windows of documents, streaming, bounded memory.

A window is ``window`` documents in the order they were added (None = all of them, packed
by ``finish()``).  Each window is packed with ``bfd`` into bins that may already hold
documents carried over from the previous window: after packing, the least-filled bins
(at most ``window // CARRY_DIVISOR`` of them, only those with more than
``CARRY_MIN_SPACE`` of a row free) stay open for the next window instead of being
emitted half-empty.  That keeps windowed fill within 0.1% of global BFD (measured in
``scripts/bench_pack.py``) while memory stays bounded by about ``window`` documents plus
the carried rows.  Windows are cut by document count, never by timing: the same documents
in the same order with the same options give the same rows.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from ocml.vocab.errors import as_enum

from ..errors import InputError, InputTypeError
from .bfd import best_fit_decreasing
from .docs import Docs, as_array, ragged_docs, resolve_pad_id
from .overlong import segments
from .packed import IGNORE, Overlong, Packed, PackReport
from .padding import check_multiple, padded, positive_int
from .rows import build_rows, label_buffer

DEFAULT_WINDOW = 100_000  # documents per window when streaming
CARRY_MIN_SPACE = 0.002   # a bin with more than this share of a row free may stay open
CARRY_DIVISOR = 8         # at most window // CARRY_DIVISOR bins stay open


def parse_overlong(value: Overlong | str) -> Overlong:
    return as_enum(value, Overlong, "overlong", "overlong policy")


def concat_docs(parts: list[Docs]) -> Docs:
    """One ``Docs`` from several; a part without ``message_index`` gets a constant one
    (no message boundaries beyond its mask spans)."""
    if len(parts) == 1:
        return parts[0]
    starts = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    offsets = np.concatenate([np.zeros(1, np.int64)] + [p.offsets[1:] + s for p, s in zip(parts, starts)])
    has_mi = any(p.message_index is not None for p in parts)
    mi = (np.concatenate([p.message_index if p.message_index is not None else np.full(p.ids.size, -1, np.int32)
                          for p in parts]) if has_mi else None)
    return Docs(np.concatenate([p.ids for p in parts]), np.concatenate([p.mask for p in parts]), offsets,
                np.concatenate([p.index for p in parts]), mi, [i for p in parts for i in p.skipped])


def slice_docs(d: Docs, a: int, b: int) -> Docs:
    """Documents ``a:b`` of ``d`` (views where possible)."""
    ta, tb = int(d.offsets[a]), int(d.offsets[b])
    mi = d.message_index[ta:tb] if d.message_index is not None else None
    return Docs(d.ids[ta:tb], d.mask[ta:tb], d.offsets[a:b + 1] - ta, d.index[a:b], mi, [])


class Packer:
    """Pack documents into rows of exactly ``seq_len`` tokens, with bounded memory.

    ``window``: documents per best-fit-decreasing window (None = one global window: rows
    only come out of ``finish()``).  Add documents in input order: rows depend only on the
    documents, their order and the options (never on timing or worker count).
    ``pad_id`` / ``encoder`` / ``overlong`` / ``pad_to_multiple_of``: as for ``ocml.encoder.pack``.
    """

    def __init__(self, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
                 overlong: Overlong | str = "split", window: int | None = DEFAULT_WINDOW,
                 pad_to_multiple_of: int | None = None) -> None:
        self.seq_len = positive_int(seq_len, "seq_len", "the row length in tokens, e.g. 4096")
        self.multiple = check_multiple(pad_to_multiple_of, self.seq_len)
        self.pad_id = resolve_pad_id(pad_id, encoder)
        self.overlong = parse_overlong(overlong)
        self.window = None if window is None else positive_int(window, "window", "documents per window, or None")
        self._pending: list[Docs] = []
        self._pending_n = 0
        self._added = 0  # documents queued so far (default input indices continue from here)
        self._skipped: list[int] = []
        self._out: list[Packed] = []
        self._total = PackReport(self.seq_len)
        self._finished = False
        # Carried (still open) bins: their segments' tokens, compacted, and their spaces.
        self._carry_ids = np.zeros(0, np.int32)
        self._carry_lab = np.zeros(0, np.int32)  # int32 labels (-100 untrained)
        self._carry_bin = np.zeros(0, np.int64)    # per carried segment, bin 0..m-1
        self._carry_src = np.zeros(0, np.int64)
        self._carry_len = np.zeros(0, np.int64)
        self._carry_doc = np.zeros(0, np.int64)
        self._carry_start = np.zeros(0, np.int64)
        self._carry_space = np.zeros(0, np.int64)  # per carried bin

    # -- input ---------------------------------------------------------------------
    def add(self, ids: Any, mask: Any, *, index: int, message_index: Any = None) -> None:
        """Queue one document (``ids`` integers, ``mask`` bools, same length)."""
        ids_a = as_array(ids, "ids", "i")
        try:
            idx = operator.index(index)
        except TypeError:
            raise InputTypeError(f"index must be an integer, got {index!r}", field="index") from None
        self._queue(ragged_docs(ids_a, mask, np.array([0, ids_a.shape[0]]), np.array([idx]), message_index))

    def add_ragged(self, ids: Any, mask: Any, offsets: Any, index: Any = None, message_index: Any = None) -> None:
        """Queue many documents: flat ``ids``/``mask`` (and ``message_index``), ``offsets``
        [n+1] and ``index`` [n], the input index of each document (default: continuing
        from the documents added so far)."""
        if index is None:
            n = np.asarray(offsets).shape[0] - 1
            index = np.arange(self._added, self._added + max(n, 0), dtype=np.int64)
        self._queue(ragged_docs(ids, mask, offsets, index, message_index))

    def add_docs(self, docs: Any) -> None:
        """Queue anything ``ocml.encoder.pack`` accepts (a Batch, RenderResults, a ragged dict)."""
        from .docs import as_docs

        d = as_docs(docs)
        self._skipped += d.skipped
        d.skipped = []
        self._queue(d)

    def skip(self, index: Any) -> None:
        """Record input indices that produced no document (failed renders) in the report."""
        self._skipped += [int(i) for i in np.atleast_1d(np.asarray(index))]

    def _queue(self, d: Docs) -> None:
        if self._finished:
            raise InputError("this Packer is finished", field="packer", hint="start a new Packer")
        if len(d) == 0:
            return
        self._pending.append(d)
        self._pending_n += len(d)
        self._added += len(d)
        while self.window is not None and self._pending_n >= self.window:
            self._out.append(self._pack(self._take(self.window), final=False))

    def _take(self, n: int) -> Docs:
        """The first ``n`` pending documents (all of them if fewer)."""
        got: list[Docs] = []
        need = n
        while need and self._pending:
            head = self._pending[0]
            if len(head) <= need:
                got.append(self._pending.pop(0))
                need -= len(head)
            else:
                got.append(slice_docs(head, 0, need))
                self._pending[0] = slice_docs(head, need, len(head))
                need = 0
        self._pending_n -= n - need
        return concat_docs(got) if got else ragged_docs(np.zeros(0, np.int32), np.zeros(0, bool), np.zeros(1, np.int64))

    # -- output --------------------------------------------------------------------
    def ready(self) -> Iterator[Packed]:
        """Packed chunks of the windows that are full (possibly none), oldest first."""
        while self._out:
            yield self._out.pop(0)

    def finish(self) -> Packed:
        """Pack everything still queued or carried; the last chunk (may have 0 rows).

        Chunks still waiting in ``ready()`` are emitted first: call ``ready()`` before."""
        if self._out:
            raise InputError(f"{len(self._out)} packed chunk(s) not taken yet", field="packer",
                             hint="iterate packer.ready() before packer.finish()")
        if self._finished:
            raise InputError("this Packer is finished", field="packer", hint="start a new Packer")
        last = self._pack(self._take(self._pending_n), final=True)
        self._finished = True
        return last

    @property
    def report(self) -> PackReport:
        """Counts over every chunk produced so far (``ready()`` and ``finish()``)."""
        return self._total

    # -- one window ------------------------------------------------------------------
    def _pack(self, docs: Docs, *, final: bool) -> Packed:
        seq_len = self.seq_len
        segs = segments(docs, seq_len, self.overlong)
        n_carry_tok = self._carry_ids.shape[0]
        doc_tok = docs.ids.shape[0]
        pad_src = n_carry_tok + doc_tok
        buf_ids = np.empty(pad_src + seq_len, dtype=np.int32)
        buf_ids[:n_carry_tok] = self._carry_ids
        buf_ids[n_carry_tok:pad_src] = docs.ids
        buf_ids[pad_src:] = self.pad_id
        buf_lab = np.empty(pad_src + seq_len, dtype=np.int32)
        buf_lab[:n_carry_tok] = self._carry_lab
        buf_lab[n_carry_tok:pad_src] = label_buffer(docs.ids, docs.mask)
        buf_lab[pad_src:] = IGNORE

        new_doc = docs.index[segs.doc]
        # Placed by padded length (pad-to-multiple); rows copy the real tokens and pad the rest.
        res = best_fit_decreasing(padded(segs.length, self.multiple), seq_len, keys=(new_doc, segs.start),
                                  open_space=self._carry_space)
        c = self._carry_bin.shape[0]
        rank = np.empty(res.order.shape[0], dtype=np.int64)
        rank[res.order] = np.arange(c, c + res.order.shape[0], dtype=np.int64)
        bins = np.concatenate((self._carry_bin, res.bin))
        src = np.concatenate((self._carry_src, n_carry_tok + docs.offsets[segs.doc] + segs.start))
        length = np.concatenate((self._carry_len, segs.length))
        doc = np.concatenate((self._carry_doc, new_doc))
        start = np.concatenate((self._carry_start, segs.start))
        order = np.lexsort((np.concatenate((np.arange(c, dtype=np.int64), rank)), bins))
        bins, src, length, doc, start = bins[order], src[order], length[order], doc[order], start[order]

        space = res.space
        keep_open = self._stay_open(space, final)
        emit_bins = np.flatnonzero(~keep_open)  # every bin holds >= 1 segment: no empty rows
        row_of_bin = np.full(space.shape[0], -1, dtype=np.int64)
        row_of_bin[emit_bins] = np.arange(emit_bins.shape[0], dtype=np.int64)
        seg_row = row_of_bin[bins]
        out = seg_row >= 0
        packed = build_rows(buf_ids, buf_lab, pad_src, seg_row[out], src[out], length[out], doc[out], start[out],
                            int(emit_bins.shape[0]), seq_len, self.pad_id, self.multiple)

        self._carry(buf_ids, buf_lab, keep_open, space, bins, src, length, doc, start, ~out)
        rep = packed.report
        rep.dropped, rep.truncated, rep.split = segs.dropped, segs.truncated, segs.split
        rep.skipped, self._skipped = self._skipped + docs.skipped, []
        self._total.merge(rep)
        return packed

    def _stay_open(self, space: np.ndarray, final: bool) -> np.ndarray:
        """bool per bin: left open for the next window (the emptiest, bounded; none at the end)."""
        keep_open = np.zeros(space.shape[0], dtype=bool)
        if not final and self.window is not None:
            cand = np.flatnonzero(space > CARRY_MIN_SPACE * self.seq_len)
            limit = max(1, self.window // CARRY_DIVISOR)
            if cand.size > limit:  # the emptiest bins, ties by bin number
                cand = cand[np.lexsort((cand, -space[cand]))[:limit]]
            keep_open[cand] = True
        return keep_open

    def _carry(self, buf_ids: np.ndarray, buf_lab: np.ndarray, keep_open: np.ndarray, space: np.ndarray,
               bins: np.ndarray, src: np.ndarray, length: np.ndarray, doc: np.ndarray, start: np.ndarray,
               keep: np.ndarray) -> None:
        """Keep the open bins' segments (``keep``) for the next window: their tokens compacted
        into a new buffer, bins renumbered 0..m-1 in order."""
        open_bins = np.flatnonzero(keep_open)
        new_bin = np.full(space.shape[0], -1, dtype=np.int64)
        new_bin[open_bins] = np.arange(open_bins.shape[0], dtype=np.int64)
        k_len = length[keep]
        k_src = src[keep]
        new_src = np.zeros(k_len.shape[0], dtype=np.int64)
        if k_len.shape[0] > 1:
            np.cumsum(k_len[:-1], out=new_src[1:])
        tok = np.repeat(k_src - new_src, k_len) + np.arange(int(k_len.sum()), dtype=np.int64)
        self._carry_ids, self._carry_lab = buf_ids[tok], buf_lab[tok]
        self._carry_bin, self._carry_src, self._carry_len = new_bin[bins[keep]], new_src, k_len
        self._carry_doc, self._carry_start = doc[keep], start[keep]
        self._carry_space = space[open_bins]
