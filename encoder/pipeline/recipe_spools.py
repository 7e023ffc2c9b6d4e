"""A recipe run's spools (``STATE_DIR/spool``): what the scan leaves on disk for the plan, the
pack and the write phases, and how those read it back.

``docs``: every rendered document's ids, mask (and message index), back to back; ``meta``: one
row per document (length, trained tokens, file, location, source, content key); ``rows-<split>``:
each split's packed rows (dense ids / labels / positions, segments per row, each segment's length
and document).  Removed when the run completes, or by the next run into ``--out`` (``outdir``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .content import content_keys
from .provenance import LOC_BITS
from .resume import SPOOL_DIR
from .run import WRITE_TOKENS
from .shards import SPLITS, Block
from .spool import Spool, ranges
from .workers import Rendered

DOC_COLUMNS = {"ids": np.int32, "mask": np.uint8, "message_index": np.int32}
META_COLUMNS = {"length": np.int64, "trained": np.int64, "file": np.int32, "location": np.int64,
                "source": np.int32, "key": np.uint64}
ROW_COLUMNS = {"input_ids": np.int32, "labels": np.int32, "position_ids": np.int32, "row_segments": np.int64,
               "seg_lengths": np.int32, "seg_doc": np.int64}

#: (ids, mask, offsets, index, message_index) of a batch of spooled documents
DocBatch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


class RecipeSpools:
    def __init__(self, state: Path) -> None:
        self.folder = state / SPOOL_DIR
        self.docs = Spool(self.folder / "docs", DOC_COLUMNS)
        self.meta = Spool(self.folder / "meta", META_COLUMNS)
        self.rows = {s: Spool(self.folder / f"rows-{s}", ROW_COLUMNS) for s in SPLITS}

    def add_documents(self, rd: Rendered, file: int, source: int) -> tuple[np.ndarray, np.ndarray]:
        """Spool the documents of a rendered chunk (``file``: its file number, ``source``: its
        recipe source); their lengths and trained tokens."""
        n = rd.documents
        lengths = np.diff(rd.offsets)
        trained = np.add.reduceat(rd.mask.astype(np.int64), rd.offsets[:-1]) if rd.ids.shape[0] else \
            np.zeros(n, dtype=np.int64)
        trained[lengths == 0] = 0  # reduceat repeats the next value for empty ranges
        self.docs.append("ids", rd.ids)
        self.docs.append("mask", rd.mask)
        if rd.message_index is not None:
            self.docs.append("message_index", rd.message_index)
        m = self.meta
        m.append("length", lengths)
        m.append("trained", trained)
        m.append("file", np.full(n, file, dtype=np.int32))
        m.append("location", rd.locations)
        m.append("source", np.full(n, source, dtype=np.int32))
        m.append("key", content_keys(rd.ids, rd.offsets))
        return lengths, trained

    def metadata(self, sizes: dict[str, int]) -> dict[str, np.ndarray]:
        """The metadata columns, as far as a scan checkpoint recorded them (``sizes``)."""
        return {k: self.meta.read(k)[: sizes[k]] for k in META_COLUMNS}

    def doc_batches(self, order: np.ndarray, n_docs: int, message_index: bool) -> Iterator[DocBatch]:
        """(ids, mask, offsets, index, message_index) of the documents ``order`` (of the first
        ``n_docs`` spooled), a batch at a time."""
        length = self.meta.read("length")[:n_docs]
        start = np.zeros(length.shape[0] + 1, dtype=np.int64)
        np.cumsum(length, out=start[1:])
        file = self.meta.read("file")
        loc = self.meta.read("location")
        ids, mask = self.docs.read("ids"), self.docs.read("mask")
        mi = self.docs.read("message_index") if message_index else None
        step = max(1, min(4096, WRITE_TOKENS // max(1, int(length.mean()) if length.shape[0] else 1)))
        for a in range(0, order.shape[0], step):
            d = order[a:a + step]
            lens = np.asarray(length[d])
            flat = ranges(start[d], lens)
            off = np.zeros(d.shape[0] + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            index = (np.asarray(file[d]).astype(np.int64) << LOC_BITS) | np.asarray(loc[d])
            yield (np.asarray(ids[flat]), np.asarray(mask[flat]).astype(bool), off, index,
                   None if mi is None else np.asarray(mi[flat]))

    def row_blocks(self, split: str, segs: np.ndarray, order: np.ndarray, first: int, seq_len: int,
                   translate: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Iterator[Block]:
        """The packed rows of ``split`` as shard blocks, in ``order`` from its ``first`` (``segs``:
        segments per row; ``translate``: document index -> provenance source, record)."""
        L = seq_len
        spool = self.rows[split]
        n_rows = segs.shape[0]
        dense = {k: spool.read(k).reshape(n_rows, L) for k in ("input_ids", "labels", "position_ids")}
        seg_start = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(segs, out=seg_start[1:])
        seg_len, seg_doc = spool.read("seg_lengths"), spool.read("seg_doc")
        step = max(1, WRITE_TOKENS // max(1, L))
        for a in range(first, n_rows, step):
            rows = order[a:a + step]
            counts = segs[rows]
            flat = ranges(seg_start[rows], counts)
            off = np.zeros(rows.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts, out=off[1:])
            doc = np.asarray(seg_doc[flat])
            source, record = translate(doc)
            yield Block(rows.shape[0], dense["input_ids"][rows], dense["labels"][rows].astype(np.int64),
                        dense["position_ids"][rows], off, np.asarray(seg_len[flat]), doc,
                        doc_source=source, doc_record=record)

    @staticmethod
    def add_rows(spool: Spool, p: Any) -> None:
        """Spool the rows of a ``Packed`` (``spool``: its split's)."""
        if not p.rows:
            return
        spool.append("input_ids", p.input_ids)
        spool.append("labels", p.labels)
        spool.append("position_ids", p.position_ids)
        spool.append("row_segments", np.diff(p.segment_offsets))
        spool.append("seg_lengths", p.segment_lengths)
        spool.append("seg_doc", p.segment_doc)


__all__ = ["DOC_COLUMNS", "META_COLUMNS", "ROW_COLUMNS", "SPOOL_DIR", "RecipeSpools"]
