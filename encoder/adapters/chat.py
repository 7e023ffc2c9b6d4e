"""One input message dict -> one or more ``Message`` (the OpenAI / HF chat mapping).

Mapped the way the models were trained on it (the official gpt-oss template's mapping): an
assistant ``content`` is the ``final`` channel, ``reasoning_content`` / ``thinking`` /
``reasoning`` its ``analysis``, each tool call a ``commentary`` message to
``functions.NAME`` with ``<|constrain|>json``, a tool result ``functions.NAME`` to
``assistant`` on ``commentary``.  The format's ``ChatStyle`` says the rest.

Every key the OpenAI and HF chat formats define for a message is either rendered or a
typed error (never dropped while it carries text):

- ``content``: a string or a list of parts (``ocml.encoder.adapters.content``).  Missing or
  null content on a message with nothing else to say (no tool calls, refusal or
  reasoning) is ``E-INPUT-CONTENT-MISSING``; an explicit ``""`` is an empty message.
- ``refusal``: what the assistant said, rendered as its visible answer (``content`` and
  ``refusal`` both non-empty: ``E-INPUT-REFUSAL``).
- ``tool_calls`` (type ``function``; other types ``E-INPUT-TOOL-CALL``), the legacy
  ``function_call`` (one call without an id) and ``role: "function"`` replies.
- ``tool_call_id``: when the calls carry ids, a reply's id must match one (``E-CALL-SCHEMA``
  naming both); the order of the calls is the rule only when they have none.
- ``name``: rendered where the format has a place for it.
- ``audio`` (a reference to generated audio): ``E-INPUT-CONTENT-PART``.
- ``annotations``, ``id``, ``type``, ``metadata``, ``prefix``...: carry nothing a model reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..arguments import arguments_text, check_json
from ..errors import CallSchemaError, InputError, article
from ..messages import Message, new_message
from .content import Content, read_content
from .harmony_json import CONSTRAIN_PREFIX, KEYS as HARMONY_KEYS, harmony_message
from .style import DEFAULT_STYLE, ChatStyle
from .suggest import suggest
from .values import as_str

CANONICAL = frozenset({"role", "content", "channel", "recipient", "to", "call_id", "name", "intent", "content_type",
                       "constrain", "train", "parts"})
OPENAI = frozenset({"tool_calls", "tool_call_id", "reasoning_content", "thinking", "reasoning", "tool_call", "weight",
                    "refusal", "function_call", "audio"})
# Keys chat APIs carry that say nothing about rendering.
IGNORED = frozenset({"annotations", "id", "type", "metadata", "created_at", "timestamp", "prefix"})
KNOWN_KEYS = CANONICAL | OPENAI | IGNORED
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
_FAST_KEYS = frozenset({"role", "content", "channel", "recipient", "name"})
_CALL_HINT = '{"id": ..., "type": "function", "function": {"name": ..., "arguments": "{...}"}}'


class Calls:
    """Tool calls seen so far: names a tool reply by its ``tool_call_id`` (which must match a
    call when the calls carry ids), or, when they carry none, by the order of the latest
    assistant message's calls (the gpt-oss template's rule)."""

    __slots__ = ("by_id", "pending")

    def __init__(self) -> None:
        self.by_id: dict[str, str] = {}
        self.pending: list[str] = []

    def reply(self, call_id: str | None, name: str | None, index: int, field: str) -> str | None:
        """The recipient of the call a reply answers (None if nothing says)."""
        if call_id is not None and self.by_id:
            called = self.by_id.get(call_id)
            if called is None:
                known = ", ".join(repr(k) for k in list(self.by_id)[-5:])
                raise CallSchemaError(f"{field} {call_id!r} matches no earlier tool call (the calls' ids: {known})",
                                      index=index, field=field,
                                      hint="copy the id of the call this result answers; ids are matched, not "
                                           "guessed by order")
            if name is not None and _qualified(name) != called:
                raise CallSchemaError(f"tool message name {name!r} but {field} {call_id!r} is the call to "
                                      f"{called!r}", index=index, field="name",
                                      hint="the name of a tool result is the function its call called")
            if called in self.pending:
                self.pending.remove(called)
            return called
        if name is not None:
            q = _qualified(name)
            if q in self.pending:
                self.pending.remove(q)
            return q
        return self.pending.pop(0) if self.pending else None


def _qualified(name: str) -> str:
    return name if "." in name else "functions." + name  # OpenAI tool messages name the bare function


def _opt_str(raw: Mapping[str, Any], key: str, index: int) -> str | None:
    val = raw.get(key)
    if val is None or type(val) is str:
        return val
    if isinstance(val, str):
        return str.__str__(val)
    raise InputError(f"{key} must be a string, got {type(val).__name__}", index=index, field=key)


def message(raw: Mapping[str, Any], index: int, calls: Calls, style: ChatStyle | None) -> list[Message]:
    """One input message -> one or more messages; ``style`` is None for native conversations."""
    # Fast path (most training data): a plain dict of strings with canonical keys, not a tool reply.
    if type(raw) is dict and raw.keys() <= _FAST_KEYS and "content" in raw:
        for v in raw.values():
            if type(v) is not str:
                break
        else:
            role = raw["role"] if "role" in raw else None
            if role and role not in ("tool", "function"):
                channel = raw.get("channel") or None  # empty channel / recipient mean none, as below
                if channel is None and style is not None and role == "assistant":
                    channel = style.answer_channel
                return [new_message(role, raw["content"], channel, raw.get("recipient") or None, None,
                                    raw.get("name"), None, None, None, None, None, None, index, "content")]
    if type(raw) is dict and raw.keys() <= HARMONY_KEYS:
        fast = harmony_message(raw, index, style)
        if fast is not None:
            return [fast]
    role = as_str(raw.get("role"))
    if not isinstance(role, str) or not role:
        raise InputError("message has no role", index=index, field="role",
                         hint="every message needs 'role': 'system' | 'developer' | 'user' | 'assistant' | 'tool'")
    legacy_reply = role == "function"  # the pre-tools Chat Completions reply: {"role": "function", "name": f}
    if legacy_reply:
        role = "tool"
    unknown = {k for k in raw.keys() - KNOWN_KEYS if raw[k] is not None} if not raw.keys() <= KNOWN_KEYS else None
    if unknown:
        first = sorted(unknown)[0]
        raise InputError(f"unknown message keys {sorted(unknown)}", index=index, field=first,
                         hint=suggest(first, sorted(CANONICAL | OPENAI))
                         + "known keys: " + ", ".join(sorted(CANONICAL | OPENAI)))
    if raw.get("audio") is not None:
        raise InputError("the assistant's audio cannot be rendered (ocml renders text)", code="E-INPUT-CONTENT-PART",
                         index=index, field="audio",
                         hint="put the audio's transcript in content and drop 'audio'")
    given = raw.get("content")
    content = read_content(given, index, "content", role, style is None) if given is not None else Content("")
    text, source_field = content.text, "content"
    refusal = _opt_str(raw, "refusal", index) if "refusal" in raw else None
    if refusal:
        if role != "assistant":
            raise InputError(f"refusal on {article(role)} message", index=index, field="refusal",
                             hint="only the assistant refuses")
        if text:
            raise InputError("content and refusal are both given: which one did the model say?",
                             code="E-INPUT-REFUSAL", index=index, field="refusal",
                             hint="keep one: the refusal is rendered as the assistant's visible answer")
        text, source_field = refusal, "refusal"
    recipient = (_opt_str(raw, "recipient", index) if "recipient" in raw else None) or (
        _opt_str(raw, "to", index) if "to" in raw else None)
    content_type = _opt_str(raw, "content_type", index) if "content_type" in raw else None
    constrain = _opt_str(raw, "constrain", index) if "constrain" in raw else None
    if content_type is not None and content_type.startswith(CONSTRAIN_PREFIX):
        # openai-harmony spelling: the <|constrain|> token + its type in one string.
        rest = content_type[len(CONSTRAIN_PREFIX):]
        if constrain is not None and constrain != rest:
            raise InputError(f"content_type {content_type!r} disagrees with constrain {constrain!r}",
                             index=index, field="constrain")
        content_type, constrain = None, rest
    train = _train(raw, index)
    tool_call_id = _opt_str(raw, "tool_call_id", index) if "tool_call_id" in raw else None
    if tool_call_id is not None and role != "tool":
        raise InputError(f"tool_call_id on {article(role)} message", index=index, field="tool_call_id",
                         hint="tool_call_id belongs on the tool message that answers a call")
    call_id = (_opt_str(raw, "call_id", index) if "call_id" in raw else None) or tool_call_id
    name = _opt_str(raw, "name", index) if "name" in raw else None
    channel = (_opt_str(raw, "channel", index) if "channel" in raw else None) or None
    if role == "tool" and (style is not None or tool_call_id is not None or legacy_reply):
        # An OpenAI / HF tool result: Harmony's ``functions.NAME to=assistant`` on commentary.
        name = calls.reply(call_id, name, index, "tool_call_id" if tool_call_id is not None else "call_id")
        recipient = recipient or "assistant"
        channel = channel or "commentary"
    elif role == "assistant" and recipient and call_id is not None:
        calls.by_id[call_id] = recipient  # a native call a later OpenAI-style reply names by its id
    thinking_key, thinking = _reasoning(raw, index)
    call_msgs = _calls(raw, index, train, calls)
    if given is None and not (text or call_msgs or thinking or content.structured is not None):
        raise InputError(f"the {role} message has no content" + (" (null)" if "content" in raw else ""),
                         code="E-INPUT-CONTENT-MISSING", index=index, field="content",
                         hint='give the text ("" for an intentionally empty message)'
                              + ("; an assistant message may instead carry tool_calls, refusal or reasoning"
                                 if role == "assistant" else ""))
    intent = _opt_str(raw, "intent", index) if "intent" in raw else None
    if role != "assistant":
        if thinking_key is not None or call_msgs:
            key = thinking_key or next(k for k in ("tool_calls", "tool_call", "function_call") if raw.get(k))
            raise InputError(f"{key} on {article(role)} message", index=index, field=key,
                             hint="only assistant messages carry reasoning and tool calls")
        return [new_message(role, text, channel, recipient, call_id, name, intent, content_type, constrain,
                            content.parts, content.structured, train, index, source_field)]
    if call_msgs:
        calls.pending = [m.recipient or "" for m in call_msgs]
    simple = thinking_key is None and not call_msgs
    # Reasoning with no content (null or absent) is one analysis message (a §10 object with only
    # ``thinking``; transformers copies ``reasoning_content`` onto ``thinking`` and drops nulls,
    # so all three keys read alike); ``content: ""`` keeps its empty answer.
    if not (simple or text or content.parts or not (call_msgs or given is None)):
        answer = None
    else:
        # The answer's channel (and a preamble's intent) is decided before it is built: one message, no copy.
        if channel is None:
            if simple:
                channel = style.answer_channel if style is not None else None
            elif not call_msgs:
                channel = (style or DEFAULT_STYLE).answer_channel
            elif not thinking and (style or DEFAULT_STYLE).content_with_calls == "analysis":
                channel = "analysis"
            else:
                channel, intent = "commentary", intent or "preamble"
        answer = new_message(role, text, channel, recipient, call_id, name, intent, content_type, constrain,
                             content.parts, content.structured, train, index, source_field)
        if simple:
            return [answer]
    out: list[Message] = []
    if thinking:
        out.append(new_message("assistant", thinking, "analysis", None, None, None, None, None, None, None, None,
                               train, index, thinking_key))
    if answer is not None:
        out.append(answer)
    out.extend(call_msgs)
    return out


def _reasoning(raw: Mapping[str, Any], index: int) -> tuple[str | None, str]:
    """The reasoning key and its text.  Several keys may hold the same text (transformers
    copies one onto the other); different texts are an error, not a silent choice."""
    if "reasoning_content" not in raw and "thinking" not in raw and "reasoning" not in raw:
        return None, ""  # the common case, without building a list
    found = [(k, raw[k]) for k in REASONING_KEYS if raw.get(k) is not None]
    if not found:
        return None, ""
    key, val = found[0]
    if not isinstance(val, str):
        raise InputError(f"{key} must be a string, got {type(val).__name__}", index=index, field=key)
    for other, v in found[1:]:
        if v != val:
            raise InputError(f"{key} and {other} hold different reasoning", index=index, field=other,
                             hint="keep one reasoning key (reasoning_content, thinking or reasoning)")
    return key, as_str(val)


def _calls(raw: Mapping[str, Any], index: int, train: bool | None, calls: Calls) -> list[Message]:
    tool_calls = raw.get("tool_calls")
    if tool_calls is None:
        if raw.get("function_call") is None and raw.get("tool_call") is None:
            return []  # the common case: no calls
        tool_calls = []
    elif type(tool_calls) is list:
        pass
    elif hasattr(tool_calls, "tolist") and not isinstance(tool_calls, Sequence):
        tool_calls = tool_calls.tolist()
    if type(tool_calls) is not list and (not isinstance(tool_calls, Sequence) or isinstance(tool_calls, (str, bytes))):
        raise InputError(f"tool_calls must be a list, got {type(tool_calls).__name__}", index=index,
                         field="tool_calls", hint="[" + _CALL_HINT + "]")
    out = [_call(c, index, f"tool_calls[{k}]", train, calls) for k, c in enumerate(tool_calls)]
    legacy = raw.get("function_call")
    if legacy is not None:
        if out:
            raise InputError("tool_calls and the legacy function_call are both given", index=index,
                             field="function_call", hint="give the calls once, in tool_calls")
        if not isinstance(legacy, Mapping):
            raise InputError(f"function_call must be an object, got {type(legacy).__name__}", index=index,
                             field="function_call", hint='{"name": ..., "arguments": "{...}"}')
        out.append(_call(legacy, index, "function_call", train, calls))
    single = raw.get("tool_call")
    if single is not None:
        if not isinstance(single, Mapping):
            raise InputError(f"tool_call must be an object, got {type(single).__name__}", index=index,
                             field="tool_call",
                             hint='{"recipient": "functions.f", "arguments": "{...}", "id": ..., "content_type": ...}')
        # §10: a faithful projection; no content_type means no <|constrain|> (nothing invented).
        out.append(_call({"id": single.get("id"), "recipient": single.get("recipient"),
                          "content_type": single.get("content_type") or "",
                          "arguments": single.get("arguments")}, index, "tool_call", train, calls))
    return out


def _train(raw: Mapping[str, Any], index: int) -> bool | None:
    """``train`` (ours) or ``weight`` (OpenAI fine-tuning data: 0 = do not learn from this message)."""
    train = raw.get("train")
    if train is not None and not isinstance(train, bool):
        raise InputError("train must be true or false", index=index, field="train")
    weight = raw.get("weight")
    if weight is None:
        return train
    if isinstance(weight, bool) or weight not in (0, 1):
        raise InputError(f"weight must be 0 or 1, got {weight!r}", index=index, field="weight",
                         hint="OpenAI fine-tuning data: weight 0 = not trained, 1 = trained")
    if train is not None and train != bool(weight):
        raise InputError("train and weight disagree", index=index, field="weight")
    return bool(weight)


def _call(call: Any, index: int, field: str, train: bool | None, calls: Calls) -> Message:
    if type(call) is not dict and not isinstance(call, Mapping):  # dicts skip the ABC check
        raise InputError(f"a tool call must be a dict, got {type(call).__name__}", index=index, field=field,
                         hint=_CALL_HINT)
    kind = call.get("type")
    if kind is not None and kind != "function" and field.startswith("tool_calls"):
        raise InputError(f"tool call of type {kind!r}: ocml renders function calls", code="E-INPUT-TOOL-CALL",
                         index=index, field=f"{field}.type", hint=_CALL_HINT)
    fn = call.get("function")
    if type(fn) is not dict and not isinstance(fn, Mapping):
        fn = call
    fprefix = f"{field}.function" if fn is not call else field
    recipient = call.get("recipient")
    if recipient is None:
        fname = as_str(fn.get("name"))
        if not isinstance(fname, str) or not fname:
            raise InputError("tool call has no function name", index=index, field=f"{fprefix}.name",
                             code="E-CALL-SCHEMA", hint="every call needs function.name")
        recipient = _qualified(fname)
    elif not isinstance(recipient, str):
        raise InputError("recipient must be a string", index=index, field=f"{field}.recipient")
    recipient = as_str(recipient)
    args = arguments_text(fn.get("arguments"), index=index, field=f"{fprefix}.arguments")
    ctype = call.get("content_type")
    constrain: str | None = "json"  # OpenAI tool_calls carry JSON arguments
    if isinstance(ctype, str):
        constrain = (ctype[len(CONSTRAIN_PREFIX):] if ctype.startswith(CONSTRAIN_PREFIX) else ctype) or None
    if constrain == "json" and field != "tool_call":  # a §10 projection is native: Format.validate_body checks it
        check_json(args, index=index, field=f"{fprefix}.arguments", what="tool-call arguments")  # encoder.arguments
    call_id = as_str(call.get("id"))
    if call_id is not None and not isinstance(call_id, str):
        raise InputError(f"tool call id must be a string, got {type(call_id).__name__}", index=index,
                         field=f"{field}.id")
    if call_id is not None:
        calls.by_id[call_id] = recipient
    return new_message("assistant", args, "commentary", recipient, call_id, None, None, None, constrain, None, None,
                       train, index, f"{fprefix}.arguments")
