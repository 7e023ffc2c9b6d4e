"""Alpaca records (``instruction``, ``input``, ``output``, optional ``system``) -> a conversation.

The user turn is ``instruction``, then ``ShapeOptions.alpaca_join`` (default ``"\\n"``) and
``input`` when ``input`` is non-empty: LLaMA-Factory's alpaca converter
(``data/converter.py``: ``"\\n".join([instruction, input])`` over the non-empty parts).
``output`` is the assistant's answer, ``system`` (when non-empty) a system message first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import options, text_field
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
    messages += [{"role": "user", "content": user}, {"role": "assistant", "content": output}]
    return {**options(record), "messages": messages}
