"""Output shards, written so that a shard exists only when it is complete.

Layout under the output folder (readable without ocml):

- ``data/train-NNNNN.parquet``: TRL's columns.  Packed: ``input_ids`` list<int32>,
  ``labels`` list<int64> (-100 = no loss), ``position_ids`` list<int32>, ``seq_lengths``
  list<int32>; rows carry no padding (a row's ``seq_lengths`` sum to its length, which is
  what TRL's padding-free collator rebuilds ``position_ids`` from).  Unpacked
  (``--no-pack``): one row per conversation, ``input_ids``, ``labels``, ``assistant_masks``
  list<int8>.
  Provenance (``pipeline.provenance``): packed rows carry ``doc_source`` / ``doc_record``
  list<int32> / list<int64>, one entry per ``seq_lengths`` entry (the input number and the
  record index of that document; a split document's pieces repeat it); unpacked rows carry
  scalar ``source`` / ``record``.
- ``npy/train-NNNNN/*.npy`` (memmap-able).  Packed: ``input_ids`` int32, ``labels`` int32,
  ``position_ids`` int32, all ``[rows, seq_len]`` with padding (pad id, label -100,
  positions restarting at 0), and the segment table ``seq_lengths`` int32 [segments]
  (padding segments included: each row's lengths sum to seq_len) with ``seq_offsets``
  int64 [rows+1] into it, and ``doc_source`` int32 / ``doc_record`` int64 beside
  ``seq_lengths`` (-1 for padding).  Unpacked: flat ``input_ids`` / ``labels`` int32,
  ``offsets`` int64 [docs+1], ``source`` / ``record`` [docs].
- ``megatron/train-NNNNN_text_document.{bin,idx}`` and ``..._loss_mask_document.{bin,idx}``
  (``--output megatron``, unpacked): Megatron-LM indexed datasets, one sequence per
  document (see ``megatron``); packed (``--seq-len``): ``megatron/train-NNNNN.sft.{bin,idx}``,
  Megatron-Bridge's packed SFT dataset, one item per row (see ``megatron_sft``).
- ``seq_idx`` (``--seq-idx``, packed only): per token, the index of its segment in the row
  (transformers' ``DataCollatorWithFlattening`` name), for block-diagonal attention masks:
  a Parquet list<int32> column, and ``seq_idx.npy`` int32 [rows, seq_len] (padding is a
  segment of its own there).

A shard holds at most ``shard_rows`` rows; ``ShardWriter.cut()`` ends one early (the
pipeline does at every epoch end, so a kill loses at most one epoch of work).  It is
written to a hidden temporary name and renamed into place when complete (an atomic rename
on POSIX), so readers and a resumed run never see half a shard.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..masks import IGNORE as IGNORE  # re-exported for the pipeline (one home: encoder.masks)
from ..packing.packed import segment_index
from .megatron import IDS_KEY, MASK_KEY, IndexedWriter, token_dtype
from .megatron_sft import SftPart

PARQUET_DIR = "data"
NPY_DIR = "npy"
MEGATRON_DIR = "megatron"
_NPY_HEADER = 128  # fixed header size, so the shape can be written once the row count is known


SPLITS = ("train", "validation")  # shard name prefixes (a recipe's validation split: validation-NNNNN)


def shard_name(k: int, split: str = "train") -> str:
    return f"{split}-{k:05d}"


@dataclass
class Block:
    """Rows ready to be written (one of the two shapes).

    Packed: dense ``[rows, seq_len]`` arrays plus the segment table (``seg_offsets``
    [rows+1] into ``seg_lengths`` / ``seg_doc``; ``seg_doc == -1`` marks padding).
    Unpacked: flat ``ids`` / ``labels`` / ``mask`` with ``offsets`` [docs+1].
    """

    rows: int
    input_ids: np.ndarray
    labels: np.ndarray
    position_ids: np.ndarray | None = None
    seg_offsets: np.ndarray | None = None
    seg_lengths: np.ndarray | None = None
    seg_doc: np.ndarray | None = None
    offsets: np.ndarray | None = None
    mask: np.ndarray | None = None
    doc_source: np.ndarray | None = None  # provenance: per segment (packed, -1 = padding) / per document
    doc_record: np.ndarray | None = None

    @property
    def packed(self) -> bool:
        return self.offsets is None

    def slice(self, a: int, b: int) -> Block:
        """Rows [a, b)."""
        if self.packed:
            assert self.position_ids is not None and self.seg_offsets is not None and self.seg_lengths is not None
            assert self.seg_doc is not None
            s0, s1 = int(self.seg_offsets[a]), int(self.seg_offsets[b])
            return Block(b - a, self.input_ids[a:b], self.labels[a:b], self.position_ids[a:b],
                         self.seg_offsets[a:b + 1] - s0, self.seg_lengths[s0:s1], self.seg_doc[s0:s1],
                         doc_source=_cut(self.doc_source, s0, s1), doc_record=_cut(self.doc_record, s0, s1))
        assert self.offsets is not None and self.mask is not None
        t0, t1 = int(self.offsets[a]), int(self.offsets[b])
        return Block(b - a, self.input_ids[t0:t1], self.labels[t0:t1], offsets=self.offsets[a:b + 1] - t0,
                     mask=self.mask[t0:t1], doc_source=_cut(self.doc_source, a, b), doc_record=_cut(self.doc_record, a, b))


def _cut(a: np.ndarray | None, lo: int, hi: int) -> np.ndarray | None:
    return None if a is None else a[lo:hi]


# -- Parquet -----------------------------------------------------------------------------------

def parquet_table(block: Block, seq_idx: bool = False) -> Any:
    """A block as a pyarrow Table with TRL's columns (no per-row Python); ``seq_idx``: add
    the per-token segment index column (packed blocks)."""
    import pyarrow as pa

    if not isinstance(block, Block):  # preference / KTO rows (encoder.inputs.rows.PairBlock)
        return block.table()

    def lists(offsets: np.ndarray, values: np.ndarray, typ: Any) -> Any:
        # int32 offsets (``list``, what ``datasets`` writes); a block is far below 2**31 values.
        return pa.ListArray.from_arrays(arrow_array(offsets, pa.int32()), arrow_array(values, typ))

    if not block.packed:
        assert block.offsets is not None and block.mask is not None
        cols = {
            "input_ids": lists(block.offsets, block.input_ids.astype(np.int32), pa.int32()),
            "labels": lists(block.offsets, block.labels.astype(np.int64), pa.int64()),
            "assistant_masks": lists(block.offsets, block.mask.astype(np.int8), pa.int8()),
        }
        if block.doc_source is not None and block.doc_record is not None:
            cols["source"] = arrow_array(block.doc_source, pa.int32())
            cols["record"] = arrow_array(block.doc_record, pa.int64())
        return arrow_table(cols)
    assert block.seg_offsets is not None and block.seg_lengths is not None and block.seg_doc is not None
    seq_len = block.input_ids.shape[1]
    real = block.seg_doc != -1
    # Padding is always the last segment of its row: a row's length is seq_len minus it.
    pad = np.zeros(block.rows, dtype=np.int64)
    pad_seg = np.flatnonzero(~real)
    row_of_seg = np.searchsorted(block.seg_offsets, np.arange(len(block.seg_doc)), side="right") - 1
    pad[row_of_seg[pad_seg]] = block.seg_lengths[pad_seg]
    row_len = seq_len - pad
    keep = np.arange(seq_len)[None, :] < row_len[:, None]
    tok_off = np.zeros(block.rows + 1, dtype=np.int64)
    np.cumsum(row_len, out=tok_off[1:])
    seg_count = np.add.reduceat(real.astype(np.int64), block.seg_offsets[:-1]) if len(real) else \
        np.zeros(block.rows, dtype=np.int64)
    seg_off = np.zeros(block.rows + 1, dtype=np.int64)
    np.cumsum(seg_count, out=seg_off[1:])
    assert block.position_ids is not None
    cols = {
        "input_ids": lists(tok_off, block.input_ids[keep].astype(np.int32), pa.int32()),
        "labels": lists(tok_off, block.labels[keep].astype(np.int64), pa.int64()),
        "position_ids": lists(tok_off, block.position_ids[keep].astype(np.int32), pa.int32()),
        "seq_lengths": lists(seg_off, block.seg_lengths[real].astype(np.int32), pa.int32()),
    }
    if seq_idx:
        flat = segment_index(block.seg_offsets, block.seg_lengths).reshape(block.rows, seq_len)
        cols["seq_idx"] = lists(tok_off, flat[keep], pa.int32())
    if block.doc_source is not None and block.doc_record is not None:
        cols["doc_source"] = lists(seg_off, block.doc_source[real].astype(np.int32), pa.int32())
        cols["doc_record"] = lists(seg_off, block.doc_record[real].astype(np.int64), pa.int64())
    return arrow_table(cols)


def arrow_array(values: np.ndarray, typ: Any) -> Any:
    """A numpy integer array as an Arrow array of ``typ`` (no nulls), sharing its buffer.

    ``pa.array`` and ``pa.table`` import pandas whenever it is installed (~1 s, once per run:
    issue 30's fixed cost); building from the buffer does not, and writes the same bytes."""
    import pyarrow as pa

    flat = np.ascontiguousarray(values, dtype=_NP_TYPES[str(typ)])
    return pa.Array.from_buffers(typ, len(flat), [None, pa.py_buffer(flat)])


def arrow_table(cols: dict[str, Any]) -> Any:
    """``pa.table(cols)`` without its pandas import (``arrow_array``)."""
    import pyarrow as pa

    return pa.Table.from_arrays(list(cols.values()), names=list(cols))


_NP_TYPES = {"int8": np.int8, "int32": np.int32, "int64": np.int64}


class _ParquetPart:
    def __init__(self, final: Path, seq_idx: bool = False) -> None:
        self.final, self.seq_idx = final, seq_idx
        self.tmp = final.with_name("." + final.name + ".tmp")
        self.writer: Any = None

    @staticmethod
    def paths(final: Path, packed: bool) -> tuple[list[Path], list[Path]]:
        """(files, folders) this part creates: what ``ShardWriter`` claims before opening it."""
        return [final, final.with_name("." + final.name + ".tmp")], []

    def write(self, block: Block) -> None:
        import pyarrow.parquet as pq

        table = parquet_table(block, self.seq_idx)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, table.schema, compression="zstd")
        self.writer.write_table(table)

    def commit(self) -> None:
        if self.writer is not None:
            self.writer.close()
        _fsync(self.tmp)
        os.replace(self.tmp, self.final)

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.tmp.unlink(missing_ok=True)


