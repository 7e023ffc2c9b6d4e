"""A recipe's rules on rendered rows in ``datasets`` and Ray Data: split, dedup, weights, shuffle.

The rules are ``ocml pack``'s (one home each: ``pipeline.validation_split``, ``pipeline.dedup``,
``pipeline.mix``, ``pipeline.shuffle``), applied to the render stage's output (an
``input_ids`` list column; rows whose ``input_ids`` is null are failed records and are
left out).  With the same seed, the same conversation falls on the same side as in
``ocml pack``, and a source draws the same sample when it holds the same conversations in
the same order.

``datasets`` (a global view: every rule)::

    from ocml.encoder.integrations import recipe
    from ocml.encoder.pipeline import read_recipe_file, resolve_recipe
    tok = render_dataset(ds, "harmony")                         # + a "source" column naming each row's source
    parts = recipe.split_rendered(tok, validation=0.01, seed=7)  # DatasetDict(train, validation)
    train, seen = recipe.dedup_rendered(parts["train"])
    train = recipe.mix_rendered(train, {"chat": 2, "tools": 0.5}, seed=7, max_samples={"tools": 1000})
    parts = recipe.apply_recipe(tok, resolve_recipe(read_recipe_file("recipe.yaml")))  # all of it at once

Ray Data (streaming: rules that need no global view): ``ray_split`` (fraction form),
``ray_weight`` (integer part exact; fractional part by a seeded per-content draw, so its
count is right in expectation, not exactly) and ``ray_shuffle`` (``random_shuffle(seed=)``).
The count-form split and dedup need every key in one place: ``ocml pack`` or ``datasets``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ocml.vocab.errors import require

from ..errors import InputError
from ..pipeline.content import content_keys
from ..pipeline.dedup import first_occurrences
from ..pipeline.mix import weighted_take
from ..pipeline.recipe import Validation
from ..pipeline.seeding import unit
from ..pipeline.shuffle import permutation
from ..pipeline.validation_split import validation_mask
from . import batches

BATCH = 4096


def keys_of(table: Any) -> tuple[np.ndarray, np.ndarray]:
    """Content keys ``[rows, 2]`` of a rendered batch and which rows are documents (non-null ids)."""
    ids, offsets, valid = batches.ragged(batches.column(table, "input_ids"), np.int32)
    return content_keys(ids, offsets), valid


def _keys(ds: Any) -> tuple[np.ndarray, np.ndarray]:
    arrow = ds.with_format("arrow")
    parts = [keys_of(arrow[a:a + BATCH]) for a in range(0, len(arrow), BATCH)]
    if not parts:
        return np.zeros((0, 2), dtype=np.uint64), np.zeros(0, dtype=bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def split_rendered(ds: Any, validation: float | int, seed: int = 0) -> Any:
    """``DatasetDict(train=..., validation=...)`` by ``ocml pack``'s split rule (failed rows dropped)."""
    datasets = require("datasets", "hf")
    spec = Validation.parse(validation)
    keys, valid = _keys(ds)
    docs = np.flatnonzero(valid)
    val = validation_mask(keys[docs], spec, seed)
    return datasets.DatasetDict({"train": ds.select(docs[~val]), "validation": ds.select(docs[val])})


def dedup_rendered(ds: Any) -> tuple[Any, int]:
    """``ds`` without rows whose ids repeat an earlier row's, and how many there were."""
    keys, valid = _keys(ds)
    docs = np.flatnonzero(valid)
    dup = first_occurrences(keys[docs])
    return ds.select(docs[~dup]), int(dup.sum())


def mix_rendered(ds: Any, weights: Mapping[str, float] | float, *, seed: int = 0, source_column: str = "source",
                 max_samples: Mapping[str, int] | int | None = None, shuffle: bool = True) -> Any:
    """Rows taken by each source's ``weight`` and ``max_samples`` (repeats = copies), in a
    seeded order (``shuffle``) or by source in input order.  ``weights``: one number for a
    dataset that is one source (named ``"default"``), or ``{source name: weight}``, names
    being the values of ``source_column``."""
    keys, valid = _keys(ds)
    if isinstance(weights, (int, float)):
        names = np.array(["default"] * len(ds), dtype=object)
        weights = {"default": float(weights)}
    else:
        if source_column not in (ds.column_names or []):
            raise InputError(f"no column {source_column!r} to weight by", field=source_column,
                             hint="add the source name per row, or pass one weight")
        names = np.asarray(ds[source_column], dtype=object)
    missing = sorted(set(names[valid].tolist()) - set(weights))
    if missing:
        raise InputError(f"no weight for source(s) {missing[:3]}", field="weights",
                         hint="give every source a weight (0 = none)")
    take = []
    for name, w in weights.items():
        rows = np.flatnonzero(valid & (names == name))
        cap = max_samples.get(name) if isinstance(max_samples, Mapping) else max_samples
        take.append(rows[weighted_take(rows.shape[0], float(w), cap, seed, name)])
    idx = np.concatenate(take) if take else np.zeros(0, dtype=np.int64)
    if shuffle:
        idx = idx[permutation(idx.shape[0], seed, "train-documents")]
    return ds.select(idx)


