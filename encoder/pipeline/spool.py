"""Append-only columns on disk (one raw file each), cut back to a checkpoint on resume.

A recipe run needs every document before it can split, weight and shuffle them: the
documents (and later the packed rows) wait here, on disk, instead of in memory, and are
read back as memory maps.  Sizes are counted in elements; ``open(sizes)`` truncates each
file to what a checkpoint recorded, so a resumed run appends exactly after it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import DTypeLike


class Spool:
    def __init__(self, folder: Path, columns: Mapping[str, DTypeLike]) -> None:
        self.folder = folder
        self.columns = {k: np.dtype(v) for k, v in columns.items()}
        self._files: dict[str, IO[bytes]] = {}

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.bin"

    def open(self, sizes: dict[str, int] | None = None) -> Spool:
        """Open for appending; ``sizes`` None = start empty, else cut each column back to it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, dt in self.columns.items():
            p = self.path(name)
            keep = (sizes or {}).get(name, 0) * dt.itemsize
            with open(p, "ab") as f:
                f.truncate(keep)
            self._files[name] = open(p, "ab")
        return self

    def append(self, name: str, values: np.ndarray) -> None:
        self._files[name].write(np.ascontiguousarray(values, dtype=self.columns[name]).tobytes())

    def sizes(self) -> dict[str, int]:
        self.flush()
        return {n: self.path(n).stat().st_size // dt.itemsize for n, dt in self.columns.items()}

    def flush(self) -> None:
        for f in self._files.values():
            f.flush()

    def sync(self) -> None:
        for f in self._files.values():
            f.flush()
            os.fsync(f.fileno())

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files = {}

    def read(self, name: str) -> np.ndarray:
        """The column as a read-only memory map (an empty array when empty)."""
        p = self.path(name)
        dt = self.columns[name]
        if not p.exists() or p.stat().st_size == 0:
            return np.zeros(0, dtype=dt)
        return np.memmap(p, dtype=dt, mode="r")


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Flat indices of the ranges ``[starts[i], starts[i] + lengths[i])``, back to back."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lengths), lengths)
    flat: np.ndarray = np.arange(total, dtype=np.int64) + shift
    return flat


__all__ = ["Spool", "ranges"]
