"""``Batch``: what ``Encoder.render_batch`` returns (here, a leaf, so packing reads it without the facade)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from typing import Any

import numpy as np

from .errors import OcmlError
from .render import RenderResult

__all__ = ["Batch"]


@dataclass
class Batch:
    """``render_batch`` output: one result per input (None where it failed) and the errors."""

    results: list[RenderResult | None]
    errors: list[tuple[int, OcmlError]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[RenderResult | None]:
        return iter(self.results)

    def __getitem__(self, i: int) -> RenderResult | None:
        return self.results[i]

    def ragged(self) -> dict[str, np.ndarray[Any, Any]]:
        """The successful results, flat: ``ids``/``mask``/``message_index`` (concatenated),
        ``offsets`` (int64, len n+1) and ``index`` (int64, len n: the input index of each
        document, since failed rows are left out and positions no longer line up)."""
        index = [i for i, r in enumerate(self.results) if r is not None]
        ok = [r for r in self.results if r is not None]
        lens = np.array([len(r) for r in ok], dtype=np.int64)
        offsets = np.zeros(len(ok) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        return {
            "ids": np.concatenate([r.ids for r in ok]) if ok else np.zeros(0, np.int32),
            "mask": np.concatenate([r.mask for r in ok]) if ok else np.zeros(0, bool),
            "offsets": offsets,
            "index": np.array(index, dtype=np.int64),
            "message_index": np.concatenate([r.message_index for r in ok]) if ok else np.zeros(0, np.int32),
        }
