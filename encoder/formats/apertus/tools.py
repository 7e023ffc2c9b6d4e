"""Apertus developer block: ``Deliberation: ...`` and the TypeScript-like tool declarations.

Written to give the reference template's bytes (swiss-ai/apertus_format ``chat_template.jinja``
as rendered by transformers: ``trim_blocks``, ``lstrip_blocks``), quirks included, since the
models were trained on them (checked by ``tests/template/test_apertus_parity.py``):
- a parameter with a default gets ``, // default: X`` *before* the separating ``,``
  (enum and ``oneOf`` defaults raw, others as JSON);
- nested object properties are ``NAME: `` + ``\\n`` + 16 spaces + type, joined by ``, ``;
- ``oneOf`` variants are always listed (the template's "object variants -> any" test never
  fires: a Jinja ``set`` inside a loop does not leave it), each with ``// DESCRIPTION`` right
  after its type, a default as 20 spaces + ``// default: JSON``, separated by `` | \\n``;
- an array of a complex type is ``any[]`` when the type is ``object | object`` or longer
  than 50 characters.
Tools may be OpenAI-wrapped (``{"type": "function", "function": {...}}``): the adapters
unwrap them (the template raises on them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

SIMPLE_ARRAY_ITEMS = {"string": "string[]", "number": "number[]", "integer": "number[]", "boolean": "boolean[]"}
_NESTED_PAD = "\n" + " " * 16
_ONEOF_DEFAULT_PAD = " " * 20


def _tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def ts_type(spec: Mapping[str, Any]) -> str:
    """The TypeScript-like type of one JSON Schema node."""
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        if items:
            out = SIMPLE_ARRAY_ITEMS.get(items.get("type"))
            if out is None:
                inner = ts_type(items)
                out = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        else:
            out = "any[]"
        return out + (" | null" if spec.get("nullable") else "")
    if isinstance(kind, (list, tuple)) and kind:
        return " | ".join(str(k) for k in kind) if len(kind) > 1 else str(kind[0])
    if spec.get("oneOf"):
        variants = spec["oneOf"]
        parts = []
        for k, v in enumerate(variants):
            s = ts_type(v)
            if v.get("description"):
                s += "// " + str(v["description"])
            if "default" in v:
                s += _ONEOF_DEFAULT_PAD + "// default: " + _tojson(v["default"])
            if k < len(variants) - 1:
                s += " | \n"
            parts.append(s)
        return "".join(parts)
    if kind == "string":
        if spec.get("enum"):
            return '"' + '" | "'.join(str(e) for e in spec["enum"]) + '"'
        return "string" + (" | null" if spec.get("nullable") else "")
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "object":
        props = spec.get("properties")
        if not props:
            return "object"
        required = spec.get("required") or []
        fields = [name + ("" if name in required else "?") + ": " + _NESTED_PAD + ts_type(p) for name, p in props.items()]
        return "{\n" + ", ".join(fields) + "}"
    return "any"


def _param(name: str, spec: Mapping[str, Any], required: Sequence[str]) -> str:
    out = ("// " + str(spec["description"]) + "\n") if spec.get("description") else ""
    out += name + ("" if name in required else "?") + ": " + ts_type(spec)
    if "default" in spec:
        if spec.get("enum"):
            out += ", // default: " + str(spec["default"])
        elif spec.get("oneOf"):
            out += "// default: " + str(spec["default"])
        else:
            out += ", // default: " + _tojson(spec["default"])
    return out


def tool_declarations(tools: Sequence[Mapping[str, Any]]) -> str:
    """``// DESCRIPTION\\ntype NAME = (_: {\\n...}) => any;`` per tool, one per line group."""
    out = []
    for t in tools:
        head = "// " + str(t.get("description") or "") + "\ntype " + t["name"] + " = "
        params = t.get("parameters") or {}
        props = params.get("properties") if isinstance(params, Mapping) else None
        if not props:
            out.append(head + "() => any;")
            continue
        required = params.get("required") or []
        body = ",\n".join(_param(name, spec, required) for name, spec in props.items())
        out.append(head + "(_: {\n" + body + "\n}) => any;")
    return "\n".join(out)


def developer_text(enable_thinking: bool, tools: Sequence[Mapping[str, Any]] | None) -> str:
    """The developer block's text (between ``<|developer_start|>`` and ``<|developer_end|>``)."""
    text = "Deliberation: " + ("enabled\n" if enable_thinking else "disabled\n")
    if tools:
        return text + "Tool Capabilities:\n" + tool_declarations(tools)
    return text + "Tool Capabilities: disabled"


def default_system(date: str | None) -> str:
    """The reference template's system text when the conversation has none.  Its date line
    only when a date is given: the reference template writes today's date, but training data
    must not change from one day to the next (pass ``date=`` for the template's text)."""
    text = "You are Apertus, a helpful assistant created by the SwissAI initiative.\nKnowledge cutoff: 2024-04"
    return text + "\nCurrent date: " + date if date else text