# -- .npy ----------------------------------------------------------------------------------------

class NpyAppender:
    """An .npy file written row block by row block; its shape is filled in at ``close``."""

    def __init__(self, path: Path, dtype: np.dtype, row_shape: tuple[int, ...]) -> None:
        self.path, self.dtype, self.row_shape = path, np.dtype(dtype), row_shape
        self.rows = 0
        self.f = open(path, "wb")
        self.f.write(b"\0" * _NPY_HEADER)

    def append(self, arr: np.ndarray) -> None:
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        self.rows += arr.shape[0] if arr.ndim else 1
        self.f.write(arr.tobytes())

    def close(self) -> None:
        shape = (self.rows, *self.row_shape)
        text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (self.dtype.str, shape)
        room = _NPY_HEADER - 10
        if len(text) + 1 > room:
            raise ValueError(f"npy header too long for shape {shape}")
        self.f.seek(0)
        self.f.write(b"\x93NUMPY\x01\x00" + room.to_bytes(2, "little") + (text.ljust(room - 1) + "\n").encode())
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()


class _NpyPart:
    def __init__(self, final: Path, packed: bool, seq_len: int, seq_idx: bool = False) -> None:
        self.final = final
        self.tmp = final.with_name("." + final.name + ".tmp")
        self.packed = packed
        self.names = self.file_names(packed, seq_idx)
        _clear(self.tmp, self.names)  # left by a killed run (its files are claimed: ocml's own)
        self.tmp.mkdir(parents=True)
        self.files = {n: NpyAppender(self.tmp / f"{n}.npy", np.dtype(d), r)
                      for n, d, r in self.arrays(packed, seq_len, seq_idx)}
        self.offsets: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self.base = 0  # segments (packed) / tokens (unpacked) written so far

    @staticmethod
    def arrays(packed: bool, seq_len: int, seq_idx: bool = False) -> tuple[tuple[str, type, tuple[int, ...]], ...]:
        row = (seq_len,) if packed else ()
        names: tuple[tuple[str, type, tuple[int, ...]], ...] = (("input_ids", np.int32, row),
                                                                ("labels", np.int32, row))
        if packed:
            names += (("position_ids", np.int32, row), ("seq_lengths", np.int32, ()))
            names += (("seq_idx", np.int32, row),) if seq_idx else ()
        return names + (("doc_source", np.int32, ()), ("doc_record", np.int64, ())) if packed else \
            names + (("source", np.int32, ()), ("record", np.int64, ()))

    @staticmethod
    def file_names(packed: bool, seq_idx: bool = False) -> list[str]:
        """The files of one shard folder."""
        names = [f"{n}.npy" for n, _, _ in _NpyPart.arrays(packed, 0, seq_idx)]
        return names + ["seq_offsets.npy" if packed else "offsets.npy"]

    @staticmethod
    def paths(final: Path, packed: bool, seq_idx: bool = False) -> tuple[list[Path], list[Path]]:
        """(files, folders) this part creates: what ``ShardWriter`` claims before opening it."""
        tmp = final.with_name("." + final.name + ".tmp")
        return [d / n for d in (tmp, final) for n in _NpyPart.file_names(packed, seq_idx)], [tmp, final]

    def write(self, block: Block) -> None:
        f = self.files
        f["input_ids"].append(block.input_ids)
        f["labels"].append(block.labels)
        if self.packed:
            assert block.position_ids is not None and block.seg_offsets is not None and block.seg_lengths is not None
            f["position_ids"].append(block.position_ids)
            f["seq_lengths"].append(block.seg_lengths)
            if "seq_idx" in f:
                f["seq_idx"].append(segment_index(block.seg_offsets, block.seg_lengths).reshape(block.rows, -1))
            n_seg = block.seg_lengths.shape[0]
            f["doc_source"].append(block.doc_source if block.doc_source is not None else np.full(n_seg, -1))
            f["doc_record"].append(block.doc_record if block.doc_record is not None else np.full(n_seg, -1))
            self.offsets.append(block.seg_offsets[1:] + self.base)
            self.base += int(block.seg_offsets[-1])
        else:
            assert block.offsets is not None
            f["source"].append(block.doc_source if block.doc_source is not None else np.full(block.rows, -1))
            f["record"].append(block.doc_record if block.doc_record is not None else np.full(block.rows, -1))
            self.offsets.append(block.offsets[1:] + self.base)
            self.base += int(block.offsets[-1])

    def commit(self) -> None:
        for a in self.files.values():
            a.close()
        name = "seq_offsets.npy" if self.packed else "offsets.npy"
        np.save(self.tmp / name, np.concatenate(self.offsets))
        _clear(self.final, self.names)  # left by a run killed between this rename and its progress record
        os.replace(self.tmp, self.final)

    def abort(self) -> None:
        for a in self.files.values():
            if not a.f.closed:
                a.f.close()
        try:
            _clear(self.tmp, self.names)
        except (OSError, InputError):
            pass  # already failing: the next run clears it (outdir.OutDir.remove)


