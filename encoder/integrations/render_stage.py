"""``OcmlRender``: a batch of records -> ``input_ids`` / ``labels`` columns (Arrow in, Arrow out).

One callable for both engines: ``datasets.Dataset.map(OcmlRender(...), batched=True,
num_proc=N)`` and Ray Data ``map_batches(OcmlRender, fn_constructor_kwargs={...},
batch_format="pyarrow")``.  The encoder is built once per process / actor: the callable
pickles as its recipe (``Encoder`` pickles as format name + tokenizer recipe + options),
which is also what ``datasets`` hashes for its cache fingerprint (plus the ocml version).

Per row only the rendering itself runs Python (``conversation_from_record`` and the
encoder's layout); ids, labels and masks go from the ragged render output to Arrow list
columns in one shot.  A bad record never stops the map (``errors="collect"``, default):
its row gets null token columns and ``error_code`` / ``error`` strings; ``errors="raise"``
stops at the first with the row named.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

from ocml.vocab import DEFAULT_FORMAT
from ocml.vocab.errors import as_strings

from ..encoder import Encoder
from ..errors import InputError, OcmlError, UnknownNameError
from ..pipeline.readers import Chunk, Kind, Position, columns_for
from ..pipeline.options import ocml_version
from ..pipeline.workers import Rendered, RenderSpec, render_chunk
from .batches import BatchLike, column, column_names, list_array, num_rows, records
from .columns import ERROR_COLUMNS, RENDER_COLUMNS, error_columns

_BATCH_SOURCE = SimpleNamespace(display="the batch")  # ``columns_for`` names its source in errors


class OcmlRender:
    """Render a batch of dataset records into token columns.

    ``encoder``: an ``Encoder``, or a format name built with ``tokenizer`` and
    ``encoder_options`` (``mask``, ``cot``, ``validate_bodies``...: ``Encoder``'s keywords).
    Renders in ``train`` mode, like ``ocml pack``.  ``messages_field`` / ``tools_field``: the
    record's columns (see ``ocml.encoder.pipeline.records``; null keys in a struct-typed tools
    column are dropped, see ``records``); ``json_field``: a column holding each whole record as JSON
    text instead (``ray.data.read_text`` lines: no Arrow schema is inferred, so records of
    mixed shapes stay exactly as written).  ``outputs``: any of ``input_ids``, ``labels``
    (ids where trained, -100 elsewhere), ``assistant_masks`` (0/1), ``message_index``,
    ``length``.  ``keep``: input columns copied to the output (a list, or True = every input
    column; an input column named like an output column is a typed error).  ``errors``: ``collect``
    (rows with ``error_code`` / ``error``) or ``raise`` (at the first bad row, naming it).

    ``__call__(batch, indices=None)``: ``indices`` are the dataset row numbers when the map
    passes them (``datasets.map(..., with_indices=True)``); errors then name those rows.
    A table in (Ray, an Arrow-formatted map) or a ``Dataset.map`` batch gives a typed table
    out, which replaces the batch (``keep`` says which input columns stay); a plain dict of
    columns in (a streaming ``IterableDataset.map`` in its default format) gives a dict of
    lists out, which ``datasets`` merges into the batch (input columns stay unless the map
    removes them).  (A ``Dataset.map`` cannot take lists back: a first batch without errors
    would give the error columns Arrow's null type, which ``datasets`` refuses to write.)
    """

    def __init__(self, encoder: Encoder | str = DEFAULT_FORMAT, tokenizer: Any = None, *,
                 messages_field: str = "messages", tools_field: str = "tools", json_field: str | None = None,
                 outputs: Sequence[str] = ("input_ids", "labels"), keep: Sequence[str] | bool = (),
                 errors: str = "collect", **encoder_options: Any) -> None:
        if isinstance(encoder, Encoder):
            if tokenizer is not None or encoder_options:
                raise InputError("tokenizer / encoder options go with a format name, not an Encoder",
                                 field="tokenizer", hint="build the Encoder with them, or pass its format name")
            self.encoder = encoder
        else:
            self.encoder = Encoder(encoder, tokenizer, **encoder_options)
        self.messages_field = _name(messages_field, "messages_field")
        self.tools_field = _name(tools_field, "tools_field")
        self.json_field = None if json_field is None else _name(json_field, "json_field")
        self.outputs = tuple(_choice(o, list(RENDER_COLUMNS), "outputs") for o in as_strings(outputs, "outputs"))
        if not self.outputs:
            raise InputError("outputs is empty", field="outputs", hint=f"any of {list(RENDER_COLUMNS)}")
        self.keep_all = keep is True
        self.keep = () if isinstance(keep, bool) else as_strings(keep, "keep")
        clash = set(self.keep) & self._output_names()
        if clash:
            raise InputError(f"keep names output columns {sorted(clash)}", field="keep")
        self.errors = _choice(errors, ["collect", "raise"], "errors")
        # Every row keeps its tokens (a map returns one row per record): untrained ones too.
        self._spec = RenderSpec(self.messages_field, self.tools_field, message_index="message_index" in self.outputs,
                                keep_untrained=True)
        self.version = ocml_version()  # in the pickled state, so datasets' cache key changes with ocml

    def _output_names(self) -> set[str]:
        return set(RENDER_COLUMNS) | set(ERROR_COLUMNS)

    def __repr__(self) -> str:
        return f"<OcmlRender {self.encoder!r} outputs={list(self.outputs)}>"

    def __call__(self, batch: BatchLike, indices: Sequence[int] | None = None) -> Any:
        n = num_rows(batch)
        if indices is not None and len(indices) != n:
            raise InputError(f"{len(indices)} indices for {n} rows", field="indices")
        chunk, failed = self._chunk(batch, n)
        # The pipeline's own chunk renderer (``ocml pack`` workers): one home for record ->
        # conversation -> ids, bad-record codes included, so both paths give the same rows.
        out = render_chunk(self.encoder, chunk, self._spec)
        for e in out.errors:
            failed[e.location] = InputError(e.message, code=e.code, index=e.message_index, field=e.field, hint=e.hint)
        valid = np.zeros(n, dtype=bool)
        valid[out.locations] = True
        for row in np.flatnonzero(~valid).tolist():  # blank JSON-line rows: no record, no error yet
            failed.setdefault(row, InputError(f"{self.json_field!r} is blank", field=self.json_field,
                                              hint="one JSON record per row"))
        if failed and self.errors == "raise":
            row = min(failed)
            exc = failed[row]
            where = f"row {int(indices[row])}" if indices is not None else f"row {row} of the batch"
            raise type(exc)(f"{where}: {exc.message}", code=exc.code, index=exc.index, field=exc.field,
                            position=exc.position, hint=exc.hint)
        table = self._table(batch, n, out, valid, failed)
        if type(batch) is dict:  # a streaming map's batch: it takes lists back (and merges them)
            return table.to_pydict()
        return table

    # -- steps ---------------------------------------------------------------------
    def _chunk(self, batch: BatchLike, n: int) -> tuple[Chunk, dict[int, OcmlError]]:
        """The batch as a pipeline ``Chunk`` (location = row in the batch) and rows failed already."""
        failed: dict[int, OcmlError] = {}
        if self.json_field is None:
            rows = records(batch, self._record_columns(batch), prune=(self.tools_field,))
            return _batch_chunk(Kind.JSON, rows), failed
        lines: list[Any] = []
        for i, value in enumerate(column(batch, self.json_field).to_pylist()):
            if isinstance(value, str):
                value = value.encode("utf-8")  # the pipeline's JSONL decoder reads raw lines
            elif not isinstance(value, bytes):
                failed[i] = InputError(f"{self.json_field!r} must hold a record as JSON text, got "
                                       f"{type(value).__name__}", field=self.json_field)
                value = b""
            lines.append(value)
        return _batch_chunk(Kind.JSONL, lines), failed

    def _record_columns(self, batch: BatchLike) -> list[str] | None:
        """The columns ``ocml pack`` reads from a table (messages, tools, option columns); all
        columns when the batch has no messages column (every row then fails on its own)."""
        try:
            return columns_for(_BATCH_SOURCE, column_names(batch), self.messages_field, self.tools_field)
        except InputError:
            return None

    def _table(self, batch: BatchLike, n: int, out: Rendered, valid: np.ndarray,
               failed: dict[int, OcmlError]) -> pa.Table:
        lengths = np.zeros(n, dtype=np.int64)
        lengths[out.locations] = np.diff(out.offsets)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        rag = {"ids": out.ids, "mask": out.mask, "offsets": out.offsets, "message_index": out.message_index}
        cols: dict[str, pa.Array] = {}
        for name in self.outputs:
            spec = RENDER_COLUMNS[name]
            if spec.values is None:
                cols[name] = pa.array(lengths.astype(spec.dtype), mask=~valid)
            else:
                cols[name] = list_array(spec.values(rag).astype(spec.dtype, copy=False), offsets, valid)
        if self.errors == "collect":
            cols.update(error_columns(n, failed))
        keep = self.keep
        if self.keep_all:
            keep = tuple(column_names(batch))
            clash = set(keep) & set(cols)
            if clash:
                raise InputError(f"input columns {sorted(clash)} have the names of output columns", field="keep",
                                 hint="rename them, or remove them from the input before rendering")
        kept = {name: column(batch, name) for name in keep}  # input columns first, as datasets orders them
        return pa.table(kept | cols)


def _batch_chunk(kind: Kind, payload: list[Any]) -> Chunk:
    """A batch as one pipeline chunk: locations are rows of the batch (0-based)."""
    return Chunk(seq=0, source=0, kind=kind, first=0, payload=payload, count=len(payload),
                 start=Position(0, 0, 0), end=Position(0, len(payload), 0))


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{field} must be a column name, got {value!r}", field=field)
    return value


def _choice(value: Any, choices: list[str], field: str) -> str:
    value = getattr(value, "value", value)
    if value not in choices:
        raise UnknownNameError(f"{field}={value!r}", field=field, hint="one of: " + ", ".join(choices))
    return str(value)
