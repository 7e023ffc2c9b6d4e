"""Typed fields out of JSON input, with an ``E-INPUT`` error that names the field and a hint;
a cheap deep copy of JSON data.  Used by the Harmony content model (``harmony.content``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ocml.vocab.errors import InputError

__all__ = ["copy_json", "need_mapping", "need_str", "type_name"]


def type_name(value: Any) -> str:
    return type(value).__name__


def need_str(value: Any, field_name: str, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    raise InputError(
        f"expected {'a string or null' if optional else 'a string'}, got {type_name(value)}",
        field=field_name,
        hint="pass text as a JSON string" + (" (or null to omit it)" if optional else ""),
    )


def need_mapping(value: Any, field_name: str, what: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise InputError(
        f"{what} must be a mapping, got {type_name(value)}",
        field=field_name,
        hint=f"pass {what} as a JSON object",
    )


_ATOMS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """``copy.deepcopy`` for JSON data (dicts, lists, atoms) at a fraction of its cost (no memo);
    anything else is handed to ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: v if type(v) in _ATOMS else copy_json(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _ATOMS else copy_json(v) for v in value]
    if t in _ATOMS:
        return value
    return copy.deepcopy(value)