def _clear(folder: Path, names: list[str]) -> None:
    """Remove a shard folder ocml wrote: its known files, then the folder; anything else in it
    was not written by ocml and stops the run (never deleted)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for n in names:
        (folder / n).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        raise InputError(f"{folder} holds files ocml did not write: {sorted(p.name for p in folder.iterdir())[:5]}",
                         code="E-OUT-CONFLICT", field="--out",
                         hint="move them out of --out, or use another --out") from None


class _MegatronPart:
    """One shard as two Megatron indexed datasets: ids and loss mask (unpacked documents)."""

    @staticmethod
    def paths(prefix: Path) -> tuple[list[Path], list[Path]]:
        """(files, folders) this part creates (``IndexedWriter``'s temporary and final names)."""
        files = []
        for key in (IDS_KEY, MASK_KEY):
            p = prefix.with_name(f"{prefix.name}_{key}")
            files += [p.with_name("." + p.name + ".bin.tmp"), p.with_name("." + p.name + ".idx.tmp"),
                      p.with_name(p.name + ".bin"), p.with_name(p.name + ".idx")]
        return files, []

    def __init__(self, prefix: Path, vocab_size: int) -> None:
        self.parts = [IndexedWriter(prefix.with_name(f"{prefix.name}_{IDS_KEY}"), token_dtype(vocab_size)),
                      IndexedWriter(prefix.with_name(f"{prefix.name}_{MASK_KEY}"), np.dtype(np.uint8))]

    def write(self, block: Block) -> None:
        assert block.offsets is not None and block.mask is not None, "Megatron output holds unpacked documents"
        self.parts[0].add(block.input_ids, block.offsets)
        self.parts[1].add(block.mask.astype(np.uint8), block.offsets)

    def commit(self) -> None:
        for w in self.parts:
            w.commit()

    def abort(self) -> None:
        for w in self.parts:
            w.abort()


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


# -- the shard set ---------------------------------------------------------------------------------

class ShardWriter:
    """Routes rows into shards of at most ``shard_rows`` rows (``cut()`` ends one early);
    calls ``on_shard(k, rows_total)`` after shard k is renamed into place.  Rows below
    ``skip_rows`` (already in the ``first_shard`` complete shards of an interrupted run)
    are dropped, so a resumed run writes exactly the shards that were missing.
    ``claim(files, folders)`` is called before anything is created (``outdir.OutDir.claim``)."""

    def __init__(self, out: Path, *, packed: bool, seq_len: int, shard_rows: int, parquet: bool, npy: bool,
                 skip_rows: int = 0, first_shard: int | None = None,
                 on_shard: Callable[[int, int], None] | None = None,
                 claim: Callable[[list[Path], list[Path]], None] | None = None,
                 split: str = "train", megatron: bool = False, vocab_size: int = 0, seq_idx: bool = False) -> None:
        self.out, self.packed, self.seq_len, self.shard_rows = out, packed, seq_len, shard_rows
        self.split = split
        self.parquet, self.npy = parquet, npy
        self.megatron, self.vocab_size, self.seq_idx = megatron, vocab_size, seq_idx
        self.on_shard = on_shard
        self.claim = claim or (lambda files, folders: None)
        self.rows = 0                       # global rows seen (including skipped ones)
        self.in_shard = 0                   # rows of the open shard (skipped ones included)
        self.skip_rows = skip_rows
        self.shard = skip_rows // shard_rows if first_shard is None else first_shard
        self._parts: list[Any] = []
        for on, sub in ((parquet, PARQUET_DIR), (npy, NPY_DIR), (megatron, MEGATRON_DIR)):
            if on:
                self.claim([], [out / sub])
                (out / sub).mkdir(parents=True, exist_ok=True)

    def write(self, block: Block) -> None:
        a = 0
        while a < block.rows:
            b = min(block.rows, a + self.shard_rows - self.in_shard)
            if self.rows + (b - a) > self.skip_rows:
                lo = max(a, a + self.skip_rows - self.rows)
                part = block if (lo, b) == (0, block.rows) else block.slice(lo, b)
                for p in self._open():
                    p.write(part)
            self.rows += b - a
            self.in_shard += b - a
            a = b
            if self.in_shard == self.shard_rows:
                self._commit()

    def cut(self) -> None:
        """End the open shard here (if it holds rows), so everything written so far is saved."""
        if self.in_shard:
            self._commit()

    def _open(self) -> list[Any]:
        if not self._parts:
            name = shard_name(self.shard, self.split)
            if self.parquet:
                self.claim(*_ParquetPart.paths(self.out / PARQUET_DIR / f"{name}.parquet", self.packed))
            if self.npy:
                self.claim(*_NpyPart.paths(self.out / NPY_DIR / name, self.packed, self.seq_idx))
            if self.megatron:
                self.claim(*(SftPart if self.packed else _MegatronPart).paths(self.out / MEGATRON_DIR / name))
            if self.parquet:
                self._parts.append(_ParquetPart(self.out / PARQUET_DIR / f"{name}.parquet", self.seq_idx))
            if self.npy:
                self._parts.append(_NpyPart(self.out / NPY_DIR / name, self.packed, self.seq_len, self.seq_idx))
            if self.megatron:
                self._parts.append(SftPart(self.out / MEGATRON_DIR / name) if self.packed
                                   else _MegatronPart(self.out / MEGATRON_DIR / name, self.vocab_size))
        return self._parts

    def _commit(self) -> None:
        self.in_shard = 0
        if not self._parts:  # rows all in complete shards of the run resumed (or none): nothing to commit
            return
        for p in self._parts:
            p.commit()
        self._parts = []
        k = self.shard
        self.shard += 1
        if self.on_shard is not None:
            self.on_shard(k, self.rows)

    def finish(self) -> int:
        """Commit the last (short) shard; returns the number of shards."""
        self._commit()
        return self.shard

    def abort(self) -> None:
        for p in self._parts:
            p.abort()
        self._parts = []
