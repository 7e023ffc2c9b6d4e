"""Rendered rows -> packed rows: per batch (``OcmlPack``) or in one ordered pass (``TablePacker``).

Input: the render stage's table (``input_ids`` plus ``labels`` or ``assistant_masks``;
``message_index`` for ``overlong="truncate"``; rows with null ``input_ids`` are failed
records).  Output: the rows ``ocml pack`` writes to Parquet (``ocml.encoder.pipeline.shards``:
TRL's padding-free ``input_ids``, ``labels``, ``position_ids``, ``seq_lengths``, no padding
stored), packed by ``ocml.encoder.pack``'s rules.  Documents are numbered by ``id_column`` when
given, else by their row number in the stream (``TablePacker``) or batch (``OcmlPack``; the
dataset row when ``datasets.map`` passes ``with_indices=True``): best-fit ties go to the
lower number.

``OcmlPack`` packs each batch on its own: Ray Data ``map_batches(OcmlPack, batch_size=None)``
packs per block in parallel, ``datasets.map(OcmlPack(...), batched=True, batch_size=N,
remove_columns=...)`` per N rows (as TRL does).  ``TablePacker`` feeds one streaming
``Packer`` (best-fit-decreasing over windows of documents, global when ``window=None``):
the same rows as ``ocml pack`` for the same documents in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from ..pack import DEFAULT_WINDOW, IGNORE, Overlong, Packed, Packer, PackReport, pack
from ..pipeline.shards import Block, parquet_table
from .batches import BatchLike, column, column_names, num_rows, ragged
from .columns import ERROR_COLUMNS, OVERLONG_CODE, PACKED_COLUMNS

#: ``(document id, error_code, error)`` of a record missing from the packed rows.
Failure = tuple[int, str, str]


class _Rendered:
    """One batch of rendered rows as a ragged document set plus its failed rows."""

    def __init__(self, batch: BatchLike, ids_of_rows: np.ndarray, need_message_index: bool) -> None:
        ids, offsets, valid = ragged(column(batch, "input_ids"), np.int32)
        names = column_names(batch)
        if "labels" in names:
            labels, loff, _ = ragged(column(batch, "labels"), np.int64)
            mask = labels != IGNORE
        elif "assistant_masks" in names:
            m, loff, _ = ragged(column(batch, "assistant_masks"), np.int8)
            mask = m.astype(bool)
        else:
            raise InputError("rendered rows need a labels or assistant_masks column", field="labels",
                             hint="render with outputs=('input_ids', 'labels')")
        if not np.array_equal(loff, offsets):
            raise InputError("labels / assistant_masks rows differ in length from input_ids", field="labels")
        message_index = None
        if need_message_index:
            if "message_index" not in names:
                raise InputError("overlong='truncate' needs the message_index column", field="message_index",
                                 hint="render with outputs=('input_ids', 'labels', 'message_index')")
            message_index, moff, _ = ragged(column(batch, "message_index"), np.int32)
            if not np.array_equal(moff, offsets):
                raise InputError("message_index rows differ in length from input_ids", field="message_index")
        keep = np.flatnonzero(valid)  # failed rows (null input_ids) are not documents
        self.docs = {"ids": ids, "mask": mask, "offsets": np.concatenate([[0], offsets[1:][keep]]),
                     "index": ids_of_rows[keep], "message_index": message_index}
        failed = np.flatnonzero(~valid)
        self.failures: list[Failure] = []
        if len(failed):
            take = pa.array(failed)
            none = [None] * len(failed)
            codes = column(batch, "error_code").take(take).to_pylist() if "error_code" in names else none
            texts = column(batch, "error").take(take).to_pylist() if "error" in names else none
            self.failures = [(i, c or "E-INPUT", t or f"row {i} was not rendered")
                             for i, c, t in zip(ids_of_rows[failed].tolist(), codes, texts)]


def _row_ids(batch: BatchLike, id_column: str | None, first: int,
             indices: Sequence[int] | None) -> np.ndarray:
    n = num_rows(batch)
    if id_column is not None:
        col = column(batch, id_column, pa.int64())
        if col.null_count:
            raise InputError(f"id column {id_column!r} has nulls", field=id_column)
        ids: np.ndarray = col.to_numpy(zero_copy_only=False).astype(np.int64)
        return ids
    if indices is not None:
        if len(indices) != n:
            raise InputError(f"{len(indices)} indices for {n} rows", field="indices")
        return np.asarray(indices, dtype=np.int64)
    return np.arange(first, first + n, dtype=np.int64)


def packed_table(p: Packed) -> pa.Table:
    """``Packed`` rows as the pipeline writes them to Parquet (one home: ``shards.parquet_table``)."""
    return parquet_table(Block(p.rows, p.input_ids, p.labels, p.position_ids,
                               seg_offsets=p.segment_offsets, seg_lengths=p.segment_lengths,
                               seg_doc=p.segment_doc))


def overlong_failures(report: PackReport) -> list[Failure]:
    """Documents ``overlong="drop"`` left out: missing records, like failed renders."""
    return [(r.index, OVERLONG_CODE, f"[{OVERLONG_CODE}] document of {r.length} tokens dropped: {r.reason}")
            for r in report.dropped]


def failure_table(failures: Sequence[Failure]) -> pa.Table:
    """One row per missing record: null token columns, ``doc_id``, ``error_code``, ``error``."""
    n = len(failures)
    cols: dict[str, pa.Array] = {name: pa.nulls(n, typ) for name, typ in PACKED_COLUMNS.items()}
    cols["doc_id"] = pa.array([f[0] for f in failures], pa.int64())
    cols["error_code"] = pa.array([f[1] for f in failures], ERROR_COLUMNS["error_code"])
    cols["error"] = pa.array([f[2] for f in failures], ERROR_COLUMNS["error"])
    return pa.table(cols)


def split_failures(table: pa.Table) -> tuple[pa.Table, list[Failure]]:
    """``OcmlPack(pass_errors=True)`` output -> (packed rows only, the failures)."""
    if "error_code" not in table.column_names:
        return table, []
    bad = table.column("error_code").is_valid()
    failed = table.filter(bad)
    rows = table.filter(pc.invert(bad)).select(list(PACKED_COLUMNS))
    return rows, list(zip(failed.column("doc_id").to_pylist(), failed.column("error_code").to_pylist(),
                          failed.column("error").to_pylist()))


def pad_encoder(encoder: Any) -> Any:
    """``encoder`` for the pad-id rule: an ``Encoder``, or a format name to build one from."""
    if isinstance(encoder, str):
        from ..facade import Encoder

        return Encoder(encoder)
    return encoder


class OcmlPack:
    """Pack each batch of rendered rows on its own (Ray: per block; ``datasets``: per batch).

    ``seq_len``, ``pad_id`` / ``encoder`` (an ``Encoder`` or format name: the pad id from its
    tokenizer / format), ``overlong``: as in ``ocml.encoder.pack``.  ``id_column``: an integer column numbering the
    documents.  ``pass_errors``: also emit one row per record missing from the packed rows
    (failed render, or dropped as overlong: see ``failure_table``), so one pass can write the
    shards and an error report (``split_failures`` separates them).
    """

    def __init__(self, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
                 overlong: Overlong | str = "split", id_column: str | None = None,
                 pass_errors: bool = False) -> None:
        # A Packer checks the options (typed errors) and resolves the pad id, here, once.
        probe = Packer(seq_len, pad_id=pad_id, encoder=pad_encoder(encoder), overlong=overlong, window=None)
        self.seq_len, self.pad_id, self.overlong = probe.seq_len, probe.pad_id, probe.overlong
        self.id_column = id_column
        self.pass_errors = bool(pass_errors)

    def __repr__(self) -> str:
        return f"<OcmlPack seq_len={self.seq_len} overlong={self.overlong.value}>"

    def __call__(self, batch: BatchLike, indices: Sequence[int] | None = None) -> pa.Table:
        r = _Rendered(batch, _row_ids(batch, self.id_column, 0, indices), self.overlong is Overlong.TRUNCATE)
        p = pack(r.docs, self.seq_len, pad_id=self.pad_id, overlong=self.overlong, window=None)
        table = packed_table(p)
        if not self.pass_errors:
            return table
        n = table.num_rows
        table = table.append_column("doc_id", pa.nulls(n, pa.int64()))
        for name, typ in ERROR_COLUMNS.items():
            table = table.append_column(name, pa.nulls(n, typ))
        return pa.concat_tables([table, failure_table(r.failures + overlong_failures(p.report))])


class TablePacker:
    """One ordered pass: feed rendered tables in input order, get packed tables out.

    ``window``: documents per best-fit-decreasing window (None = global: rows come out of
    ``finish()`` only).  ``report``: the ``Packer``'s counts (failed rows in ``skipped``);
    ``failures``: every record missing from the rows (failed render or dropped as overlong).
    """

    def __init__(self, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
                 overlong: Overlong | str = "split", window: int | None = DEFAULT_WINDOW,
                 id_column: str | None = None) -> None:
        self.packer = Packer(seq_len, pad_id=pad_id, encoder=pad_encoder(encoder), overlong=overlong, window=window)
        self.id_column = id_column
        self.rows_seen = 0
        self._failed: list[Failure] = []

    @property
    def report(self) -> PackReport:
        return self.packer.report

    @property
    def failures(self) -> list[Failure]:
        return self._failed + overlong_failures(self.packer.report)

    def add(self, batch: BatchLike) -> Iterator[pa.Table]:
        ids = _row_ids(batch, self.id_column, self.rows_seen, None)
        self.rows_seen += len(ids)
        r = _Rendered(batch, ids, self.packer.overlong is Overlong.TRUNCATE)
        d = r.docs
        self.packer.add_ragged(d["ids"], d["mask"], d["offsets"], d["index"], d["message_index"])
        if r.failures:
            self.packer.skip([f[0] for f in r.failures])
            self._failed += r.failures
        for p in self.packer.ready():
            yield packed_table(p)

    def finish(self) -> Iterator[pa.Table]:
        p = self.packer.finish()
        if p.rows:
            yield packed_table(p)


def pack_stream(tables: Iterable[BatchLike], seq_len: int, **options: Any) -> Iterator[pa.Table]:
    """Pack a stream of rendered tables in one ordered pass (``TablePacker`` options)."""
    tp = TablePacker(seq_len, **options)
    for t in tables:
        yield from tp.add(t)
    yield from tp.finish()
