"""The text shape's ``--overlong`` default applied per document in a mixed run.

``ocml pack`` gives its packer one overlong policy.  When ``--overlong`` is not given and the
run's policy (the conversations' default under ``--shape auto``) differs from the text
shape's (``split``, ``shapes.OVERLONG_DEFAULT``), text documents longer than ``seq_len`` are
split here, in the worker, into pieces of at most ``seq_len`` tokens, each its own document
for the packer: exactly what the packer's ``split`` does (each piece its own segment,
positions restarting), so a text record in a recipe of conversations is never truncated to
nothing or dropped.  Every split document is reported in ``overlong.jsonl`` like the packer's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..render import RenderResult
from .detect import record_shape
from .examples import TextExample
from .shapes import OVERLONG_DEFAULT, RecordShape

if TYPE_CHECKING:
    from ..codec import Renders


@dataclass(frozen=True)
class Presplit:
    """One text document split in the worker: its location, length and number of pieces."""

    location: int
    length: int
    pieces: int

    def overlong_record(self, where: dict[str, Any], seq_len: int) -> dict[str, Any]:
        """Its ``overlong.jsonl`` line (the packer's keys)."""
        return {**where, "action": "split", "length": self.length, "kept": self.length, "pieces": self.pieces,
                "reason": f"text: split into {self.pieces} pieces of <= {seq_len} (the text shape's default)"}


def split_text_seq_len(shape: str, overlong_given: bool, run_policy: str, pack: bool, seq_len: int | None) -> int:
    """``seq_len`` when text documents must be split in the worker, else 0."""
    text_policy = OVERLONG_DEFAULT[RecordShape.TEXT]
    if not pack or overlong_given or not seq_len or run_policy == text_policy or text_policy != "split":
        return 0
    return seq_len if shape in ("auto", RecordShape.TEXT.value) else 0


def _is_text(enc: Renders, conv: Any) -> bool:
    if isinstance(conv, TextExample):
        return True
    if type(conv) is not dict:
        return False
    try:
        return record_shape(conv, enc.shape, enc.shape_options) is RecordShape.TEXT
    except Exception:  # noqa: BLE001 - it rendered, so it has a shape; anything else is not text
        return False


def split_text(enc: Renders, convs: list[Any], locs: list[int], results: list[Any], seq_len: int
               ) -> tuple[list[int], list[Any], list[Presplit]]:
    """(locations, results, splits): overlong text results replaced by their pieces."""
    if not any(isinstance(r, RenderResult) and len(r) > seq_len for r in results):
        return locs, results, []
    out_locs: list[int] = []
    out: list[Any] = []
    splits: list[Presplit] = []
    for conv, loc, res in zip(convs, locs, results):
        if isinstance(res, RenderResult) and len(res) > seq_len and _is_text(enc, conv):
            n = len(res)
            starts = range(0, n, seq_len)
            for a in starts:
                b = min(n, a + seq_len)
                out.append(RenderResult(res.ids[a:b], res.mask[a:b], res.expanded_index[a:b], res.conversation))
                out_locs.append(loc)
            splits.append(Presplit(loc, n, len(starts)))
        else:
            out.append(res)
            out_locs.append(loc)
    return out_locs, out, splits


def presplit_lines(presplit: list[Presplit], where: Callable[[int], dict[str, Any]], seq_len: int) -> list[str]:
    """The ``overlong.jsonl`` lines of the text documents split in the worker (``where(location)``:
    the document's file, line, source and record)."""
    return [json.dumps(p.overlong_record(where(p.location), seq_len), ensure_ascii=False) + "\n" for p in presplit]
