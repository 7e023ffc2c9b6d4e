"""Hermes-style function calling written inside the text (NousResearch's
hermes-function-calling, the format Qwen2.5's template writes): calls as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks in the assistant's text,
results wrapped in ``<tool_response>...</tool_response>``, tools listed in the system prompt
inside ``<tools>...</tools>``.

A conversation is read this way when it says so: a tool result wrapped in
``<tool_response>``, or a system message listing ``<tools>``.  Then

- each ``<tool_call>`` block of an assistant message becomes a structured call (JSON, or the
  Python-literal dicts some hermes records carry); text around the blocks stays the
  message's content; a block that is not ``{"name", "arguments"}`` is ``E-CALL-SCHEMA``;
- a tool result wrapped in ``<tool_response>`` blocks is one tool message per block,
  unwrapped (the format wraps it again its own way: never twice);
- the system prompt stays as written (its ``<tools>`` text is what the dataset trained;
  give a ``tools`` column to declare tools the format's own way).

Anything else (an assistant message that merely mentions ``<tool_call>`` in a conversation
with no sign of hermes) is left alone.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import CallSchemaError

TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)</tool_response>", re.S)
TOOLS_TAG = "<tools>"


def is_hermes(messages: list[Any]) -> bool:
    """Does the conversation write its tools, calls and results inside the text?"""
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            continue
        role, text = m.get("role"), m["content"]
        if role == "tool" and text.lstrip().startswith("<tool_response>"):
            return True
        if role == "system" and TOOLS_TAG in text:
            return True
    return False


def hermes_messages(messages: list[Any]) -> list[Any]:
    """``messages`` with hermes calls and results made structured (unchanged when not hermes)."""
    if not is_hermes(messages):
        return messages
    out: list[Any] = []
    for i, m in enumerate(messages):
        text = m.get("content") if isinstance(m, Mapping) else None
        if not isinstance(text, str):
            out.append(m)
        elif m.get("role") == "assistant" and "<tool_call>" in text and not m.get("tool_calls"):
            calls = [_call(block, i, k) for k, block in enumerate(TOOL_CALL.findall(text))]
            rest = TOOL_CALL.sub("", text).strip()
            out.append({**m, "content": rest or None, "tool_calls": calls})
        elif m.get("role") == "tool" and text.lstrip().startswith("<tool_response>"):
            results = TOOL_RESPONSE.findall(text)
            if not results or TOOL_RESPONSE.sub("", text).strip():
                raise CallSchemaError("a tool result holds text outside its <tool_response> blocks", index=i,
                                      field="content", hint="one <tool_response>...</tool_response> per result")
            out += [{**m, "content": r.strip("\n")} for r in results]
        else:
            out.append(m)
    return out


def _call(block: str, index: int, k: int) -> dict[str, Any]:
    body = block.strip()
    try:
        call = json.loads(body)
    except ValueError:
        try:
            call = ast.literal_eval(body)  # hermes records often write Python dicts ('single quotes')
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            call = None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        raise CallSchemaError(f"<tool_call> block {k} is not a JSON object with 'name' and 'arguments'",
                              index=index, field="content",
                              hint='<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>')
    args = call.get("arguments", {})
    if isinstance(args, str):
        text = args
    else:
        text = json.dumps(args, ensure_ascii=False)
    return {"type": "function", "function": {"name": call["name"], "arguments": text}}
