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

Two readings (``Conversation.chat``):
- **native**: some message is already in a format's own terms (a ``channel``,
  ``recipient``/``to``, ``constrain``, ``content_type``, ``call_id`` or ``intent``; Harmony
  system/developer content; openai-harmony's ``to_json()`` shape: typed content items on a
  non-user message, or on a user message with ``"name": null``; a tool author named
  ``functions.x`` without ``tool_call_id``). Rendered exactly as written.  Null values count
  as absent (Arrow / ``datasets`` rows carry every key of the schema, mostly null).
- **chat** (OpenAI / HF chat data): everything else. Mapped the way the models were trained
  on it (the official gpt-oss template's mapping): an assistant ``content`` is the ``final``
  channel, ``reasoning_content``/``thinking`` its ``analysis``, each tool call a
  ``commentary`` message to ``functions.NAME`` with ``<|constrain|>json``, a tool result
  ``functions.NAME`` to ``assistant`` on ``commentary``.  The format's ``ChatStyle`` says the
  rest (where content next to tool calls goes; Harmony also always writes the model's own
  system header, see ``HarmonyFormat.normalize``).

Every message remembers where it came from (``Message.source``: the input position, and
``Message.source_field``: the field its content came from), so errors raised later name
the user's message and field (``relocate``), not an index into the expanded list.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import InputError, OcmlError
from .messages import Conversation, Message, Options, new_message


CONSTRAIN_PREFIX = "<|constrain|>"
_CANONICAL = {"role", "content", "channel", "recipient", "to", "call_id", "name", "intent", "content_type",
              "constrain", "train", "parts"}
_OPENAI = {"tool_calls", "tool_call_id", "reasoning_content", "thinking", "reasoning", "tool_call", "weight"}
# Keys chat APIs carry that say nothing about rendering.
_IGNORED = {"refusal", "annotations", "audio", "function_call", "id", "type", "metadata",
            "created_at", "timestamp", "prefix"}
_OPTION_KEYS = {"tools", "builtin_tools", "reasoning_effort", "date", "conversation_start_date",
                "knowledge_cutoff", "model_identity", "instructions"}
# Conversation-level keys that say nothing about rendering: record metadata and the request
# parameters of a Chat Completions call.  Any other unknown key is an error (a typo such as
# ``reasoning_efort`` must not silently render the default).
_IGNORED_OPTIONS = {"id", "metadata", "source", "dataset", "split", "uuid", "created_at", "timestamp", "model",
                    "tool_choice", "parallel_tool_calls", "temperature", "top_p", "max_tokens",
                    "max_completion_tokens", "stream", "n", "stop", "seed", "user", "response_format"}
_KNOWN_KEYS = _CANONICAL | _OPENAI | _IGNORED
_TEXT_ITEMS = ("text", "input_text", "output_text")
# Any of these (non-null) on a message means it is written in a format's own terms.
_NATIVE_KEYS = frozenset({"channel", "recipient", "to", "constrain", "content_type", "call_id", "intent", "parts"})
_ROLE_KEYS = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ChatStyle:
    """How a format reads OpenAI / HF chat dicts (data a format declares; the adapter applies it)."""

    #: channel of an assistant's ``content`` (its answer)
    answer_channel: str = "final"
    #: where assistant ``content`` next to ``tool_calls`` goes when there is no ``thinking``:
    #: ``"preamble"`` = ``commentary`` with ``intent=preamble`` (OpenChatML 2.2 §9);
    #: ``"analysis"`` = the official gpt-oss template's choice
    content_with_calls: Literal["preamble", "analysis"] = "preamble"


DEFAULT_STYLE = ChatStyle()


Shape = Literal["auto", "chat", "native"]
SHAPES: tuple[str, ...] = ("auto", "chat", "native")


def to_conversation(obj: Any, style: ChatStyle = DEFAULT_STYLE, shape: Shape = "auto") -> Conversation:
    """Read ``obj`` as a conversation.  ``shape``: ``"auto"`` decides per conversation (see the
    module docstring); ``"chat"`` / ``"native"`` force a reading — use ``"native"`` when you
    render prefixes of conversations written in a format's own terms (a prefix such as
    ``[system, user]`` carries no sign of it and would otherwise read as chat data)."""
    if isinstance(obj, Conversation):
        return obj
    if isinstance(obj, (str, bytes, bytearray)):
        try:
            if not isinstance(obj, str):
                obj = bytes(obj).decode("utf-8")  # JSON text is UTF-8 (RFC 8259); no guessing
            obj = json.loads(obj)
        except UnicodeDecodeError as exc:
            raise InputError(f"conversation bytes are not UTF-8 ({exc.reason} at byte {exc.start})",
                             code="E-INPUT-ENCODING", field="conversation",
                             hint="decode the file with its real encoding, or re-save it as UTF-8") from None
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
    raws: list[Any] = []
    native = False
    for index, raw in enumerate(obj):
        if type(raw) is not dict:  # the common case (plain dicts) skips the ABC checks
            if isinstance(raw, Message):
                native = True
                raws.append(raw)
                continue
            if hasattr(raw, "to_dict") and not isinstance(raw, Mapping):
                raw = raw.to_dict()
                native = True  # an openai-harmony Message object
            if not isinstance(raw, Mapping):
                raise InputError(f"a message must be a dict, got {type(raw).__name__}", index=index,
                                 hint="a message is {'role': ..., 'content': ...}")
        native = native or _is_native(raw)
        raws.append(raw)
    out: list[Message] = []
    calls = _Calls()
    chat = shape == "chat" or (shape == "auto" and not native)
    for index, raw in enumerate(raws):
        if isinstance(raw, Message):
            out.append(raw if raw.source is not None else raw.with_(source=index))
        else:
            out.extend(_message(raw, index, calls, style if chat else None))
    return Conversation(tuple(out), options, chat=chat)


def _is_native(raw: Mapping[str, Any]) -> bool:
    """Is this message written in a format's own terms (see the module docstring)?"""
    for k in _NATIVE_KEYS.intersection(raw):
        if raw[k] is not None:
            return True
    content = raw.get("content")
    if isinstance(content, list) and content and (raw.get("role") != "user" or ("name" in raw and raw["name"] is None)):
        # openai-harmony's to_json(): typed content items, and "name": null on every message.  A
        # null name alone says nothing (Arrow / datasets rows fill every missing key with null).
        return True
    if raw.get("role") == "tool" and raw.get("tool_call_id") is None and "." in str(raw.get("name") or ""):
        return True  # a Harmony tool author (functions.x) rather than an OpenAI tool reply
    return False


class _Calls:
    """Tool calls seen so far: names a tool reply by its ``tool_call_id``, or, without one,
    by the order of the latest assistant message's calls (the gpt-oss template's rule)."""

    __slots__ = ("by_id", "pending")

    def __init__(self) -> None:
        self.by_id: dict[str, str] = {}
        self.pending: list[str] = []

    def name_for(self, call_id: str | None) -> str | None:
        if call_id is not None and call_id in self.by_id:
            name = self.by_id[call_id]
            if name in self.pending:
                self.pending.remove(name)
            return name
        return self.pending.pop(0) if self.pending else None


def relocate(exc: OcmlError, messages: Sequence[Message]) -> OcmlError:
    """Point an error raised at ``messages[exc.index]`` at the user's own input: the input
    message it came from and the input field (``tool_calls[0].function.arguments``, not
    ``content``).  The expanded index stays available as ``exc.expanded_index``."""
    i = exc.index
    if i is None or getattr(exc, "relocated", False) or not 0 <= i < len(messages):
        return exc
    m = messages[i]
    exc.expanded_index = i  # type: ignore[attr-defined]
    exc.relocated = True  # type: ignore[attr-defined]
    exc.index = m.source
    path = m.source_field
    if path is not None and path.startswith("tool_calls["):
        call = path[:path.index("]") + 1]
        exc.field = {"content": path, "recipient": f"{call}.function.name", "call_id": f"{call}.id",
                     "constrain": f"{call}.content_type"}.get(exc.field or "", exc.field)
    elif path is not None and exc.field == "content":
        exc.field = path
    if m.source is None:
        exc.message += " (in the message ocml built from the conversation options)"
    exc.args = (exc._render(),)
    return exc


def _options(d: Mapping[str, Any]) -> Options:
    unknown = sorted(k for k in d if k != "messages" and k not in _OPTION_KEYS and k not in _IGNORED_OPTIONS)
    if unknown:
        raise InputError(f"unknown conversation option {unknown[0]!r}", code="E-INPUT-OPTION", field=unknown[0],
                         hint=suggest(unknown[0], [*_OPTION_KEYS, "messages"])
                         + "options: " + ", ".join(sorted(_OPTION_KEYS)))
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
    )


def suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    return f"did you mean {close[0]!r}? " if close else ""


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
    if type(value) is list and len(value) == 1 and type(value[0]) is dict:
        # openai-harmony's to_json() shape: one text item (same result as the loop below)
        item = value[0]
        if item.get("type", "text") in _TEXT_ITEMS and type(item.get("text")) is str:
            return item["text"], None, None
    if isinstance(value, Mapping):
        if "type" not in value and "text" not in value:
            raise InputError(f"content is a dict with keys {sorted(value)[:5]}, not text", index=index, field=field,
                             hint="content must be a string or a list of {'type': 'text', 'text': ...} items; "
                                  "json.dumps(...) structured data first")
        value = [value]
    if isinstance(value, Sequence):
        texts: list[str] = []
        structured = None
        for k, item in enumerate(value):
            if isinstance(item, str):
                texts.append(item)
                continue
            if not isinstance(item, Mapping):
                raise InputError(f"content item {k} is a {type(item).__name__}", index=index, field=f"{field}[{k}]",
                                 hint="content items are strings or {'type': 'text', 'text': ...}")
            kind = item.get("type", "text")
            if kind in _TEXT_ITEMS:
                if not isinstance(item.get("text"), str):
                    raise InputError(f"content item {k} of type {kind!r} has no 'text' string", index=index,
                                     field=f"{field}[{k}].text", hint="{'type': 'text', 'text': '...'}")
                texts.append(item["text"])
            elif kind in ("system_content", "developer_content"):
                from .formats.harmony_sections import interned_content

                structured = interned_content(kind, item)  # read once per content (encoder.sections)
            else:
                raise InputError(f"content item {k} has unsupported type {kind!r}", index=index,
                                 field=f"{field}[{k}].type",
                                 hint="text items only ({'type': 'text', 'text': ...}); images and audio cannot be rendered")
        return "".join(texts), (tuple(texts) if len(texts) > 1 else None), structured
    raise InputError(f"content must be a string or a list of items, got {type(value).__name__}",
                     index=index, field=field, hint="convert it to text, e.g. json.dumps(...) for structured data")


