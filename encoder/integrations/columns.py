"""The output columns of the render and pack stages, as data: names, types, where they come from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import OcmlError
from ..packing import IGNORE


@dataclass(frozen=True)
class RenderColumn:
    dtype: type  # numpy dtype of the values
    #: flat values from ``Batch.ragged()`` for a list column; None = the scalar row length
    values: Callable[[Mapping[str, np.ndarray]], np.ndarray] | None
    doc: str


RENDER_COLUMNS: dict[str, RenderColumn] = {
    "input_ids": RenderColumn(np.int32, lambda r: r["ids"], "token ids"),
    "labels": RenderColumn(np.int64, lambda r: np.where(r["mask"], r["ids"], IGNORE).astype(np.int64),
                           "ids where trained, -100 elsewhere (HF / TRL labels)"),
    "assistant_masks": RenderColumn(np.int8, lambda r: r["mask"].astype(np.int8),
                                    "1 where trained (apply_chat_template's return_assistant_tokens_mask)"),
    "message_index": RenderColumn(np.int32, lambda r: r["message_index"].astype(np.int32, copy=False),
                                  "input message of each token, -1 = generation prompt"),
    "length": RenderColumn(np.int32, None, "tokens per row (a scalar column, as group_by_length reads)"),
}

#: Packed rows as ``ocml.encoder.pipeline.shards.parquet_table`` writes them (TRL's padding-free
#: columns; no padding stored: a row's ``seq_lengths`` sum to its length).
PACKED_COLUMNS: dict[str, pa.DataType] = {
    "input_ids": pa.list_(pa.int32()),
    "labels": pa.list_(pa.int64()),
    "position_ids": pa.list_(pa.int32()),
    "seq_lengths": pa.list_(pa.int32()),
}
OVERLONG_CODE = "E-PACK-OVERLONG"  # a document left out by overlong="drop"

#: Rows that failed: the code (``E-...``) and the full message (index, field, hint).
ERROR_COLUMNS: dict[str, pa.DataType] = {"error_code": pa.string(), "error": pa.string()}


def error_columns(n: int, failed: Mapping[int, OcmlError]) -> dict[str, pa.Array]:
    """``error_code`` / ``error`` string columns, null on rows that did not fail."""
    codes: list[str | None] = [None] * n
    texts: list[str | None] = [None] * n
    for i, exc in failed.items():
        codes[i], texts[i] = exc.code, str(exc)
    return {"error_code": pa.array(codes, pa.string()), "error": pa.array(texts, pa.string())}
