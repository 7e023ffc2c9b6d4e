"""Output shards, written so that a shard exists only when it is complete.

Layout under the output folder (readable without ocml):

- ``data/train-NNNNN.parquet``: TRL's columns.  Packed: ``input_ids`` list<int32>,
  ``labels`` list<int64> (-100 = no loss), ``position_ids`` list<int32>, ``seq_lengths``
  list<int32>; rows carry no padding (a row's ``seq_lengths`` sum to its length, which is
  what TRL's padding-free collator rebuilds ``position_ids`` from).  Unpacked
  (``--no-pack``): one row per conversation, ``input_ids``, ``labels``, ``assistant_masks``
  list<int8>.
- ``npy/train-NNNNN/*.npy`` (memmap-able).  Packed: ``input_ids`` int32, ``labels`` int32,
  ``position_ids`` int32, all ``[rows, seq_len]`` with padding (pad id, label -100,
  positions restarting at 0), and the segment table ``seq_lengths`` int32 [segments]
  (padding segments included: each row's lengths sum to seq_len) with ``seq_offsets``
  int64 [rows+1] into it.  Unpacked: flat ``input_ids`` / ``labels`` int32 and
  ``offsets`` int64 [docs+1].

Every shard holds ``shard_rows`` rows (the last one fewer).  It is written to a hidden
temporary name and renamed into place when complete (an atomic rename on POSIX), so
readers and a resumed run never see half a shard.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

IGNORE = -100
PARQUET_DIR = "data"
NPY_DIR = "npy"
_NPY_HEADER = 128  # fixed header size, so the shape can be written once the row count is known


def shard_name(k: int) -> str:
    return f"train-{k:05d}"


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

    @property
    def packed(self) -> bool:
        return self.offsets is None

    def slice(self, a: int, b: int) -> Block:
        """Rows [a, b)."""
        if self.packed:
            assert self.seg_offsets is not None and self.seg_lengths is not None and self.seg_doc is not None
            s0, s1 = int(self.seg_offsets[a]), int(self.seg_offsets[b])
            return Block(b - a, self.input_ids[a:b], self.labels[a:b], self.position_ids[a:b],  # type: ignore[index]
                         self.seg_offsets[a:b + 1] - s0, self.seg_lengths[s0:s1], self.seg_doc[s0:s1])
        assert self.offsets is not None and self.mask is not None
        t0, t1 = int(self.offsets[a]), int(self.offsets[b])
        return Block(b - a, self.input_ids[t0:t1], self.labels[t0:t1], offsets=self.offsets[a:b + 1] - t0,
                     mask=self.mask[t0:t1])


# -- Parquet -----------------------------------------------------------------------------------

def parquet_table(block: Block) -> Any:
    """A block as a pyarrow Table with TRL's columns (no per-row Python)."""
    import pyarrow as pa

    if not isinstance(block, Block):  # preference / KTO rows (encoder.inputs.rows.PairBlock)
        return block.table()

    def lists(offsets: np.ndarray, values: np.ndarray, typ: Any) -> Any:
        # int32 offsets (``list``, what ``datasets`` writes); a block is far below 2**31 values.
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values, type=typ))

    if not block.packed:
        assert block.offsets is not None and block.mask is not None
        return pa.table({
            "input_ids": lists(block.offsets, block.input_ids.astype(np.int32), pa.int32()),
            "labels": lists(block.offsets, block.labels.astype(np.int64), pa.int64()),
            "assistant_masks": lists(block.offsets, block.mask.astype(np.int8), pa.int8()),
        })
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
    return pa.table({
        "input_ids": lists(tok_off, block.input_ids[keep].astype(np.int32), pa.int32()),
        "labels": lists(tok_off, block.labels[keep].astype(np.int64), pa.int64()),
        "position_ids": lists(tok_off, block.position_ids[keep].astype(np.int32), pa.int32()),
        "seq_lengths": lists(seg_off, block.seg_lengths[real].astype(np.int32), pa.int32()),
    })