def apply_recipe(rendered: Any, recipe: Any, *, source_column: str = "source") -> Any:
    """A whole recipe (``pipeline.recipe.Recipe``: its seed, validation, dedup, each source's
    weight and max_samples, shuffle) on rendered rows whose ``source_column`` holds the
    source names: ``DatasetDict(train=..., validation=...)``, the same documents as
    ``ocml pack --recipe`` takes (packing stays with ``pack_dataset``)."""
    datasets = require("datasets", "hf")
    if recipe.validation is not None:
        parts = split_rendered(rendered, recipe.validation.to_value(), seed=recipe.seed)
        train, val = parts["train"], parts["validation"]
    else:
        keys, valid = _keys(rendered)
        train, val = rendered.select(np.flatnonzero(valid)), rendered.select([])
    if recipe.dedup == "exact":
        train, _ = dedup_rendered(train)
        val, _ = dedup_rendered(val)
    weights = {s.name: s.weight for s in recipe.sources}
    caps = {s.name: s.max_samples for s in recipe.sources if s.max_samples is not None}
    train = mix_rendered(train, weights, seed=recipe.seed, source_column=source_column, max_samples=caps,
                         shuffle=recipe.shuffle)
    if recipe.shuffle:
        val = val.select(permutation(len(val), recipe.seed, "validation-documents"))
    return datasets.DatasetDict({"train": train, "validation": val})


# -- Ray Data ---------------------------------------------------------------------------------------

class _SplitFn:
    def __init__(self, fraction: float, seed: int, side: str) -> None:
        self.fraction, self.seed, self.side = fraction, seed, side

    def __call__(self, table: pa.Table) -> pa.Table:
        keys, valid = keys_of(table)
        val = validation_mask(keys, Validation(fraction=self.fraction), self.seed)
        keep = valid & (val if self.side == "validation" else ~val)
        return table.filter(pa.array(keep))


def ray_split(rendered: Any, validation: float, seed: int = 0) -> tuple[Any, Any]:
    """(train, validation) Ray datasets by the fraction form of ``ocml pack``'s split rule."""
    spec = Validation.parse(validation)
    if spec is None or spec.fraction is None:
        raise InputError("Ray Data splits by a fraction only", field="validation",
                         hint="a count needs every row's key in one place: use ocml pack or datasets")
    return tuple(rendered.map_batches(_SplitFn(spec.fraction, seed, side), batch_format="pyarrow")
                 for side in ("train", "validation"))


class _WeightFn:
    def __init__(self, weight: float, seed: int, name: str) -> None:
        self.weight, self.seed, self.name = weight, seed, name

    def __call__(self, table: pa.Table) -> pa.Table:
        keys, valid = keys_of(table)
        whole = math.floor(self.weight)
        extra = unit(keys[:, 0] ^ keys[:, 1], self.seed, "weights/" + self.name) < self.weight - whole
        copies = np.where(valid, whole + extra.astype(np.int64), 0)
        return table.take(pa.array(np.repeat(np.arange(table.num_rows), copies)))


def ray_weight(rendered: Any, weight: float, seed: int = 0, name: str = "default") -> Any:
    """Each row ``floor(weight)`` times, plus once more where its seeded draw is below the
    fractional part (by content: the expected count is ``ocml pack``'s, not the exact one)."""
    if not (math.isfinite(weight) and weight >= 0):
        raise InputError(f"weight must be >= 0, got {weight}", field="weight")
    return rendered.map_batches(_WeightFn(float(weight), seed, name), batch_format="pyarrow")


def ray_shuffle(ds: Any, seed: int = 0) -> Any:
    """A seeded global shuffle of rows (Ray's own ``random_shuffle``)."""
    return ds.random_shuffle(seed=seed)


__all__ = ["apply_recipe", "dedup_rendered", "keys_of", "mix_rendered", "ray_shuffle", "ray_split", "ray_weight", "split_rendered"]
