"""The one rule for tool-call arguments, applied by every format.

A tool call's arguments are JSON: OpenAI's ``function.arguments`` is a JSON string, HF /
TRL data often has a dict.  A dict (or list) is written as JSON once (never
double-encoded); a string must already be JSON text, else ``E-BODY-CONSTRAINT-VIOLATION``
naming the message and field: ``"{'city': 'Tokyo',}"`` (a Python repr) is a data bug,
and writing it as a JSON *string* would train the model to emit a string where the tool
expects an object.  Empty or missing arguments are the same error (``"{}"`` is a call
without arguments).  Harmony / OpenChatML check bodies constrained to ``json`` with
``check_json``; ChatML (Qwen ``<tool_call>``) and Apertus (``<|tools_prefix|>``) check
their call arguments with it too.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import BodyConstraintError, InputError
from .jsonlimits import check_value, loads_strict

ARGS_HINT = "arguments are JSON text (json.dumps(args)) or a dict; '{}' for a call without arguments"
ARGS = "tool-call arguments"


def arguments_text(value: Any, *, index: int | None, field: str) -> str:
    """A call's arguments as given -> text: dicts / lists as JSON (once), strings as they are
    (checked later by ``check_json``, where the format renders them), null as ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    check_value(value, ARGS, field=field, index=index)  # depth, NaN, huge ints: typed (jsonlimits)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"arguments cannot be written as JSON ({exc})", index=index, field=field,
                         hint=ARGS_HINT) from None


def check_json(text: str, *, index: int | None, field: str = "content", what: str = "body") -> None:
    """``text`` must be JSON (``E-BODY-CONSTRAINT-VIOLATION`` otherwise), within ``jsonlimits``'
    bounds (``E-INPUT-DEPTH`` / ``E-INPUT-NUMBER``: no NaN / Infinity, which JSON has not)."""
    try:
        loads_strict(text, what, field=field, index=index)
    except json.JSONDecodeError as exc:
        reason = "is empty" if not text.strip() else f"is not valid JSON ({exc})"
        raise BodyConstraintError(f"{what} {reason}", index=index, field=field,
                                  hint=ARGS_HINT if what != "body" else "fix the JSON or drop the json content type"
                                  ) from None
