"""One dataset record -> one conversation ``Encoder.render`` accepts (or a record of another
shape, for ``ocml.encoder.inputs.render_records``).

A record is a row of a dataset (a JSONL line, a Parquet / Arrow row).  Its messages live
in one column (``messages_field``, default ``messages``) and its tool definitions in
another (``tools_field``, default ``tools``); any other column that is a conversation
option (``reasoning_effort``, ``date``...) is passed on, the rest (ids, sources) are
ignored by the formats.  Columns stored as JSON strings (common in Parquet / HF datasets:
``tools`` as a string) are decoded.  Also read as they are:

- a bare list of messages (a JSONL line that is a JSON array);
- ShareGPT records (``conversations: [{"from": "human", "value": ...}]``, with
  LLaMA-Factory's ``function_call`` / ``observation`` turns and ``tools`` as JSON).

Message-level shapes (OpenAI / HF chat, openai-harmony JSON, canonical, §10) are left to
``ocml.encoder.adapters``: this module only finds the messages and options in a record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..adapters.values import decoded as _decoded  # one rule for the API and the CLI
from ..arguments import arguments_text
from ..errors import InputError
from ..inputs.hermes import hermes_messages

SHAREGPT_FIELD = "conversations"
# ShareGPT speaker names -> roles (the spellings found in public ShareGPT-style sets).
SHAREGPT_ROLES: dict[str, str] = {
    "human": "user", "user": "user",
    "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "model": "assistant",
    "bard": "assistant", "bing": "assistant",
    "system": "system",
    "observation": "tool", "tool": "tool", "function_response": "tool", "ipython": "tool",
    "function_call": "function_call",  # an assistant tool call, value = {"name", "arguments"}
}


def conversation_from_record(record: Mapping[str, Any], *, messages_field: str = "messages",
                             tools_field: str = "tools", shape: str = "auto", shape_options: Any = None,
                             ignored: Counter[str] | None = None) -> Any:
    """The conversation in ``record``: ``{"messages": [...], "tools": [...], ...options}``.
    A record of another shape (prompt/completion, Alpaca, text: ``ocml.encoder.inputs``), detected
    or forced by ``shape``, is returned with its data and options only: ``inputs.render_records`` reads it.
    Every record goes through the one column rule first (``ocml.encoder.inputs.columns``:
    extra columns dropped and counted in ``ignored``, misspelled options refused).

    Raises ``InputError`` naming the field for records that hold no conversation.
    """
    from ..inputs.columns import apply_rule
    from ..inputs.detect import UNREAD_COLUMNS, record_shape
    from ..inputs.shapes import RecordShape, ShapeOptions

    if isinstance(record, (list, tuple)):
        return {"messages": list(record)}
    if not isinstance(record, Mapping):
        raise InputError(f"a record must be a JSON object or a list of messages, got {type(record).__name__}",
                         field=messages_field, hint="one conversation per line / row")
    opts = ShapeOptions.parse(shape_options)
    try:
        rshape = record_shape(record, shape, opts, messages_field)
    except InputError as exc:
        if exc.code == "E-SHAPE-UNKNOWN" and not UNREAD_COLUMNS.keys() & record.keys():
            raise no_messages(record, messages_field) from None  # conversations are the common case
        raise
    record = apply_rule(record, rshape, opts, messages_field=messages_field, tools_field=tools_field,
                        ignored=ignored)
    if rshape is not RecordShape.CHAT:
        return record
    if messages_field in record:
        messages = _decoded(record[messages_field], messages_field)
    elif SHAREGPT_FIELD in record and messages_field == "messages":
        messages = sharegpt_messages(_decoded(record[SHAREGPT_FIELD], SHAREGPT_FIELD))
    else:
        raise no_messages(record, messages_field)
    if not isinstance(messages, list):
        raise InputError(f"{messages_field!r} must be a list of messages, got {type(messages).__name__}",
                         field=messages_field)
    messages = hermes_messages(with_system(messages, record.get(opts.fields.system), opts.fields.system))
    out: dict[str, Any] = {k: v for k, v in record.items()
                           if k not in (messages_field, tools_field, SHAREGPT_FIELD, opts.fields.system)}
    out["messages"] = messages
    tools = record.get(tools_field)
    if tools is not None and not (isinstance(tools, str) and not tools.strip()):  # LLaMA-Factory: "" = none
        tools = _decoded(tools, tools_field)
        if not isinstance(tools, list):
            raise InputError(f"{tools_field!r} must be a list of tool definitions, got {type(tools).__name__}",
                             field=tools_field)
        if tools:
            out["tools"] = tools
    return out


def no_messages(record: Mapping[str, Any], messages_field: str) -> InputError:
    """``record has no 'messages' field``, naming a column that looks like a typo of it."""
    near = sorted(k for k in record if isinstance(k, str) and looks_like(k, messages_field))
    hint = (f"found {near[0]!r}: a typo in the data, or pass --messages-field {near[0]}" if near
            else f"columns present: {sorted(map(str, record))[:8]}; use --messages-field to name the messages column")
    return InputError(f"record has no {messages_field!r} field", field=messages_field, hint=hint)


def with_system(messages: list[Any], system: Any, field: str) -> list[Any]:
    """LLaMA-Factory's ``system`` column: the system prompt before the messages (a first
    system message saying something else is ``E-INPUT-SYSTEM``: which one is meant?)."""
    if system is None or system == "":
        return messages
    if not isinstance(system, str):
        raise InputError(f"{field!r} must be a string, got {type(system).__name__}", field=field)
    first = messages[0] if messages else None
    if isinstance(first, Mapping) and first.get("role") in ("system", "developer"):
        if first.get("content") == system:
            return messages
        raise InputError(f"the record has a {field!r} column and a first {first.get('role')} message that differ",
                         code="E-INPUT-SYSTEM", field=field,
                         hint="keep one of them (LLaMA-Factory would silently use the message)")
    return [{"role": "system", "content": system}, *messages]


def sharegpt_messages(turns: Any) -> list[dict[str, Any]]:
    """ShareGPT ``[{"from", "value"}]`` turns -> OpenAI-style message dicts."""
    if not isinstance(turns, list):
        raise InputError(f"{SHAREGPT_FIELD!r} must be a list of turns", field=SHAREGPT_FIELD)
    out: list[dict[str, Any]] = []
    # ShareGPT has no call ids, and inventing some would put them in the rendered headers:
    # an observation answers the unanswered calls in order (the adapters' rule for replies
    # without ids), so it carries no name either (a name would make it read as native).
    for i, turn in enumerate(turns):
        field = f"{SHAREGPT_FIELD}[{i}]"
        if not isinstance(turn, Mapping) or not isinstance(turn.get("from"), str):
            raise InputError("a ShareGPT turn needs 'from' and 'value'", field=field, index=i)
        role = SHAREGPT_ROLES.get(turn["from"].lower())
        if role is None:
            raise InputError(f"unknown ShareGPT speaker {turn['from']!r}", field=f"{field}.from", index=i,
                             hint="one of: " + ", ".join(sorted(SHAREGPT_ROLES)))
        value = turn.get("value")
        if role != "function_call":
            out.append({"role": role, "content": value})
            continue
        call = _decoded(value, f"{field}.value")
        # LLaMA-Factory writes parallel calls as one function_call turn holding a list.
        for k, c in enumerate(call if isinstance(call, list) and call else [call]):
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
                raise InputError("a function_call turn's value must be {'name': ..., 'arguments': ...} "
                                 "(or a list of them)", field=f"{field}.value", index=i, code="E-CALL-SCHEMA")
            args = c.get("arguments", {})
            fn = {"name": c["name"], "arguments": args if isinstance(args, str) or args is None
                  else arguments_text(args, index=i, field=f"{field}.value.arguments")}
            tool_call = {"type": "function", "function": fn}
            # Consecutive calls form one assistant turn (parallel calls).
            if out and out[-1].get("role") == "assistant" and out[-1].get("tool_calls") and not out[-1].get("content"):
                out[-1]["tool_calls"].append(tool_call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
    return out


def looks_like(a: str, b: str) -> bool:
    """Likely a typo of ``b``: same letters give or take one (e.g. ``mesages``, ``Messages``)."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1 or sorted(a) == sorted(b)
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:k] + long_[k + 1:] == short for k in range(len(long_)))


def drop_nulls(value: Any) -> Any:
    """``value`` without null-valued dict keys, at any depth (list items stay, nulls included).

    For columns read from Arrow (Parquet, ``datasets``): a struct column gives every row every
    key any row has, as null (a tool schema gains ``"minimum": null``), so a tool list read from
    Arrow is pruned before rendering.  JSON input keeps its nulls (there they were written)."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value
