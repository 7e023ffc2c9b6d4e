"""Preference / KTO rows in ``ocml pack``: a chunk of records -> a block of rows -> Parquet.

One row per pair, unpacked, with the columns of ``ShapeOptions.pair_columns``:

- ``dpo`` (TRL >= 1.0 ``DataCollatorForPreference`` / ``DataCollatorForUnpairedPreference``):
  ``prompt_ids``, ``chosen_ids``, ``rejected_ids`` (KTO: ``prompt_ids``, ``completion_ids``,
  ``label``) as ``list<int64>`` (what TRL's own ``tokenize_fn`` + ``datasets.map`` store),
  plus ocml's ``chosen_mask`` / ``rejected_mask`` (KTO: ``completion_mask``) ``list<int8>``.
- ``orpo`` (``DPODataCollatorWithPadding``, TRL's ORPO / CPO ``tokenize_row``):
  ``prompt_input_ids``, ``prompt_attention_mask``, ``chosen_input_ids`` (prompt + chosen),
  ``chosen_attention_mask``, ``chosen_labels`` (-100 on the prompt and untrained tokens),
  and the same for ``rejected``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, OcmlError
from ..masks import IGNORE
from .pairs import PairResult, render_pairs

DPO_COLUMNS = ("prompt_ids", "chosen_ids", "rejected_ids", "chosen_mask", "rejected_mask")
KTO_COLUMNS = ("prompt_ids", "completion_ids", "label", "completion_mask")
ORPO_COLUMNS = ("prompt_input_ids", "prompt_attention_mask", "chosen_input_ids", "chosen_attention_mask",
                "chosen_labels", "rejected_input_ids", "rejected_attention_mask", "rejected_labels")


def columns(shape: str, layout: str) -> list[str]:
    """The columns ``ocml pack --shape SHAPE`` writes (for the manifest)."""
    if shape == "kto":
        return list(KTO_COLUMNS)
    return list(ORPO_COLUMNS if layout == "orpo" else DPO_COLUMNS)


def check_options(shape: str, layout: str, pack: bool, outputs: tuple[str, ...], completion_only_loss: bool) -> None:
    """Usage errors of a preference / KTO run (every option applies or is refused)."""
    if pack:
        raise InputError(f"--shape {shape} writes one unpacked row per {'pair' if shape == 'preference' else 'example'}",
                         code="E-USAGE", field="--no-pack",
                         hint=f"pass --no-pack (and no --seq-len): ocml pack --shape {shape} --no-pack ...")
    if tuple(outputs) != ("parquet",):
        raise InputError(f"--shape {shape} rows are written as Parquet only", code="E-USAGE", field="--output",
                         hint="use --output parquet (the default)")
    if shape == "kto" and layout == "orpo":
        raise InputError("--pair-columns orpo has no KTO layout", code="E-USAGE", field="--pair-columns",
                         hint="KTO rows use TRL's prompt_ids / completion_ids / label (--pair-columns dpo)")
    if not completion_only_loss:
        raise InputError(f"--no-completion-only-loss does not apply to --shape {shape}", code="E-USAGE",
                         field="--no-completion-only-loss", hint="the preference trainer decides what it trains")


def _ragged(arrays: list[np.ndarray], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    off = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    flat = np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)
    return flat, off


@dataclass
class PairBlock:
    """Rows ready for the shard writer (``ocml.encoder.pipeline.shards``): its ``table()`` is the
    Parquet table; never packed, never .npy."""

    results: list[PairResult]
    layout: str = "dpo"

    packed = False

    @property
    def rows(self) -> int:
        return len(self.results)

    def slice(self, a: int, b: int) -> PairBlock:
        return PairBlock(self.results[a:b], self.layout)

    def table(self) -> Any:
        import pyarrow as pa

        def lists(arrays: list[np.ndarray], typ: Any, dtype: Any) -> Any:
            flat, off = _ragged(arrays, dtype)
            return pa.ListArray.from_arrays(pa.array(off.astype(np.int32)), pa.array(flat, type=typ))

        res = self.results
        i64, i8 = (pa.int64(), np.int64), (pa.int8(), np.int8)
        prompt = [r.prompt_ids for r in res]
        if res and res[0].label is not None:  # KTO rows (a block is never empty when written)
            return pa.table({"prompt_ids": lists(prompt, *i64), "completion_ids": lists([r.chosen_ids for r in res], *i64),
                             "label": pa.array([bool(r.label) for r in res], type=pa.bool_()),
                             "completion_mask": lists([r.chosen_mask for r in res], *i8)})
        chosen = [r.chosen_ids for r in res]
        cmask = [r.chosen_mask for r in res]
        rejected_sides = [r.rejected for r in res]
        rejected = [ids for ids, _ in rejected_sides]
        rmask = [mask for _, mask in rejected_sides]
        if self.layout == "dpo":
            return pa.table({"prompt_ids": lists(prompt, *i64), "chosen_ids": lists(chosen, *i64),
                             "rejected_ids": lists(rejected, *i64), "chosen_mask": lists(cmask, *i8),
                             "rejected_mask": lists(rmask, *i8)})
        cols: dict[str, Any] = {"prompt_input_ids": lists(prompt, *i64),
                                "prompt_attention_mask": lists([np.ones(p.shape[0], np.int64) for p in prompt], *i64)}
        for name, ids, mask in (("chosen", chosen, cmask), ("rejected", rejected, rmask)):
            full = [np.concatenate([p, c]) for p, c in zip(prompt, ids)]
            labels = [np.concatenate([np.full(p.shape[0], IGNORE), np.where(m, c, IGNORE)])
                      for p, c, m in zip(prompt, ids, mask)]
            cols[f"{name}_input_ids"] = lists(full, *i64)
            cols[f"{name}_attention_mask"] = lists([np.ones(f.shape[0], np.int64) for f in full], *i64)
            cols[f"{name}_labels"] = lists(labels, *i64)
        return pa.table(cols)


def render_row_chunk(enc: Any, records: list[tuple[int, Any]]) -> tuple[list[int], PairBlock, list[tuple[int, OcmlError]],
                                                                      np.ndarray, np.ndarray, np.ndarray]:
    """Decoded records (location, record) -> (locations, block, errors, ids, mask, offsets);
    ids / mask / offsets: each row's tokens (prompt, then each completion) back to back, for
    the run's counters and length histogram."""
    results = render_pairs(enc, [rec for _, rec in records], errors="collect")
    ok: list[PairResult] = []
    locs: list[int] = []
    errors: list[tuple[int, OcmlError]] = []
    for (loc, _), res in zip(records, results):
        if isinstance(res, OcmlError):
            errors.append((loc, res))
        else:
            ok.append(res)
            locs.append(loc)
    parts, masks = [], []
    for r in ok:
        sides = [(r.chosen_ids, r.chosen_mask)] + ([(r.rejected_ids, r.rejected_mask)] if r.rejected_ids is not None else [])
        parts.append(np.concatenate([r.prompt_ids] + [s[0] for s in sides]))
        masks.append(np.concatenate([np.zeros(r.prompt_ids.shape[0], bool)] + [s[1] for s in sides]))
    ids, offsets = _ragged(parts, np.int32)
    mask, _ = _ragged(masks, bool)
    return locs, PairBlock(ok, enc.shape_options.pair_columns), errors, ids, mask, offsets
