"""ChatML's response-template fields: a turn as ``chatml.turns`` reads it.

The field shapes are ``ocml.encoder.template.response``'s, whose docstring says how each format's
fields read a completion.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...template.response import CONTENT, TEXT_ARGS, THINKING, TOOL_CALLS, text_field, turn_end
from ...reasoning import Reasoning
from .turns import CALL_CLOSE, CALL_OPEN, THINK_CLOSE, THINK_OPEN

if TYPE_CHECKING:
    from ..base import Format


def fields(fmt: Format) -> dict[str, Any]:
    # A turn as ``chatml.turns`` reads it: a leading <think> block (reasoning="think") whose
    # newlines inside and after it are layout; each <tool_call> JSON object a call (one "\n"
    # before it is layout, and so is whitespace between calls and after the last one); the
    # rest content (one region: the engines refuse ``join``).  Calls come parsed, as in transformers' own Qwen
    # template (arguments a dict; ``to_openai`` gives their text).
    end = re.escape(turn_end(fmt))
    t_open, t_close = re.escape(CALL_OPEN), re.escape(CALL_CLOSE)
    fields: dict[str, Any] = {CONTENT: text_field(close=turn_end(fmt))}
    if fmt.reasoning is Reasoning.THINK:  # type: ignore[attr-defined]
        fields[THINKING] = {
            "open_pattern": "^" + re.escape(THINK_OPEN) + r"\n*",
            "close_pattern": r"\n*" + re.escape(THINK_CLOSE) + r"\n*|\n*(?=" + end + ")",
            "content_args": TEXT_ARGS}
    # a call opens only once its </tool_call> has come (the lookahead holds the stream until
    # then): a call cut short stays content, as to_openai keeps it
    complete = r"(?=(?:(?!" + t_close + r").)*" + t_close + r")"
    fields[TOOL_CALLS] = {
        "open_pattern": r"(?:(?<=" + t_close + r")\s*|\n?)" + t_open + complete,
        "close_pattern": t_close + r"(?:\s*(?=" + end + r"|\Z|" + t_open + r"))?",
        "content": "json", "repeats": True,
        "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}}
    return fields
