"""The OpenChatML 2.2 §10 JSON interchange projection of parsed assistant messages.

§10 mirrors the text envelope for API transports::

    {"role": "assistant", "channel": "final", "content": "Visible reply",
     "tool_call": {"id": "abc123", "recipient": "functions.lookup_weather",
                   "content_type": "json", "arguments": "{\\"location\\":\\"SF\\"}"},
     "thinking": "Private reasoning (analysis)", "intent": "preamble"}

and its rule is "the plain-text envelope is canonical; JSON is a faithful projection; do
not invent states the text cannot represent".  So one object covers, in this order:

* ``thinking``: one ``analysis`` message (no recipient or other attributes);
* ``content`` (+ ``channel``, ``intent``): one message with no recipient on ``final``,
  ``commentary`` or no channel;
* ``tool_call``: one call (``to=`` on ``commentary``, ``<|call|>``): ``id`` from
  ``call_id=``, ``recipient`` from ``to=``, ``content_type`` from ``<|constrain|>``,
  ``arguments`` = the body; keys whose header attribute is absent are left out (no
  invented call ids, no assumed ``json``).

A turn with several calls (§8.2) or several analysis messages becomes several objects,
in order.  Messages the §10 fields cannot carry faithfully (a built-in call on
``analysis``, a call with a header ``content_type`` hint or a ``name``, ``<|constrain|>``
on a reply, any non-assistant message) and a call that did not end in ``<|call|>`` (when
``ends`` says so: a truncated call is not a call) are given as their canonical message
dict (``Message.to_dict()``) instead; ``strict=True`` raises ``UnrepresentableError``
for them.  An analysis message that is not followed by something it can be attached to
is given as ``{"role": "assistant", "channel": "analysis", "content": ...}``: its channel
says it is private (§11).

Objects are grouped only where ``ocml.encoder.adapters`` (which reads §10 objects) gives the
same messages back, exactly (a ``tool_call`` without ``content_type`` reads as a call
without ``<|constrain|>``).

    from ocml.encoder.interchange import parse_interchange, to_interchange
    parse_interchange(enc, completion_ids)              # ids (after <|start|>assistant) -> objects
    to_interchange(enc.parse(completion_ids, role="assistant"))   # messages -> objects
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ocml.vocab.errors import as_strings

from .errors import InputError, UnrepresentableError
from .messages import Conversation, Message

if TYPE_CHECKING:
    import numpy as np

    from .codec import Codec

#: the keys a §10 object has (anything else is a canonical message dict)
INTERCHANGE_KEYS = frozenset({"role", "channel", "content", "tool_call", "thinking", "intent"})


def _plain(m: Message) -> bool:
    """No attributes §10 has no field for."""
    return m.name is None and m.content_type is None and m.parts is None and m.structured is None


def _is_thinking(m: Message) -> bool:
    return (m.role == "assistant" and m.channel == "analysis" and m.recipient is None and m.call_id is None
            and m.intent is None and m.constrain is None and _plain(m))


def _is_content(m: Message) -> bool:
    return (m.role == "assistant" and m.channel in (None, "final", "commentary") and m.recipient is None
            and m.call_id is None and m.constrain is None and _plain(m))


def _is_call(m: Message, end: str | None) -> bool:
    return (m.role == "assistant" and m.channel == "commentary" and m.recipient is not None
            and m.recipient != "all" and m.intent is None and _plain(m) and end in (None, "call"))


def _tool_call(m: Message) -> dict[str, Any]:
    call: dict[str, Any] = {}
    if m.call_id is not None:
        call["id"] = m.call_id
    call["recipient"] = m.recipient
    if m.constrain is not None:
        call["content_type"] = m.constrain
    call["arguments"] = m.content
    return call


def _object(thinking: Message | None, content: Message | None, call: Message | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"role": "assistant"}
    channel = content.channel if content is not None else ("commentary" if call is not None else None)
    if channel is not None:
        obj["channel"] = channel
    if content is not None:
        obj["content"] = content.content
    if call is not None:
        obj["tool_call"] = _tool_call(call)
    if thinking is not None:
        obj["thinking"] = thinking.content
    if content is not None and content.intent is not None:
        obj["intent"] = content.intent
    train = (thinking or content or call).train  # type: ignore[union-attr]
    if train is not None:
        obj["train"] = train
    return obj


def _messages(messages: Any) -> Sequence[Message]:
    if isinstance(messages, Conversation):
        return messages.messages
    if isinstance(messages, Sequence) and all(isinstance(m, Message) for m in messages):
        return messages
    from .adapters import to_conversation

    return to_conversation(messages, shape="native").messages  # canonical / §10 dicts, as written


def to_interchange(messages: Any, *, ends: Iterable[str] | None = None, strict: bool = False) -> list[dict[str, Any]]:
    """Parsed messages (e.g. ``enc.parse(ids, role="assistant")``) -> §10 objects, in order.

    ``ends``: each message's end reason (``ParseResult.ends``: end | return | call |
    truncated); with it a message with a recipient is a ``tool_call`` only if it ended in
    ``<|call|>``.  ``strict``: raise ``UnrepresentableError`` instead of giving a message
    as its canonical dict.  Accepts a list of ``Message``, a ``Conversation``, or
    anything ``ocml.encoder.to_conversation`` reads.
    """
    msgs = _messages(messages)
    reasons: list[str | None] = list(as_strings(ends, "ends")) if ends is not None else [None] * len(msgs)
    if len(reasons) != len(msgs):
        raise InputError(f"{len(reasons)} end reasons for {len(msgs)} messages", field="ends",
                         hint="pass ParseResult.ends of the same parse, one reason per message")
    out: list[dict[str, Any]] = []
    i, n = 0, len(msgs)
    while i < n:
        m = msgs[i]
        thinking = content = call = None
        j = i
        # thinking? content? tool_call?  Each step only if the adapters read it back unchanged.
        if _is_thinking(m) and m.content and j + 1 < n and msgs[j + 1].train == m.train:
            nxt = msgs[j + 1]
            if (_is_content(nxt) and nxt.channel is not None) or _is_call(nxt, reasons[j + 1]):
                thinking = m
                j += 1
        if j < n and _is_content(msgs[j]) and (thinking is None or msgs[j].train == thinking.train):
            content = msgs[j]
            j += 1
        if j < n and _is_call(msgs[j], reasons[j]) and (j == i or msgs[j].train == msgs[i].train):
            if content is None or (content.content and (content.channel == "final" or (
                    content.channel == "commentary" and content.intent is not None))):
                call = msgs[j]
                j += 1
        if j == i:  # not projectable: the canonical dict
            d = m.to_dict()
            extra = sorted(set(d) - INTERCHANGE_KEYS)
            if strict and extra:
                raise UnrepresentableError(
                    f"the §10 interchange object has no field for this message's {', '.join(extra)}",
                    index=i, field=extra[0],
                    hint="use the canonical message dicts (Message.to_dict()) or the text envelope")
            out.append(d)
            i += 1
            continue
        out.append(_object(thinking, content, call))
        i = j
    return out


def interchange_object(messages: Any, *, ends: Iterable[str] | None = None) -> dict[str, Any]:
    """The one §10 object of a completion (``thinking`` / ``content`` / ``tool_call``).

    Raises ``UnrepresentableError`` when the messages need more than one object or one
    is not a §10 object (e.g. two analysis messages, a call after a final answer...).
    """
    objs = to_interchange(messages, ends=ends, strict=True)
    if len(objs) != 1:
        raise UnrepresentableError(
            f"these {len(_messages(messages))} messages project to {len(objs)} §10 objects, not one",
            field="messages", hint="use to_interchange() for a list of objects")
    return objs[0]


def parse_interchange(enc: Codec, ids: Sequence[int] | np.ndarray, *, role: str | None = "assistant",
                      strict: bool = False) -> list[dict[str, Any]]:
    """Completion ids -> §10 objects: ``enc``'s parser (``role`` = the prefilled
    ``<|start|>ROLE``, None when the ids start with ``<|start|>``) plus each message's end
    reason, so only calls that ended in ``<|call|>`` become ``tool_call``.  ``strict``:
    malformed ids raise ``ParseError`` and messages §10 cannot carry raise
    ``UnrepresentableError``."""
    from .parse import parse_ids

    res = parse_ids(enc, ids, strict=strict, role=role, detailed=True)
    return to_interchange(res.messages, ends=res.ends, strict=strict)


__all__ = ["INTERCHANGE_KEYS", "interchange_object", "parse_interchange", "to_interchange"]
