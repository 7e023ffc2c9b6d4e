"""Batches as the engines hand them over, and ragged numpy arrays back to Arrow.

``datasets.map(batched=True)`` passes a column dict (``LazyBatch``: lists per column) or,
on an Arrow-formatted dataset, a ``pyarrow.Table``; Ray Data's ``batch_format="pyarrow"``
passes a ``pyarrow.Table``.  Both go in as one of those and come out as a ``pyarrow.Table``
whose list columns are built in one shot from flat values + offsets
(``pa.ListArray.from_arrays``), never row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, InputTypeError
from ..pipeline.records import drop_nulls

#: What a batched map hands us.
BatchLike = Union[pa.Table, pa.RecordBatch, Mapping[str, Sequence[Any]]]

_INT32_MAX = 2**31 - 1


def num_rows(batch: BatchLike) -> int:
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        rows: int = batch.num_rows  # pyarrow has no type information
        return rows
    _check_mapping(batch)
    for values in batch.values():
        return len(values)
    return 0


def column_names(batch: BatchLike) -> list[str]:
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        return list(batch.schema.names)
    _check_mapping(batch)
    return list(batch.keys())


def records(batch: BatchLike, names: Sequence[str] | None = None,
            prune: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The rows of ``batch`` as dicts (only the columns in ``names`` when given).

    This is the one per-row conversion of the render path: the renderer reads Python
    message dicts.  Columns in ``prune`` lose their null-valued keys, at any depth: Arrow
    cannot tell an absent key from a null one, and a struct column gives every row every
    key that any row has (tool schemas would otherwise grow ``"amount": null`` properties
    borrowed from other rows' tools).
    """
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        if names is not None:
            batch = batch.select([n for n in names if n in batch.schema.names])
        rows: list[dict[str, Any]] = batch.to_pylist()
    else:
        _check_mapping(batch)
        keys = [k for k in batch.keys() if names is None or k in names]
        cols = [_pylist(batch[k]) for k in keys]
        n = num_rows(batch)
        if any(len(c) != n for c in cols):
            raise InputError("batch columns have different lengths", field="batch",
                             hint="pass a table or a dict of equally long columns")
        rows = [dict(zip(keys, vals)) for vals in zip(*cols)] if keys else [{} for _ in range(n)]
    for name in prune:
        for row in rows:
            if row.get(name) is not None:
                row[name] = drop_nulls(row[name])
    return rows


def column(batch: BatchLike, name: str, type: pa.DataType | None = None) -> pa.Array:
    """Column ``name`` as one Arrow array (cast to ``type`` when given)."""
    if name not in column_names(batch):
        raise InputError(f"batch has no {name!r} column", field=name,
                         hint=f"columns present: {column_names(batch)}")
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        col = batch.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    else:
        values = batch[name]
        if isinstance(values, pa.ChunkedArray):
            arr = values.combine_chunks()
        elif isinstance(values, pa.Array):
            arr = values
        else:
            arr = pa.array(_pylist(values), type=type)
    if type is not None and arr.type != type:
        try:
            arr = arr.cast(type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InputTypeError(f"column {name!r} of type {arr.type} cannot be read as {type}: {exc}",
                                 field=name) from None
    return arr


def list_array(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None) -> pa.ListArray:
    """A ``list<values.dtype>`` column from flat ``values`` and ``offsets`` [n+1]; rows where
    ``valid`` is False are null."""
    if offsets[-1] > _INT32_MAX:
        raise InputError(f"a batch of {int(offsets[-1])} tokens does not fit one Arrow list column "
                         "(2**31 - 1 values at most)", field="batch_size", hint="use smaller batches")
    off = pa.array(offsets.astype(np.int32, copy=False))
    mask = None if valid is None or valid.all() else pa.array(~valid)
    return pa.ListArray.from_arrays(off, pa.array(values), mask=mask)


def ragged(arr: pa.Array, dtype: type | np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list column -> flat ``values`` (``dtype``), ``offsets`` [n+1] int64 and ``valid`` [n] bool.

    Null rows count as empty (whatever their slots hold); sliced arrays are handled.
    """
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise InputTypeError(f"expected a list column, got {arr.type}", field=str(arr.type),
                             hint="pass the output of the render stage (list<int> columns)")
    lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.zeros(len(arr) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = pc.list_flatten(arr)  # skips null rows
    if flat.null_count:
        raise InputError("list column holds null values", field=str(arr.type), hint="ids must be integers")
    values = flat.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    valid = np.ones(len(arr), dtype=bool) if arr.null_count == 0 else \
        arr.is_valid().to_numpy(zero_copy_only=False)
    return values, offsets, valid


def _pylist(values: Any) -> list[Any]:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        listed: list[Any] = values.to_pylist()
        return listed
    if isinstance(values, np.ndarray):
        listed = values.tolist()
        return listed
    return values if isinstance(values, list) else list(values)


def _check_mapping(batch: Any) -> None:
    if not isinstance(batch, Mapping):
        raise InputTypeError(f"a batch must be a pyarrow Table/RecordBatch or a dict of columns, "
                             f"got {type(batch).__name__}", field="batch",
                             hint="use map(..., batched=True) / map_batches(..., batch_format='pyarrow')")