def _opt_str(raw: Mapping[str, Any], key: str, index: int) -> str | None:
    val = raw.get(key)
    if val is None or isinstance(val, str):
        return val
    raise InputError(f"{key} must be a string, got {type(val).__name__}", index=index, field=key)


_FAST_KEYS = frozenset({"role", "content", "channel", "recipient", "name"})


_HARMONY_KEYS = frozenset({"role", "name", "content", "channel", "recipient", "content_type"})


def _harmony_message(raw: dict[str, Any], index: int, style: ChatStyle | None) -> Message | None:
    """Fast path for openai-harmony's ``to_json()`` messages (every header key, null when unset;
    content one text item): exactly the general path's message, or None to take that path."""
    role = raw.get("role")
    if type(role) is not str or not role or (role == "tool" and style is not None):
        return None  # chat tool replies are rewritten by the general path
    content = raw.get("content")
    if type(content) is not str:
        if not (type(content) is list and len(content) == 1 and type(content[0]) is dict
                and content[0].get("type", "text") in _TEXT_ITEMS and type(content[0].get("text")) is str):
            return None
        content = content[0]["text"]
    name, channel, recipient, ctype = raw.get("name"), raw.get("channel"), raw.get("recipient"), raw.get("content_type")
    for v in (name, channel, recipient, ctype):
        if v is not None and type(v) is not str:
            return None
    constrain = None
    if ctype is not None and ctype.startswith(CONSTRAIN_PREFIX):
        ctype, constrain = None, ctype[len(CONSTRAIN_PREFIX):]
    channel = channel or None
    if channel is None and style is not None and role == "assistant":
        channel = style.answer_channel
    return new_message(role, content, channel, recipient or None, None, name, None, ctype, constrain, None, None,
                       None, index, "content")


