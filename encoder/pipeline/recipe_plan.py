"""The plan phase of a recipe run (in memory, recomputed on every start): the validation split
(``split``, by content key), duplicates (``dedup``), each source's weighted sample and cap
(``mix``) and the seeded document order (``shuffle``), from the scan's document metadata and
per-source counts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .content import KEY_WORDS
from .dedup import first_occurrences
from .mix import weighted_take
from .recipe import Recipe
from .shuffle import permutation
from .validation_split import validation_mask

__all__ = ["Plan", "SourceCounts", "plan_documents", "summed"]


@dataclass
class SourceCounts:
    """Per source, what the scan saw (the plan adds the rest of the per-source report)."""

    records: int = 0
    rejected: int = 0
    untrained: int = 0       # documents with nothing to train (skipped unless keep_untrained)
    text_split: int = 0      # text records split into seq_len pieces in the worker (the text shape's default)
    documents: int = 0       # records rendered (records = rejected + untrained skipped + documents)
    pieces: int = 0          # documents in the spool: a split text record is several
    tokens: int = 0
    trained_tokens: int = 0
    #: extra columns ignored by the column rule (``encoder.inputs.columns``): column -> records
    ignored_columns: dict[str, int] = field(default_factory=dict)

    def add_documents(self, pieces: int, presplit: list[Any]) -> None:
        """A chunk's spooled documents (``pieces``) and the text records split into several."""
        self.pieces += pieces
        self.documents += pieces - sum(p.pieces - 1 for p in presplit)

    def read(self, records: int, ignored: Mapping[str, int]) -> None:
        """A rendered chunk's records and the extra columns they carried."""
        self.records += records
        for col, n in ignored.items():
            self.ignored_columns[col] = self.ignored_columns.get(col, 0) + n


def summed(counts: list[SourceCounts]) -> dict[str, int]:
    """The sources' counts added up (the numbers; not the ignored columns)."""
    return {f.name: sum(getattr(c, f.name) for c in counts) for f in fields(SourceCounts) if f.type in (int, "int")}


@dataclass
class Plan:
    """The documents of each split, as indices into the spool, in the order they are packed."""

    train: np.ndarray
    validation: np.ndarray
    per_source: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0
    removed: int = 0


def plan_documents(r: Recipe, meta: Mapping[str, Any], counts: list[SourceCounts]) -> Plan:
    """The plan of the scanned documents: ``meta`` holds the spooled metadata columns (``key``,
    ``source``, ``length``, ``trained``: one row per document), ``counts`` the scan's per source."""
    keys = np.asarray(meta["key"]).reshape(-1, KEY_WORDS)
    src = np.asarray(meta["source"])
    length = np.asarray(meta["length"])
    trained = np.asarray(meta["trained"])
    val = validation_mask(keys, r.validation, r.seed)
    dup = first_occurrences(keys)
    removed = dup if r.dedup == "exact" else np.zeros_like(dup)
    train_parts: list[np.ndarray] = []
    per_source: list[dict[str, Any]] = []
    for si, s in enumerate(r.sources):
        mine = src == si
        cand = np.flatnonzero(mine & ~val & ~removed)
        take = cand[weighted_take(cand.shape[0], s.weight, s.max_samples, r.seed, s.name)]
        train_parts.append(take)
        c = counts[si]
        per_source.append({
            "name": s.name, "path": s.path, "weight": s.weight, "max_samples": s.max_samples,
            "records": c.records, "rejected": c.rejected, "untrained": c.untrained, "documents": c.documents,
            "pieces": c.pieces,
            "validation": int(np.count_nonzero(mine & val & ~removed)),
            "duplicates": int(np.count_nonzero(mine & dup)),
            "deduplicated": int(np.count_nonzero(mine & removed)),
            "candidates": int(cand.shape[0]),
            "skipped": int(cand.shape[0] - np.unique(take).shape[0]),
            "taken": int(take.shape[0]),
            "tokens": int(length[take].sum()), "trained_tokens": int(trained[take].sum()),
        })
    total = sum(p["tokens"] for p in per_source)
    for p in per_source:
        p["share"] = round(p["tokens"] / total, 6) if total else 0.0
    train = np.concatenate(train_parts) if train_parts else np.zeros(0, dtype=np.int64)
    validation = np.flatnonzero(val & ~removed)
    if r.shuffle:
        train = train[permutation(train.shape[0], r.seed, "train-documents")]
        validation = validation[permutation(validation.shape[0], r.seed, "validation-documents")]
    return Plan(train, validation, per_source, int(dup.sum()), int(removed.sum()))
