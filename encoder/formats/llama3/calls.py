"""Llama 3 tool calls, written and read back.

Written as the HF templates write them (trl ``llama3_1.jinja`` / ``llama3_2.jinja``): a custom
tool's call is the whole assistant frame ``{"name": "NAME", "parameters": ARGS}`` (ARGS the
arguments' JSON text as given; the templates' ``tojson`` writes dict arguments so); a
built-in tool's call (the ``builtin_tools`` option) is ``<|python_tag|>NAME.call(k="v", ...)``,
its frame ended by ``<|eom_id|>``.

Read back as Meta's reference parser reads them (llama-models ``ChatFormat.
decode_assistant_message`` and ``ToolUtils``): a frame whose text is one JSON object with
``name`` and ``parameters`` (or ``arguments``) is a call; after ``<|python_tag|>``,
``NAME.call(k="v", ...)`` is a built-in call and any other text is ``code_interpreter`` code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...arguments import check_json
from ...errors import CallSchemaError
from ...messages import Message

PYTHON_TAG = "<|python_tag|>"
CODE_INTERPRETER = "code_interpreter"
_BUILTIN_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\.call\((.*)\)\s*", re.S)
_KWARG = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)', re.S)


@dataclass(frozen=True)
class Llama3Frame:
    """What an assistant frame's text is besides its text (``Message.structured`` at render):
    ``python_tag``: the body starts with ``<|python_tag|>``; ``eom``: it ends with ``<|eom_id|>``."""

    python_tag: bool = False
    eom: bool = False


@dataclass(frozen=True)
class Llama3Turn:
    """An assistant frame read as a turn (the OpenAI view): its answer or its call."""

    parts: tuple[Message, ...] = field(default_factory=tuple)

    def openai_parts(self) -> tuple[Message, ...]:
        return self.parts

    def to_dict(self) -> dict[str, Any]:
        return {"parts": [m.to_dict() for m in self.parts]}


def call_text(name: str, arguments: str, index: int, validate: bool) -> str:
    """A custom tool's call as the templates write it."""
    if json.dumps(name, ensure_ascii=False)[1:-1] != name:
        raise CallSchemaError(f"tool name {name!r} cannot be written in a Llama 3 call: JSON would need to escape it",
                              index=index, field="name", hint="use a tool name of letters, digits, '_', '-' or '.'")
    if validate:
        check_json(arguments, index=index, what="tool-call arguments")
    return '{"name": "' + name + '", "parameters": ' + arguments + "}"


def builtin_call_text(name: str, arguments: str, index: int) -> str:
    """A built-in tool's call (after ``<|python_tag|>``): ``NAME.call(k="v", ...)``, string values only."""
    check_json(arguments, index=index, what="tool-call arguments")
    args = json.loads(arguments)
    if not isinstance(args, dict) or not all(isinstance(v, str) and '"' not in v for v in args.values()):
        raise CallSchemaError(f"built-in tool {name!r} takes string arguments without '\"'", index=index,
                              field="arguments", hint='e.g. {"query": "weather in Paris"}: the template writes '
                                                      'NAME.call(query="...")')
    return name + ".call(" + ", ".join(f'{k}="{v}"' for k, v in args.items()) + ")"


def read_call(text: str) -> tuple[str, str] | None:
    """(name, arguments JSON) of an assistant frame's text, or None when it is not a call."""
    if text.startswith(PYTHON_TAG):
        body = text[len(PYTHON_TAG):]
        m = _BUILTIN_CALL.fullmatch(body)
        if m is not None:
            args: dict[str, str] = {}
            rest = m.group(2)
            pos = 0
            while pos < len(rest):
                kw = _KWARG.match(rest, pos)
                if kw is None or kw.end() == pos:
                    break
                args[kw.group(1)] = kw.group(2)
                pos = kw.end()
            else:
                return m.group(1), json.dumps(args, ensure_ascii=False)
        return CODE_INTERPRETER, json.dumps({"code": body}, ensure_ascii=False)
    s = text.strip()
    if not s.startswith("{"):
        return None
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    params = obj.get("parameters", obj.get("arguments"))
    if not isinstance(params, dict):
        return None
    return obj["name"], json.dumps(params, ensure_ascii=False)


def read_turn(m: Message) -> Llama3Turn:
    """An assistant frame as the OpenAI view reads it: one call, or the answer."""
    got = read_call(m.content)
    if got is None:
        return Llama3Turn((m.with_(channel=None),) if m.content else ())
    name, args = got
    return Llama3Turn((Message(role="assistant", content=args, recipient="functions." + name, constrain="json"),))
