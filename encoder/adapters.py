"""Adapters: the input shapes people have -> ``Conversation``.

Accepted, per message dict (detected by keys, mixable in one conversation):
- canonical: ``role, content, channel, recipient``/``to``, ``call_id, name, intent,
  content_type, constrain, train``;
- OpenAI / HF chat: ``tool_calls``, ``tool_call_id``, ``reasoning_content``/``thinking``
  (one assistant dict may expand into several messages: analysis, text, one per call);
- openai-harmony ``Message.to_dict()``/``Conversation.to_json()``: ``content`` as a list
  of typed items (``text``, ``system_content``, ``developer_content``) and
  ``content_type`` like ``<|constrain|>json``;
- the OpenChatML §10 JSON interchange object (``thinking``, ``tool_call``, ``intent``).
A conversation is a list of those, a dict ``{"messages": [...], **options}``, an
openai-harmony ``Conversation`` object, or a JSON string of any of these.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError
from .messages import Conversation, Message, Options, new_message

CONSTRAIN_PREFIX = "<|constrain|>"
_CANONICAL = {"role", "content", "channel", "recipient", "to", "call_id", "name", "intent", "content_type",
              "constrain", "train", "parts"}
_OPENAI = {"tool_calls", "tool_call_id", "reasoning_content", "thinking", "reasoning", "tool_call"}
# Keys chat APIs carry that say nothing about rendering.
_IGNORED = {"refusal", "annotations", "audio", "function_call", "id", "type", "weight", "metadata",
            "created_at", "timestamp", "prefix"}
_OPTION_KEYS = {"tools", "builtin_tools", "reasoning_effort", "date", "conversation_start_date",
                "knowledge_cutoff", "model_identity", "instructions"}


def to_conversation(obj: Any) -> Conversation:
    if isinstance(obj, Conversation):
        return obj
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise InputError(f"conversation is a string but not JSON: {exc.msg}", field="conversation",
                             hint="pass a list of message dicts or a dict with 'messages'") from None
    if hasattr(obj, "to_dict") and not isinstance(obj, Mapping):  # openai-harmony Conversation / Message
        obj = obj.to_dict()
    options = Options()
    if isinstance(obj, Mapping):
        if "messages" not in obj:
            if "role" in obj:
                obj = [obj]
            else:
                raise InputError("a conversation dict needs a 'messages' list", field="messages",
                                 hint="use {'messages': [...], ...options} or a plain list of messages")
        else:
            options = _options(obj)
            obj = obj["messages"]
    if not isinstance(obj, Sequence) or isinstance(obj, (str, bytes)):
        raise InputError(f"messages must be a list, got {type(obj).__name__}", field="messages")
    out: list[Message] = []
    call_names: dict[str, str] = {}
    for index, raw in enumerate(obj):
        if type(raw) is dict:  # the common case first: no ABC checks
            out.extend(_message(raw, index, call_names))
            continue
        if isinstance(raw, Message):
            out.append(raw)
            continue
        if hasattr(raw, "to_dict") and not isinstance(raw, Mapping):
            raw = raw.to_dict()
        if not isinstance(raw, Mapping):
            raise InputError(f"a message must be a dict, got {type(raw).__name__}", index=index)
        out.extend(_message(raw, index, call_names))
    return Conversation(tuple(out), options)


def _options(d: Mapping[str, Any]) -> Options:
    extra = {k: v for k, v in d.items() if k != "messages" and k not in _OPTION_KEYS}
    tools = d.get("tools")
    if tools is not None:
        if not isinstance(tools, Sequence) or isinstance(tools, (str, bytes)):
            raise InputError("'tools' must be a list of tool definitions", field="tools")
        tools = tuple(_tool_def(t, i) for i, t in enumerate(tools))
    builtin = d.get("builtin_tools")
    if builtin is not None:
        if isinstance(builtin, str) or not all(isinstance(b, str) for b in builtin):
            raise InputError("'builtin_tools' must be a list of names", field="builtin_tools",
                             hint='e.g. ["browser", "python"]')
        builtin = tuple(builtin)
    effort = d.get("reasoning_effort")
    if effort is not None:
        if not isinstance(effort, str) or effort.lower() not in ("low", "medium", "high"):
            raise InputError(f"reasoning_effort {effort!r} is not low, medium or high", field="reasoning_effort")
        effort = effort.lower()
    return Options(
        tools=tools,
        builtin_tools=builtin,
        reasoning_effort=effort,
        date=d.get("date", d.get("conversation_start_date")),
        knowledge_cutoff=d.get("knowledge_cutoff"),
        model_identity=d.get("model_identity"),
        instructions=d.get("instructions"),
        extra=extra,
    )


def _tool_def(t: Any, i: int) -> dict[str, Any]:
    """OpenAI-wrapped ``{"type":"function","function":{...}}`` or bare ``{name, description, parameters}``."""
    if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping):
        t = t["function"]
    if not isinstance(t, Mapping) or not isinstance(t.get("name"), str) or not t["name"]:
        raise InputError(f"tool {i} has no name", field=f"tools[{i}]",
                         hint="a tool is {'name': ..., 'description': ..., 'parameters': {...JSON Schema}}")
    return {"name": t["name"], "description": t.get("description") or "", "parameters": t.get("parameters")}


def _text(value: Any, index: int, field: str) -> tuple[str, tuple[str, ...] | None, Any]:
    """Content as (joined text, text items if several, structured content)."""
    if value is None:
        return "", None, None
    if isinstance(value, str):
        return value, None, None
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, Sequence):
        texts: list[str] = []
        structured = None
        for k, item in enumerate(value):
            if isinstance(item, str):
                texts.append(item)
                continue
            if not isinstance(item, Mapping):
                raise InputError(f"content item {k} is a {type(item).__name__}", index=index, field=f"{field}[{k}]")
            kind = item.get("type", "text")
            if kind in ("text", "input_text", "output_text") and isinstance(item.get("text"), str):
                texts.append(item["text"])
            elif kind in ("system_content", "developer_content"):
                from .formats.harmony_sections import DeveloperContent, SystemContent

                cls = SystemContent if kind == "system_content" else DeveloperContent
                structured = cls.from_dict({k2: v for k2, v in item.items() if k2 != "type"})
            else:
                raise InputError(f"content item {k} has unsupported type {kind!r}", index=index,
                                 field=f"{field}[{k}]", hint="text items only ({'type': 'text', 'text': ...})")
        return "".join(texts), (tuple(texts) if len(texts) > 1 else None), structured
    raise InputError(f"content must be a string or a list of items, got {type(value).__name__}",
                     index=index, field=field, hint="convert it to text, e.g. json.dumps(...) for structured data")


def _opt_str(raw: Mapping[str, Any], key: str, index: int) -> str | None:
    val = raw.get(key)
    if val is None or isinstance(val, str):
        return val
    raise InputError(f"{key} must be a string, got {type(val).__name__}", index=index, field=key)


_FAST_KEYS = frozenset({"role", "content", "channel", "recipient", "name"})


def _message(raw: Mapping[str, Any], index: int, call_names: dict[str, str]) -> list[Message]:
    # Fast path (most training data): a plain dict of strings with canonical keys, not a tool reply.
    if type(raw) is dict and raw.keys() <= _FAST_KEYS:
        for v in raw.values():
            if type(v) is not str:
                break
        else:
            role = raw.get("role")
            if role and role != "tool":
                # Same values as the general path below: empty channel / recipient mean none.
                return [new_message(role, raw.get("content", ""), raw.get("channel") or None,
                                    raw.get("recipient") or None, None, raw.get("name"))]
    role = raw.get("role")
    if not isinstance(role, str) or not role:
        raise InputError("message has no role", index=index, field="role",
                         hint="every message needs 'role': 'system' | 'developer' | 'user' | 'assistant' | 'tool'")
    unknown = set(raw) - _CANONICAL - _OPENAI - _IGNORED
    unknown = {k for k in unknown if raw[k] is not None}
    if unknown:
        raise InputError(f"unknown message keys {sorted(unknown)}", index=index, field=sorted(unknown)[0],
                         hint="known keys: " + ", ".join(sorted(_CANONICAL | _OPENAI)))
    text, parts, structured = _text(raw.get("content"), index, "content")
    recipient = _opt_str(raw, "recipient", index) or _opt_str(raw, "to", index)
    content_type = _opt_str(raw, "content_type", index)
    constrain = _opt_str(raw, "constrain", index)
    if content_type is not None and content_type.startswith(CONSTRAIN_PREFIX):
        # openai-harmony spelling: the <|constrain|> token + its type in one string.
        rest = content_type[len(CONSTRAIN_PREFIX):]
        if constrain is not None and constrain != rest:
            raise InputError(f"content_type {content_type!r} disagrees with constrain {constrain!r}",
                             index=index, field="constrain")
        content_type, constrain = None, rest
    train = raw.get("train")
    if train is not None and not isinstance(train, bool):
        raise InputError("train must be true or false", index=index, field="train")
    call_id = _opt_str(raw, "call_id", index) or _opt_str(raw, "tool_call_id", index)
    name = _opt_str(raw, "name", index)
    if role == "tool" and name is None and call_id in call_names:
        name = call_names[call_id]
    if role == "tool" and name is not None and "." not in name and "tool_call_id" in raw:
        name = "functions." + name  # OpenAI tool messages name the bare function
    if role == "tool":
        recipient = recipient or "assistant"
        channel_default = "commentary"
    else:
        channel_default = None
    base = Message(
        role=role, content=text, channel=_opt_str(raw, "channel", index) or channel_default,
        recipient=recipient, call_id=call_id, name=name, intent=_opt_str(raw, "intent", index),
        content_type=content_type, constrain=constrain, parts=parts, structured=structured, train=train,
    )
    thinking = raw.get("reasoning_content", raw.get("thinking", raw.get("reasoning")))
    calls = raw.get("tool_calls") or []
    single = raw.get("tool_call")
    if single is not None and not isinstance(single, Mapping):
        raise InputError(f"tool_call must be an object, got {type(single).__name__}", index=index, field="tool_call",
                         hint='{"recipient": "functions.f", "arguments": "{...}", "id": ..., "content_type": ...}')
    if single:
        # §10: a faithful projection; no content_type means no <|constrain|> (nothing invented).
        calls = [*calls, {"id": single.get("id"), "recipient": single.get("recipient"),
                          "content_type": single.get("content_type") or "", "arguments": single.get("arguments")}]
    if role != "assistant" or (thinking is None and not calls):
        return [base]
    out: list[Message] = []
    if thinking:
        if not isinstance(thinking, str):
            raise InputError("thinking / reasoning_content must be a string", index=index, field="thinking")
        out.append(Message(role="assistant", content=thinking, channel="analysis", train=train))
    # A §10 object with only ``thinking`` is one analysis message; OpenAI shapes keep their
    # (possibly empty) answer message.
    if text or parts or not (calls or ("thinking" in raw and raw.get("content") is None)):
        channel = base.channel or ("commentary" if calls else "final")
        intent = base.intent or ("preamble" if calls and channel == "commentary" else None)
        out.append(base.with_(channel=channel, intent=intent))
    for k, call in enumerate(calls):
        out.append(_call(call, index, k, train, call_names))
    return out


def _call(call: Any, index: int, k: int, train: bool | None, call_names: dict[str, str]) -> Message:
    field = f"tool_calls[{k}]"
    if not isinstance(call, Mapping):
        raise InputError("a tool call must be a dict", index=index, field=field)
    fn = call.get("function") if isinstance(call.get("function"), Mapping) else call
    recipient = call.get("recipient")
    if recipient is None:
        fname = fn.get("name")
        if not isinstance(fname, str) or not fname:
            raise InputError("tool call has no function name", index=index, field=f"{field}.function.name",
                             code="E-CALL-SCHEMA")
        recipient = fname if "." in fname else "functions." + fname
    args = fn.get("arguments", "")
    if args is None:
        args = ""
    if not isinstance(args, str):
        # Dict arguments are serialised once (never double-encoded, unlike the gpt-oss HF template).
        args = json.dumps(args, ensure_ascii=False)
    ctype = call.get("content_type")
    constrain: str | None = "json"  # OpenAI tool_calls carry JSON arguments
    if isinstance(ctype, str):
        constrain = (ctype[len(CONSTRAIN_PREFIX):] if ctype.startswith(CONSTRAIN_PREFIX) else ctype) or None
    call_id = call.get("id")
    if call_id is not None:
        call_names[call_id] = recipient
    return Message(role="assistant", content=args, channel="commentary", recipient=recipient,
                   call_id=call_id, constrain=constrain, train=train)