def _message(raw: Mapping[str, Any], index: int, calls: _Calls, style: ChatStyle | None) -> list[Message]:
    """One input message -> one or more messages; ``style`` is None for native conversations."""
    # Fast path (most training data): a plain dict of strings with canonical keys, not a tool reply.
    if type(raw) is dict and raw.keys() <= _FAST_KEYS:
        for v in raw.values():
            if type(v) is not str:
                break
        else:
            role = raw.get("role")
            if role and role != "tool":
                channel = raw.get("channel") or None  # empty channel / recipient mean none, as below
                if channel is None and style is not None and role == "assistant":
                    channel = style.answer_channel
                return [new_message(role, raw.get("content", ""), channel, raw.get("recipient") or None, None,
                                    raw.get("name"), None, None, None, None, None, None, index, "content")]
    if type(raw) is dict and raw.keys() <= _HARMONY_KEYS:
        fast = _harmony_message(raw, index, style)
        if fast is not None:
            return [fast]
    role = raw.get("role")
    if not isinstance(role, str) or not role:
        raise InputError("message has no role", index=index, field="role",
                         hint="every message needs 'role': 'system' | 'developer' | 'user' | 'assistant' | 'tool'")
    unknown = raw.keys() - _KNOWN_KEYS
    unknown = {k for k in unknown if raw[k] is not None}
    if unknown:
        first = sorted(unknown)[0]
        raise InputError(f"unknown message keys {sorted(unknown)}", index=index, field=first,
                         hint=suggest(first, sorted(_CANONICAL | _OPENAI))
                         + "known keys: " + ", ".join(sorted(_CANONICAL | _OPENAI)))
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
    train = _train(raw, index)
    tool_call_id = _opt_str(raw, "tool_call_id", index)
    call_id = _opt_str(raw, "call_id", index) or tool_call_id
    name = _opt_str(raw, "name", index)
    channel = _opt_str(raw, "channel", index) or None
    if role == "tool" and (style is not None or tool_call_id is not None):
        # An OpenAI / HF tool result: Harmony's ``functions.NAME to=assistant`` on commentary.
        if name is None:
            name = calls.name_for(call_id)
        elif call_id is not None:
            calls.name_for(call_id)  # consume the call it answers
        if name is not None and "." not in name:
            name = "functions." + name  # OpenAI tool messages name the bare function
        recipient = recipient or "assistant"
        channel = channel or "commentary"
    base = new_message(role, text, channel, recipient, call_id, name, _opt_str(raw, "intent", index), content_type,
                       constrain, parts, structured, train, index, "content")
    thinking_key = next((k for k in ("reasoning_content", "thinking", "reasoning") if raw.get(k) is not None), None)
    thinking = raw[thinking_key] if thinking_key else None
    tool_calls = raw.get("tool_calls") or []
    if type(tool_calls) is not list and (not isinstance(tool_calls, Sequence) or isinstance(tool_calls, (str, bytes))):
        raise InputError(f"tool_calls must be a list, got {type(tool_calls).__name__}", index=index,
                         field="tool_calls", hint='[{"id": ..., "type": "function", "function": {"name": ..., "arguments": "{...}"}}]')
    single = raw.get("tool_call")
    if single is not None and not isinstance(single, Mapping):
        raise InputError(f"tool_call must be an object, got {type(single).__name__}", index=index, field="tool_call",
                         hint='{"recipient": "functions.f", "arguments": "{...}", "id": ..., "content_type": ...}')
    call_msgs = [_call(c, index, f"tool_calls[{k}]", train, calls) for k, c in enumerate(tool_calls)]
    if single:
        # §10: a faithful projection; no content_type means no <|constrain|> (nothing invented).
        call_msgs.append(_call({"id": single.get("id"), "recipient": single.get("recipient"),
                                "content_type": single.get("content_type") or "",
                                "arguments": single.get("arguments")}, index, "tool_call", train, calls))
    if role == "assistant" and call_msgs:
        calls.pending = [m.recipient or "" for m in call_msgs]
    if role != "assistant":
        if thinking is not None or call_msgs:
            key = thinking_key or ("tool_calls" if tool_calls else "tool_call")
            raise InputError(f"{key} on a {role} message", index=index, field=key,
                             hint="only assistant messages carry reasoning and tool calls")
        return [base]
    if thinking is None and not call_msgs:
        if base.channel is None and style is not None:
            base = base.with_(channel=style.answer_channel)
        return [base]
    out: list[Message] = []
    if thinking:
        if not isinstance(thinking, str):
            raise InputError(f"{thinking_key} must be a string", index=index, field=thinking_key)
        out.append(new_message("assistant", thinking, "analysis", None, None, None, None, None, None, None, None,
                               train, index, thinking_key))
    # Reasoning with no content (null or absent) is one analysis message (a §10 object with only
    # ``thinking``; transformers copies ``reasoning_content`` onto ``thinking`` and drops nulls,
    # so all three keys read alike); ``content: ""`` keeps its empty answer.
    if text or parts or not (call_msgs or raw.get("content") is None):
        if base.channel is not None:
            out.append(base)
        elif not call_msgs:
            out.append(base.with_(channel=(style or DEFAULT_STYLE).answer_channel))
        elif not thinking and (style or DEFAULT_STYLE).content_with_calls == "analysis":
            out.append(base.with_(channel="analysis"))
        else:
            out.append(base.with_(channel="commentary", intent=base.intent or "preamble"))
    out.extend(call_msgs)
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


