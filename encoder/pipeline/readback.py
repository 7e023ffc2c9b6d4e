"""Read an ``ocml pack`` output folder back, row by row, for ``ocml inspect``.

Layouts (``shards``): Parquet (``data/*.parquet``; packed rows with ``seq_lengths``, or
unpacked rows with ``assistant_masks``), ``.npy`` (``npy/<shard>/``; packed with
``seq_offsets.npy``, or unpacked with ``offsets.npy``) and Megatron (``megatron/<shard>_
text_document`` + ``_loss_mask_document``; one row per document).  Parquet is preferred
when several are present.  A token is *trained* where its label is not -100 (what the
loss sees); Megatron's loss-mask dataset gives it there.

Provenance columns, where the run wrote them: packed rows ``doc_source`` / ``doc_record``
(one entry per document of the row; ``-1`` = padding in ``.npy``), unpacked rows
``source`` / ``record``.  ``manifest.json``'s ``sources`` table maps a source number to
the input path it was given as.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .megatron import IDS_KEY, MASK_KEY, IndexedDataset
from .shards import IGNORE, MEGATRON_DIR, NPY_DIR, PARQUET_DIR


@dataclass
class Doc:
    """One document (or the padding) of a row: tokens ``start:start+length``."""

    index: int                 # in the row (the seq_idx value)
    start: int
    length: int
    source: int | None = None
    record: int | None = None
    padding: bool = False


@dataclass
class Row:
    number: int                # across the whole output (shards in name order)
    shard: str
    in_shard: int
    ids: np.ndarray
    trained: np.ndarray        # bool
    docs: list[Doc] = field(default_factory=list)


def _opt(values: Any, k: int) -> int | None:
    return None if values is None else int(values[k])


class _Shard:
    """One shard of one layout: row count, and row k as a ``Row`` (without its number)."""

    name: str
    rows: int
    provenance: bool

    def row(self, k: int) -> tuple[np.ndarray, np.ndarray, list[Doc]]:
        raise NotImplementedError

    def provenance_table(self) -> Iterator[tuple[int, int, int, int]]:
        """(row in shard, doc index in row, source, record) for every document."""
        raise NotImplementedError


class _ParquetShard(_Shard):
    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self.path, self.name = path, path.stem
        self.file = pq.ParquetFile(path)
        self.rows = self.file.metadata.num_rows
        names = set(self.file.schema_arrow.names)
        self.packed = "seq_lengths" in names
        self.prov = ("doc_source", "doc_record") if self.packed else ("source", "record")
        self.provenance = all(c in names for c in self.prov)
        self.starts = np.cumsum([0] + [self.file.metadata.row_group(g).num_rows
                                       for g in range(self.file.num_row_groups)])

    def _read(self, k: int, columns: list[str]) -> dict[str, Any]:
        g = int(np.searchsorted(self.starts, k, side="right")) - 1
        t = self.file.read_row_group(g, columns=columns)
        return {c: t.column(c)[k - int(self.starts[g])].as_py() for c in columns}

    def row(self, k: int) -> tuple[np.ndarray, np.ndarray, list[Doc]]:
        cols = ["input_ids", "labels"] + (["seq_lengths"] if self.packed else []) + \
            (list(self.prov) if self.provenance else [])
        r = self._read(k, cols)
        ids = np.asarray(r["input_ids"], dtype=np.int64)
        trained = np.asarray(r["labels"], dtype=np.int64) != IGNORE
        if not self.packed:
            src, rec = (r[self.prov[0]], r[self.prov[1]]) if self.provenance else (None, None)
            return ids, trained, [Doc(0, 0, len(ids), src, rec)]
        lengths = r["seq_lengths"]
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(int).tolist() if lengths else []
        src = r.get(self.prov[0]) if self.provenance else None
        rec = r.get(self.prov[1]) if self.provenance else None
        docs = [Doc(j, a, int(n), _opt(src, j), _opt(rec, j)) for j, (a, n) in enumerate(zip(starts, lengths))]
        return ids, trained, docs

    def provenance_table(self) -> Iterator[tuple[int, int, int, int]]:
        t = self.file.read(columns=list(self.prov))
        src, rec = (t.column(c).to_pylist() for c in self.prov)
        for k in range(self.rows):
            if self.packed:
                for j, (s, r) in enumerate(zip(src[k], rec[k])):
                    yield k, j, s, r
            else:
                yield k, 0, src[k], rec[k]


class _NpyShard(_Shard):
    def __init__(self, path: Path) -> None:
        self.path, self.name = path, path.name
        self.a = {p.stem: np.load(p, mmap_mode="r") for p in sorted(path.glob("*.npy"))}
        self.packed = "seq_offsets" in self.a
        self.prov = ("doc_source", "doc_record") if self.packed else ("source", "record")
        self.provenance = all(c in self.a for c in self.prov)
        self.rows = int(self.a["input_ids"].shape[0]) if self.packed else int(self.a["offsets"].shape[0]) - 1

    def row(self, k: int) -> tuple[np.ndarray, np.ndarray, list[Doc]]:
        a = self.a
        src, rec = (a[self.prov[0]], a[self.prov[1]]) if self.provenance else (None, None)
        if not self.packed:
            t0, t1 = int(a["offsets"][k]), int(a["offsets"][k + 1])
            ids = np.asarray(a["input_ids"][t0:t1], dtype=np.int64)
            return ids, np.asarray(a["labels"][t0:t1]) != IGNORE, [Doc(0, 0, t1 - t0, _opt(src, k), _opt(rec, k))]
        ids = np.asarray(a["input_ids"][k], dtype=np.int64)
        trained = np.asarray(a["labels"][k]) != IGNORE
        s0, s1 = int(a["seq_offsets"][k]), int(a["seq_offsets"][k + 1])
        lengths = a["seq_lengths"][s0:s1].tolist()
        docs, pos = [], 0
        for j, n in enumerate(lengths):
            s, r = _opt(src, s0 + j), _opt(rec, s0 + j)
            docs.append(Doc(j, pos, n, s, r, padding=s == -1))
            pos += n
        return ids, trained, docs

    def provenance_table(self) -> Iterator[tuple[int, int, int, int]]:
        a = self.a
        src, rec = a[self.prov[0]].tolist(), a[self.prov[1]].tolist()
        if not self.packed:
            yield from ((k, 0, src[k], rec[k]) for k in range(self.rows))
            return
        off = a["seq_offsets"].tolist()
        for k in range(self.rows):
            for j in range(off[k + 1] - off[k]):
                if src[off[k] + j] != -1:
                    yield k, j, src[off[k] + j], rec[off[k] + j]


class _MegatronShard(_Shard):
    def __init__(self, prefix: Path) -> None:
        self.name = prefix.name
        self.ids = IndexedDataset.open(prefix.with_name(f"{prefix.name}_{IDS_KEY}"))
        self.mask = IndexedDataset.open(prefix.with_name(f"{prefix.name}_{MASK_KEY}"))
        self.rows = len(self.ids)
        self.provenance = False

    def row(self, k: int) -> tuple[np.ndarray, np.ndarray, list[Doc]]:
        ids = np.asarray(self.ids[k], dtype=np.int64)
        return ids, np.asarray(self.mask[k]) != 0, [Doc(0, 0, len(ids))]


class PackOutput:
    """The rows of one ``ocml pack`` output folder, across its shards (read lazily)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError(f"{folder} is not a folder", code="E-INPUT-FILE", field="DIR",
                             hint="give the --out folder of ocml pack")
        m = self.folder / "manifest.json"
        self.manifest: dict[str, Any] = json.loads(m.read_text("utf-8")) if m.exists() else {}
        self.shards = self._shards()
        if not self.shards:
            raise InputError(f"{folder} holds no shards (data/*.parquet, npy/*/, megatron/*)", code="E-INPUT-FILE",
                             field="DIR", hint="give the --out folder of a finished ocml pack run")
        self.starts = np.cumsum([0] + [s.rows for s in self.shards])

    def _shards(self) -> list[_Shard]:
        d = self.folder
        parquet = sorted(p for p in (d / PARQUET_DIR).glob("*.parquet") if not p.name.startswith("."))
        if parquet:
            return [_ParquetShard(p) for p in parquet]
        npy = sorted(p for p in (d / NPY_DIR).glob("*") if p.is_dir() and not p.name.startswith("."))
        if npy:
            return [_NpyShard(p) for p in npy]
        suffix = f"_{IDS_KEY}.idx"
        meg = sorted(p for p in (d / MEGATRON_DIR).glob(f"*{suffix}") if not p.name.startswith("."))
        return [_MegatronShard(p.with_name(p.name[: -len(suffix)])) for p in meg]

    @property
    def rows(self) -> int:
        return int(self.starts[-1])

    @property
    def provenance(self) -> bool:
        return all(s.provenance for s in self.shards)

    def row(self, n: int) -> Row:
        if not 0 <= n < self.rows:
            raise InputError(f"row {n} out of range: {self.folder} has {self.rows} rows", code="E-USAGE",
                             field="--row", hint=f"0..{self.rows - 1}")
        k = int(np.searchsorted(self.starts, n, side="right")) - 1
        sh = self.shards[k]
        ids, trained, docs = sh.row(n - int(self.starts[k]))
        pad_id = self.manifest.get("pad_id")
        last = docs[-1] if docs else None
        if last is not None and not last.padding and len(docs) > 1 and pad_id is not None:
            # .npy rows without provenance: the row's padding is its last segment, all pad ids, untrained.
            a, b = last.start, last.start + last.length
            last.padding = bool(np.all(ids[a:b] == pad_id) and not trained[a:b].any())
        return Row(n, sh.name, n - int(self.starts[k]), ids, trained, docs)

    def source_number(self, text: str) -> int:
        """``--source``: a source number, or an input path / file name from the manifest."""
        try:
            return int(text)
        except ValueError:
            pass
        recipe = (self.manifest.get("recipe") or {}).get("sources") or []
        for s in self.manifest.get("sources", []):
            k = int(s["source"])
            paths = [s.get("path", "")] + [f.get("path", "") for f in s.get("files", [])]
            names = [recipe[k].get("name", "")] if k < len(recipe) else []  # a recipe source's name, as reported
            for p in filter(None, paths + names):
                if text in (p, Path(p).name) or (text.startswith("…") and p.endswith(text[1:])):  # report's short form
                    return k
        raise InputError(f"no source {text!r} in {self.folder / 'manifest.json'}", code="E-USAGE", field="--source",
                         hint="a source number, its name as the report prints it, or an input path as given to "
                              "ocml pack (see manifest.json 'sources')")

    def find(self, source: int | None, record: int | None) -> Iterator[tuple[int, int]]:
        """(row, doc index) of every document from ``source`` / with ``record`` (None = any)."""
        if not self.provenance:
            raise InputError(f"{self.folder} has no provenance columns (doc_source / doc_record)", code="E-USAGE",
                             field="--source" if source is not None else "--record",
                             hint="select with --row / --doc, or repack with an ocml that writes provenance")
        for k, sh in enumerate(self.shards):
            base = int(self.starts[k])
            for r, j, s, rec in sh.provenance_table():
                if (source is None or s == source) and (record is None or rec == record):
                    yield base + r, j
