"""Llama 3's fields of a transformers response template (``ocml.encoder.template.response``
has the rules every format's template follows and the engines' conventions).

``tool_calls``: a frame whose whole text is ``{"name": "NAME", "parameters": ARGS}`` (the call
as ``calls.call_text`` writes it) - opened only once the text after it ends with ``}`` at the
frame's end (``<|eot_id|>`` / ``<|eom_id|>``) or the completion's end, so a call cut short stays
content, as ``to_openai`` keeps it; ARGS parsed as JSON.  ``content``: the rest (the implicit
field), closed by the end control.  Not expressed: a built-in tool's call after
``<|python_tag|>`` (``NAME.call(k="v")``: its arguments are not JSON; it reads as content), and
the other spellings Meta's parser accepts (``"arguments"``, other key orders).
"""

from __future__ import annotations

import re
from typing import Any

_ENDS = ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")


def response_fields(fmt: Any) -> dict[str, Any]:
    end = "|".join(re.escape(c) for c in _ENDS)
    complete = r"(?=[\s\S]*\}\s*(?:" + end + r"|\Z))"
    return {
        "content": {"close_pattern": end, "content_args": {"strip": False}},
        "tool_calls": {
            "open_pattern": r'^\s*\{"name": "(?P<name>[^"\\]+)", "parameters": ' + complete,
            "close_pattern": r"\}\s*(?=" + end + r"|\Z)",
            "content": "json", "content_args": {"allow_non_json": True, "strip": False}, "repeats": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
    }