def _call(call: Any, index: int, field: str, train: bool | None, calls: _Calls) -> Message:
    if not isinstance(call, Mapping):
        raise InputError(f"a tool call must be a dict, got {type(call).__name__}", index=index, field=field,
                         hint='{"id": ..., "type": "function", "function": {"name": ..., "arguments": "{...}"}}')
    fn = call.get("function") if isinstance(call.get("function"), Mapping) else call
    fprefix = f"{field}.function" if fn is not call else field
    recipient = call.get("recipient")
    if recipient is None:
        fname = fn.get("name")
        if not isinstance(fname, str) or not fname:
            raise InputError("tool call has no function name", index=index, field=f"{fprefix}.name",
                             code="E-CALL-SCHEMA", hint="every call needs function.name")
        recipient = fname if "." in fname else "functions." + fname
    elif not isinstance(recipient, str):
        raise InputError("recipient must be a string", index=index, field=f"{field}.recipient")
    args = fn.get("arguments", "")
    if args is None:
        args = ""
    if not isinstance(args, str):
        # Dict arguments are serialised once (never double-encoded, unlike the gpt-oss HF template).
        try:
            args = json.dumps(args, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"arguments cannot be written as JSON ({exc})", index=index,
                             field=f"{fprefix}.arguments") from None
    ctype = call.get("content_type")
    constrain: str | None = "json"  # OpenAI tool_calls carry JSON arguments
    if isinstance(ctype, str):
        constrain = (ctype[len(CONSTRAIN_PREFIX):] if ctype.startswith(CONSTRAIN_PREFIX) else ctype) or None
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise InputError(f"tool call id must be a string, got {type(call_id).__name__}", index=index,
                         field=f"{field}.id")
    if call_id is not None:
        calls.by_id[call_id] = recipient
    return new_message("assistant", args, "commentary", recipient, call_id, None, None, None, constrain, None, None,
                       train, index, f"{fprefix}.arguments")
