"""Where every packed document came from: its *source* (the input as given on the command
line, numbered from 0) and its *record* index inside it (the line of a JSONL file, the row
of a Parquet / Arrow file, the item of a JSON array; counted from 0 across the source's
files in the order they are read, blank lines included).

Inside the pipeline a document is known by ``file << LOC_BITS | location`` (what the
packer carries as its input index); ``SourceMap.translate`` turns that into
(source, record) when rows are written, so a user can trace any token back to its record
with the manifest's ``sources`` table alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .readers import Position, Source, resolve

LOC_BITS = 40  # document index = file << 40 | location


class SourceMap:
    """The inputs, their files, and the record count of each file read so far."""

    def __init__(self, inputs: tuple[str, ...] | list[str], file_records: list[int] | None = None,
                 resolved: list[list[Source]] | None = None) -> None:
        """``resolved``: each input's files when the caller resolved them already (a recipe's
        source may be a glob)."""
        self.inputs = list(inputs)
        self.files: list[Source] = []
        owner: list[int] = []
        for k, raw in enumerate(self.inputs):
            got = resolved[k] if resolved is not None else resolve([raw])
            self.files += got
            owner += [k] * len(got)
        self.source_of = np.asarray(owner, dtype=np.int64)
        self.first_location = np.asarray([s.kind.first_location for s in self.files], dtype=np.int64)
        self.file_records = list(file_records) if file_records else [0] * len(self.files)

    def seen(self, end: Position) -> None:
        """A chunk ending at ``end`` was read: its file holds at least that many records."""
        if end.source < len(self.files):
            n = end.location - int(self.first_location[end.source])
            if n > self.file_records[end.source]:
                self.file_records[end.source] = n

    def bases(self) -> np.ndarray:
        """Record index of each file's first record within its source."""
        counts = np.asarray(self.file_records, dtype=np.int64)
        total = np.concatenate(([0], np.cumsum(counts)))
        first_of_source = np.searchsorted(self.source_of, self.source_of, side="left")
        return total[:-1] - total[first_of_source]

    def translate(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Document indices (``file << 40 | location``; -1 = padding) -> (source int32, record int64)."""
        index = np.asarray(index, dtype=np.int64)
        real = index >= 0
        f = np.where(real, index >> LOC_BITS, 0)
        loc = index & ((1 << LOC_BITS) - 1)
        source = np.where(real, self.source_of[f], -1).astype(np.int32)
        record = np.where(real, self.bases()[f] + loc - self.first_location[f], -1)
        return source, record.astype(np.int64)

    def where(self, file: int, location: int) -> dict[str, Any]:
        """``{"file", "line" | "row" | "item", "source", "record"}`` for one document."""
        src = self.files[file]
        record = int(self.bases()[file]) + location - int(self.first_location[file])
        return {"file": src.display, src.kind.location: location, "source": int(self.source_of[file]),
                "record": record}

    def manifest(self) -> list[dict[str, Any]]:
        """The manifest's ``sources``: number -> path, and each file's first record index."""
        bases = self.bases().tolist()
        out: list[dict[str, Any]] = []
        for k, raw in enumerate(self.inputs):
            files = [{"path": s.display, "kind": s.kind.value, "first_record": bases[f],
                      "records": self.file_records[f]}
                     for f, s in enumerate(self.files) if self.source_of[f] == k]
            out.append({"source": k, "path": raw, "files": files})
        return out
