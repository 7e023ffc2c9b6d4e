"""HF ``datasets``: render with ``Dataset.map(batched=True, num_proc=N)``, then pack.

    from ocml.encoder.integrations.hf_datasets import render_dataset, pack_dataset
    tok = render_dataset(ds, "harmony", num_proc=8)           # input_ids, labels, error_code, error
    ok = tok.filter(lambda e: e is None, input_columns="error_code")
    packed = pack_dataset(ok, seq_len=4096, encoder="harmony")  # TRL's padding-free columns

Both are thin wrappers around ``ds.map`` with the picklable callables ``OcmlRender`` /
``OcmlPack`` (use those directly for your own ``map`` options: ``ds.map(OcmlRender(...),
batched=True)`` works on a ``Dataset`` and on a streaming ``IterableDataset``, in the
default format or Arrow).  ``render_dataset`` maps Arrow batches (no per-row conversion of
the columns it keeps) and gives the dataset back in its own format.
The render function's cache fingerprint is its recipe (format, tokenizer name + vocabulary
hash, options, ocml version), so a rerun with the same options reuses ``datasets``' cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ocml.vocab import DEFAULT_FORMAT
from ocml.vocab.errors import require

from ..errors import InputError
from ..pack import Overlong
from .columns import PACKED_COLUMNS
from .pack_stage import OcmlPack, TablePacker, pad_encoder
from .render_stage import OcmlRender

#: Rows per ``map`` batch: one ``render_batch`` call each (the encoder's chunking inside).
DEFAULT_BATCH_SIZE = 1000


def render_dataset(ds: Any, encoder: Any = DEFAULT_FORMAT, *, num_proc: int | None = None,
                   batch_size: int = DEFAULT_BATCH_SIZE, remove_columns: bool | Sequence[str] = True,
                   **render_options: Any) -> Any:
    """``ds.map(OcmlRender(encoder, **render_options), batched=True, with_indices=True, ...)``.

    ``ds``: a ``datasets.Dataset`` or a streaming ``datasets.IterableDataset`` (rendered
    lazily as it is iterated; ``num_proc`` does not apply to it).
    ``remove_columns``: True = drop every input column (the output then has the token and
    error columns only), False = keep them all, or a list of the ones to drop.  Errors name
    dataset rows.
    """
    datasets = require("datasets", "hf")
    streaming = isinstance(ds, datasets.IterableDataset)
    if streaming and num_proc not in (None, 1):
        raise InputError(f"num_proc={num_proc} with a streaming IterableDataset", field="num_proc",
                         hint="a stream is mapped lazily in one process; drop num_proc, or load the dataset "
                              "without streaming=True")
    if "keep" in render_options:
        raise InputError("keep= goes with OcmlRender; render_dataset takes remove_columns=", field="keep",
                         hint="remove_columns=False keeps every input column, a list drops those named")
    names = ds.column_names
    keep: bool | list[str]
    if remove_columns is True:
        keep = []
    elif remove_columns is False:
        keep = True
    else:
        drop = [remove_columns] if isinstance(remove_columns, str) else list(remove_columns)
        unknown = sorted(set(drop) - set(names)) if names is not None else []
        if unknown:
            raise InputError(f"remove_columns names columns the dataset lacks: {unknown}", field="remove_columns",
                             hint=f"columns: {names}")
        if names is None:  # a stream of unknown columns: drop them first, keep the rest
            ds, keep = ds.remove_columns(drop), True
        else:
            keep = [c for c in names if c not in drop]
    fn = OcmlRender(encoder, keep=keep, **render_options)
    # Arrow batches in, a table out: the kept columns are copied as Arrow, never row by row.
    arrow = ds.with_format("arrow")
    kwargs: dict[str, Any] = {} if streaming else {"num_proc": num_proc, "desc": "ocml render"}
    out = arrow.map(fn, batched=True, batch_size=batch_size, with_indices=True, **kwargs)
    return out.with_format(_format_type(ds))


def _format_type(ds: Any) -> str | None:
    """The format ``ds`` is in (None = Python objects), to hand the result back in it."""
    if hasattr(ds, "format"):  # Dataset
        return ds.format.get("type")
    fmt = getattr(ds, "_formatting", None)  # IterableDataset keeps it private
    return getattr(fmt, "format_type", None)


def pack_dataset(ds: Any, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
                 overlong: Overlong | str = "split", scope: str = "global", window: int | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, num_proc: int | None = None, cache_file: str | None = None) -> Any:
    """Pack a rendered dataset (``render_dataset`` output; rows with errors are skipped).

    ``scope="global"``: one ordered best-fit-decreasing pass (``window`` documents per
    window, None = all; the rows ``ocml pack`` writes for the same documents), returned in
    memory or, with ``cache_file``, written there as Arrow and memory-mapped.
    ``scope="batch"``: ``ds.map(OcmlPack(...), batched=True, batch_size=...)``, packed per
    ``batch_size`` rows like TRL's ``pack_dataset`` (parallel with ``num_proc``).
    ``encoder``: an ``Encoder`` or format name, for the pad id when ``pad_id`` is not given.
    """
    datasets = require("datasets", "hf")
    enc = pad_encoder(encoder)
    if scope == "batch":
        fn = OcmlPack(seq_len, pad_id=pad_id, encoder=enc, overlong=overlong)
        return ds.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc, with_indices=True,
                      remove_columns=list(ds.column_names), desc="ocml pack")
    if scope != "global":
        raise InputError(f"scope={scope!r}", field="scope", hint="'global' or 'batch'")
    tp = TablePacker(seq_len, pad_id=pad_id, encoder=enc, overlong=overlong, window=window)
    tables = _arrow_batches(ds, batch_size)
    if cache_file is None:
        parts = [t for b in tables for t in tp.add(b)] + list(tp.finish())
        return datasets.Dataset(pa.concat_tables(parts) if parts else _empty())
    with pa.OSFile(cache_file, "wb") as sink, pa.ipc.new_stream(sink, _empty().schema) as w:
        for b in tables:
            for t in tp.add(b):
                w.write_table(t)
        for t in tp.finish():
            w.write_table(t)
    return datasets.Dataset.from_file(cache_file)


def _arrow_batches(ds: Any, batch_size: int) -> Any:
    arrow = ds.with_format("arrow")
    for start in range(0, len(arrow), batch_size):
        yield arrow[start:start + batch_size]


def _empty() -> pa.Table:
    return pa.table({k: pa.array([], t) for k, t in PACKED_COLUMNS.items()})


__all__ = ["DEFAULT_BATCH_SIZE", "OcmlPack", "OcmlRender", "pack_dataset", "render_dataset"]
