"""Alpaca records (``instruction``, ``input``, ``output``, optional ``system``) -> a conversation.

The user turn is ``instruction``, then ``ShapeOptions.alpaca_join`` (default ``"\\n"``) and
``input`` when ``input`` is non-empty: LLaMA-Factory's alpaca converter
(``data/converter.py``: ``"\\n".join([instruction, input])`` over the non-empty parts).
``output`` is the assistant's answer, ``system`` (when non-empty) a system message first,
and ``history`` (LLaMA-Factory's ``[[instruction, response], ...]``) earlier turns between them;
the mask policy trains those answers too (LLaMA-Factory's default, ``mask_history: false``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from .common import decoded, options, text_field
from .shapes import ShapeOptions

SHAPE = "alpaca"


def read_alpaca(record: Mapping[str, Any], opts: ShapeOptions) -> dict[str, Any]:
    f = opts.fields
    instruction = text_field(record, f.instruction, SHAPE)
    extra = text_field(record, f.input, SHAPE, required=False)
    output = text_field(record, f.output, SHAPE)
    system = text_field(record, f.system, SHAPE, required=False)
    user = opts.alpaca_join.join(part for part in (instruction, extra) if part)
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages += _history(record.get(f.history), f.history)
    messages += [{"role": "user", "content": user}, {"role": "assistant", "content": output}]
    return {**options(record), "messages": messages}


def _history(value: Any, key: str) -> list[dict[str, Any]]:
    value = decoded(value, key)
    if value is None:
        return []
    out: list[dict[str, Any]] = []
    if not isinstance(value, list):
        raise InputError(f"alpaca {key!r} must be a list of [instruction, response] pairs", code="E-SHAPE-TYPE",
                         field=key)
    for i, turn in enumerate(value):
        if not (isinstance(turn, (list, tuple)) and len(turn) == 2 and all(isinstance(t, str) for t in turn)):
            raise InputError(f"alpaca {key!r} item {i} is not an [instruction, response] pair of strings",
                             code="E-SHAPE-TYPE", field=f"{key}[{i}]")
        out += [{"role": "user", "content": turn[0]}, {"role": "assistant", "content": turn[1]}]
    return out