class _ParquetPart:
    def __init__(self, final: Path) -> None:
        self.final = final
        self.tmp = final.with_name("." + final.name + ".tmp")
        self.writer: Any = None

    def write(self, block: Block) -> None:
        import pyarrow.parquet as pq

        table = parquet_table(block)
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
    def __init__(self, final: Path, packed: bool, seq_len: int) -> None:
        self.final = final
        self.tmp = final.with_name("." + final.name + ".tmp")
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)
        self.packed = packed
        row = (seq_len,) if packed else ()
        names = (("input_ids", np.int32, row), ("labels", np.int32, row))
        names += (("position_ids", np.int32, row), ("seq_lengths", np.int32, ())) if packed else ()
        self.files = {n: NpyAppender(self.tmp / f"{n}.npy", np.dtype(d), r) for n, d, r in names}
        self.offsets: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self.base = 0  # segments (packed) / tokens (unpacked) written so far

    def write(self, block: Block) -> None:
        f = self.files
        f["input_ids"].append(block.input_ids)
        f["labels"].append(block.labels)
        if self.packed:
            assert block.seg_offsets is not None and block.seg_lengths is not None
            f["position_ids"].append(block.position_ids)  # type: ignore[arg-type]
            f["seq_lengths"].append(block.seg_lengths)
            self.offsets.append(block.seg_offsets[1:] + self.base)
            self.base += int(block.seg_offsets[-1])
        else:
            assert block.offsets is not None
            self.offsets.append(block.offsets[1:] + self.base)
            self.base += int(block.offsets[-1])

    def commit(self) -> None:
        for a in self.files.values():
            a.close()
        name = "seq_offsets.npy" if self.packed else "offsets.npy"
        np.save(self.tmp / name, np.concatenate(self.offsets))
        if self.final.exists():  # left by a run killed between this rename and its progress record
            shutil.rmtree(self.final)
        os.replace(self.tmp, self.final)

    def abort(self) -> None:
        for a in self.files.values():
            if not a.f.closed:
                a.f.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


# -- the shard set ---------------------------------------------------------------------------------

class ShardWriter:
    """Routes rows into shards of ``shard_rows`` rows; calls ``on_shard(k, rows_total)`` after
    shard k is renamed into place.  Rows below ``skip_rows`` (already in complete shards of an
    interrupted run) are dropped, so a resumed run writes exactly the shards that were missing."""

    def __init__(self, out: Path, *, packed: bool, seq_len: int, shard_rows: int, parquet: bool, npy: bool,
                 skip_rows: int = 0, on_shard: Callable[[int, int], None] | None = None) -> None:
        self.out, self.packed, self.seq_len, self.shard_rows = out, packed, seq_len, shard_rows
        self.parquet, self.npy = parquet, npy
        self.on_shard = on_shard
        self.rows = 0                       # global rows seen (including skipped ones)
        self.skip_rows = skip_rows
        self.shard = skip_rows // shard_rows
        self._parts: list[Any] = []
        if parquet:
            (out / PARQUET_DIR).mkdir(parents=True, exist_ok=True)
        if npy:
            (out / NPY_DIR).mkdir(parents=True, exist_ok=True)

    def write(self, block: Block) -> None:
        a = 0
        while a < block.rows:
            in_shard = self.rows % self.shard_rows
            b = min(block.rows, a + self.shard_rows - in_shard)
            if self.rows + (b - a) > self.skip_rows:
                lo = max(a, a + self.skip_rows - self.rows)
                part = block if (lo, b) == (0, block.rows) else block.slice(lo, b)
                for p in self._open():
                    p.write(part)
            self.rows += b - a
            a = b
            if self.rows % self.shard_rows == 0:
                self._commit()

    def _open(self) -> list[Any]:
        if not self._parts:
            name = shard_name(self.shard)
            if self.parquet:
                self._parts.append(_ParquetPart(self.out / PARQUET_DIR / f"{name}.parquet"))
            if self.npy:
                self._parts.append(_NpyPart(self.out / NPY_DIR / name, self.packed, self.seq_len))
        return self._parts

    def _commit(self) -> None:
        if not self._parts:
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


def shard_files(out: Path) -> list[Path]:
    """Every shard ocml may have written under ``out`` (complete or temporary)."""
    found: list[Path] = []
    for sub in (PARQUET_DIR, NPY_DIR):
        d = out / sub
        if d.is_dir():
            found += [p for p in d.iterdir() if p.name.startswith(("train-", ".train-"))]
    return sorted(found)


def remove_shards_from(out: Path, first: int) -> None:
    """Remove temporary shards and shards numbered ``first`` or above (stale after a crash)."""
    for p in shard_files(out):
        stem = p.name.lstrip(".").split(".")[0]
        if p.name.startswith(".") or int(stem.split("-")[1]) >= first:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
