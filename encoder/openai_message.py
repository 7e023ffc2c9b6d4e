"""Completions -> OpenAI Chat Completions assistant messages (``Encoder.to_openai``).

Serving stacks answer ``/v1/chat/completions`` with one assistant message per choice::

    {"role": "assistant", "content": "...", "reasoning_content": "...",
     "tool_calls": [{"id": "call_...", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Paris\\"}"}}]}

plus a ``finish_reason``.  ``project`` builds both from parsed messages, for every format
(it reads only ``Message`` fields and end reasons, never a format's tokens):

* ``reasoning_content``: ``analysis`` messages, and other messages users must not see
  (``commentary`` with an ``intent`` other than ``preamble``, unknown channels); several
  are joined with ``"\\n"`` (as vLLM's gpt-oss path joins them).  Absent when there are none.
* ``content``: ``final`` (or channel-less) messages and ``commentary`` without a
  recipient (a preamble: ``intent=preamble``, or no intent where the format has none,
  e.g. Harmony); several are joined with ``"\\n"``.  None when there are none.
* ``tool_calls``: each assistant message with a recipient (``to=``) other than ``all``,
  in order.  ``function.name`` is the recipient without the ``functions.`` namespace
  (a built-in tool keeps its full recipient, e.g. ``browser.search``);
  ``function.arguments`` is the body verbatim (not re-serialised: the ids round trip).
  ``id``: the message's ``call_id`` where the format carries one (OpenChatML 2.2), else
  ``call_`` + 24 hex digits of a SHA-256 over ``call_id_seed``, the completion's
  messages before the call and the call's header (canonical JSON; not its arguments, so a
  stream knows the id as soon as the header is complete: ``ocml.encoder.openai_chunks``).  So
  ids are deterministic (the same completion gives the same ids, in ``enc.to_openai``, the
  stream decoder and the chunker), a call's id never depends on what follows it, and
  completions that differ before the call get different ids.  vLLM's gpt-oss path draws random ids (``chatcmpl-tool-<uuid>``) instead; pass the
  request id as ``call_id_seed`` to keep ids unique across requests whose completions
  are identical.  Absent when there are no calls.
* ``finish_reason``: ``tool_calls`` when the completion stopped on the format's tool-call
  stop token (``<|call|>``) right after a tool call, or on another stop token that ended a
  turn whose last part is a call (ChatML: ``...</tool_call><|im_end|>``); ``stop`` when it stopped on a stop
  token (``<|return|>``...), a stop string or a stop id; ``length`` when it did not stop
  (no stop token: max tokens, truncated mid-message); ``stop`` when the stream was
  cancelled on purpose (OpenAI has no value for it: vLLM's ``abort`` fails the openai client's
  types; the decoder's ``status`` is ``cancelled``); None while a stream is still running.
  Only OpenAI's values (``FINISH_REASONS``, a subset of the client's ``finish_reason`` type).

A turn of blocks (Apertus: one message whose ``structured`` holds thoughts, response, tool
calls and tool outputs) counts as its parts (``expand``, ``Turn.openai_parts``): thoughts are
``analysis`` messages (``reasoning_content``), response text ``final`` ones (``content``), each
call of a ``<|tools_prefix|>[{"NAME": ARGS}, ...]<|tools_suffix|>`` list a call to
``functions.NAME`` whose ``arguments`` is ARGS verbatim (vLLM's Apertus parser re-serialises
it; verbatim keeps the round trip), tool outputs a ``tool`` message (the tools' words, not
the model's: reported below).  Empty text blocks give nothing; the turn's end reason is its
last part's, so a turn that stopped on ``<|tools_suffix|>`` after a call gives ``tool_calls``.

A ChatML assistant frame is read as a turn too (``Format.turn_of``, ``read_turns``;
``ocml.encoder.formats.chatml.turns``): a leading ``<think>`` block (``reasoning="think"``) is
``reasoning_content``, each ``<tool_call>{"name": N, "arguments": A}</tool_call>`` a call
(``arguments`` the object's text verbatim when laid out as ocml renders it), the rest
``content``; a call that cannot be read stays in ``content`` and is reported
(``E-CALL-SCHEMA``, from the parse).  An empty frame gives ``content`` None.

Messages of another role in a completion (the model opened a ``user`` turn) have no
place in the message: each is reported in ``errors`` (``E-UNREPRESENTABLE``, its content
in ``Error.text``), or raises ``UnrepresentableError`` with ``strict=True``.

Round trip: for a completion of the usual shapes (``[analysis] final <|return|>``,
``[analysis] [preamble] call <|call|>``) rendered in the format's own header layout,
``enc.render([*prompt, choice.message], mode="train")`` gives the completion's ids back
after the prompt (Apertus: ``[thoughts] [response] [calls]``, registered or fallback).  Not
round-tripping, by construction: several analysis / answer messages (joined), a call
without ``<|constrain|>json`` (OpenAI calls read back as JSON), built-in tool calls, a
Harmony preamble without analysis (the gpt-oss template reads
content next to tool calls as analysis), headers in another order than the renderer's
(e.g. the model's ``<|channel|>commentary to=functions.f``; see
``HarmonyFormat(recipient_after_channel=True)``), truncated completions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import CallSchemaError, InputTypeError, UnrepresentableError
from .events import Error
from .messages import Message

if TYPE_CHECKING:
    import numpy as np

    from .codec import Codec
    from .formats.base import Format

__all__ = ["CallIds", "ChatChoice", "FINISH_REASONS", "call_errors", "expand", "function_name", "kind", "parts_of",
           "project", "read_turns", "to_openai", "tool_call_ids", "tool_names"]

FUNCTIONS = "functions."
#: finish reasons ``ChatChoice.finish_reason`` takes (None: the stream is still running): OpenAI's
#: (``openai.types.chat.ChatCompletionChunk``'s ``finish_reason``; ``content_filter`` and the
#: legacy ``function_call`` never come from a completion's ids)
FINISH_REASONS = ("stop", "tool_calls", "length")


@dataclass(frozen=True, slots=True)
class ChatChoice:
    """One OpenAI chat completion choice: the assistant ``message`` dict and why it ended."""

    message: dict[str, Any]
    finish_reason: str | None
    #: what the lenient parse recovered from and messages that have no place in ``message``
    errors: tuple[Error, ...] = ()

    def to_dict(self, index: int = 0) -> dict[str, Any]:
        """The ``choices[index]`` object of a Chat Completions response."""
        return {"index": index, "message": self.message, "finish_reason": self.finish_reason}


class CallIds:
    """Running hash behind generated tool call ids (see the module docstring).

    ``add(m)`` each completed message in order; ``id_for(header)`` gives the id of a call
    whose header (a ``Message`` whose content is ignored) comes next.  A call's id hashes
    the seed, every message before it and its own header - not its arguments - so a stream
    knows it when the call's header is complete (OpenAI sends the id in the first
    ``tool_calls`` delta) and ``enc.to_openai`` gives the same one.
    """

    __slots__ = ("_h",)

    def __init__(self, seed: str = "") -> None:
        self._h = hashlib.sha256(seed.encode("utf-8", "surrogatepass"))

    def id_for(self, header: Message) -> str:
        d = header.to_dict()
        d.pop("content", None)
        h = self._h.copy()
        h.update(_canonical(d) + b"\x01")
        return "call_" + h.hexdigest()[:24]

    def add(self, m: Message) -> None:
        self._h.update(_canonical(m.to_dict()) + b"\x00")


def _canonical(d: dict[str, Any]) -> bytes:
    return json.dumps(d, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def tool_call_ids(messages: Sequence[Message], seed: str = "") -> dict[int, str]:
    """Message index -> generated call id, for every tool call without a ``call_id`` (see module docstring)."""
    ids = CallIds(seed)
    out: dict[int, str] = {}
    for j, m in enumerate(messages):
        if m.is_tool_call and m.call_id is None:
            out[j] = ids.id_for(m)
        ids.add(m)
    return out


def function_name(recipient: str) -> str:
    """A call's ``function.name``: the recipient without the ``functions.`` namespace."""
    return recipient[len(FUNCTIONS):] if recipient.startswith(FUNCTIONS) and len(recipient) > len(FUNCTIONS) \
        else recipient


#: where a completion message goes in the OpenAI message (``kind``)
CALL, CONTENT, REASONING, OTHER = "tool_calls", "content", "reasoning_content", None


def kind(role: str, channel: str | None, recipient: str | None, intent: str | None) -> str | None:
    """The OpenAI field a message (or a header: the stream knows it at ``MessageStart``) feeds:
    ``tool_calls`` (an assistant message with a recipient other than ``all``), ``content``
    (text the user may see: the answer, or a preamble, OpenChatML §5 rule 4),
    ``reasoning_content`` (other assistant messages), or None (another role: no place)."""
    if role != "assistant":
        return OTHER
    if recipient is not None and recipient != "all":
        return CALL
    if channel is None or channel == "final" or (channel == "commentary" and intent in (None, "preamble")):
        return CONTENT
    return REASONING


def project(messages: Sequence[Message], ends: Sequence[str], *, stop: str | None, stops: Iterable[str],
            done: bool = True, call_id_seed: str = "", strict: bool = False,
            errors: Sequence[Error] = (), tools: Any = None) -> ChatChoice:
    """Parsed completion messages -> ``ChatChoice`` (see the module docstring).

    ``ends``: each message's end reason; ``stop``: how the completion ended (the reason of
    the stop control it ends with - ``return``, ``call``... -, ``stop_string``,
    ``stop_id`` or ``cancel``), or None when it did not stop; ``stops``: the reasons of the
    format's stop controls (``Format.stop_reasons(role).values()``); ``done``: False while
    a stream is still running; ``tools``: the request's tools, each call checked against them
    (``call_errors``).
    """
    if not isinstance(call_id_seed, str):
        raise InputTypeError(f"call_id_seed must be a string, got {type(call_id_seed).__name__}",
                             field="call_id_seed", hint="e.g. the request id")
    messages, ends, origin = expand(messages, ends)
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[dict[str, Any]] = []
    errs = list(errors)
    ids = tool_call_ids(messages, call_id_seed)
    for j, m in enumerate(messages):
        if m.role != "assistant":
            if strict:
                raise UnrepresentableError(f"a {m.role} message in a completion has no place in an OpenAI "
                                           "assistant message", index=origin[j], field="role",
                                           hint="the completion should hold assistant messages only")
            errs.append(Error("E-UNREPRESENTABLE", f"a {m.role} message in the completion is not part of the "
                              "OpenAI assistant message", None, m.content))
        else:
            k = kind(m.role, m.channel, m.recipient, m.intent)
            if k is CALL:
                cid = m.call_id if m.call_id is not None else ids[j]
                calls.append({"id": cid, "type": "function",
                              "function": {"name": function_name(m.recipient or ""), "arguments": m.content}})
            elif k is CONTENT:
                content.append(m.content)
            else:
                reasoning.append(m.content)
    msg: dict[str, Any] = {"role": "assistant", "content": "\n".join(content) if content else None}
    if reasoning:
        msg["reasoning_content"] = "\n".join(reasoning)
    if calls:
        msg["tool_calls"] = calls
    if tools is not None:
        offered = tool_names(tools)
        for n, c in enumerate(calls):
            errs += call_errors(n, c["function"]["name"], c["function"]["arguments"], offered, strict)
    return ChatChoice(msg, _finish(messages, ends, stop, frozenset(stops), done), tuple(errs))


def tool_names(tools: Any) -> frozenset[str]:
    """The function names a request offers: its ``tools`` (OpenAI-wrapped or bare definitions, the
    shapes ``render`` reads: ``adapters.options.tool_def``)."""
    from .adapters.options import tool_def

    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise InputTypeError(f"tools must be the request's list of tool definitions, got {type(tools).__name__}",
                             field="tools")
    return frozenset(tool_def(t, i)["name"] for i, t in enumerate(tools))


def call_errors(k: int, name: str, arguments: str, offered: frozenset[str], strict: bool = False) -> list[Error]:
    """What is wrong with tool call ``k`` against the request's tools (``tool_names``): a name the
    request did not offer (``E-TOOL-UNKNOWN``), arguments that are not a JSON object
    (``E-TOOL-ARGUMENTS``, the text in ``Error.text``).  The call itself is kept by the caller;
    ``strict``: ``CallSchemaError`` instead."""
    out: list[Error] = []
    if name not in offered:
        out.append(Error("E-TOOL-UNKNOWN", f"tool call {k} names {name!r}, which the request's tools do not offer"
                         f" ({', '.join(sorted(offered)) or 'none'})", None))
    try:
        ok = isinstance(json.loads(arguments), dict)
    except ValueError:
        ok = False
    if not ok:
        out.append(Error("E-TOOL-ARGUMENTS", f"tool call {k} ({name}): arguments are not a JSON object", None,
                         arguments))
    if out and strict:
        raise CallSchemaError(out[0].message, code=out[0].code, index=k, field="tool_calls",
                              hint="the model's call is kept in lenient mode (strict=False), with these errors")
    return out


def parts_of(m: Message) -> tuple[Message, ...] | None:
    """The plain messages a message whose ``structured`` content is a turn of blocks (Apertus:
    thoughts, response, calls, outputs in one message) stands for, in order
    (``structured.openai_parts()``); None for any other message."""
    f = getattr(m.structured, "openai_parts", None)
    return f() if f is not None else None


def expand(messages: Sequence[Message], ends: Sequence[str]) -> tuple[list[Message], list[str], list[int]]:
    """Messages and end reasons with every turn of blocks replaced by its parts (``parts_of``):
    the last part ends as the turn did, the others with ``end``; and each one's message index."""
    out: list[Message] = []
    out_ends: list[str] = []
    origin: list[int] = []
    for j, m in enumerate(messages):
        parts = parts_of(m)
        group = (m,) if parts is None else parts
        out += group
        origin += [j] * len(group)
        if j < len(ends) and group:
            out_ends += ["end"] * (len(group) - 1) + [ends[j]]
    return out, out_ends, origin


def _finish(messages: Sequence[Message], ends: Sequence[str], stop: str | None, stops: frozenset[str],
            done: bool) -> str | None:
    if not done:
        return None
    if stop == "cancel":
        return "stop"  # cancelled on purpose (see FINISH_REASONS)
    if stop == "call" and messages and ends and ends[-1] == "call" and messages[-1].is_tool_call:
        return "tool_calls"
    if stop in stops and messages and ends and ends[-1] != "truncated" and messages[-1].is_tool_call:
        return "tool_calls"  # a turn ended by its stop token right after a call (ChatML: <|im_end|>)
    if stop in ("stop_string", "stop_id") or (stop is not None and stop in stops):
        return "stop"
    return "length"


def to_openai(enc: Codec, ids: Sequence[int] | np.ndarray, *, role: str | None = "assistant",
              strict: bool = False, call_id_seed: str = "", tools: Any = None) -> ChatChoice:
    """Completion ids (after the ``<|start|>ROLE`` prefill; ``role=None`` when they start with
    ``<|start|>``) -> ``ChatChoice``.  Lenient: parse errors are in ``ChatChoice.errors``.

    ``tools``: the request's tools: calls naming another tool or with arguments that are not a
    JSON object are reported (``call_errors``; kept in the message).  Every id is read; to read
    only up to the turn's first stop (a batch row that went on generating after it), pass
    ``ids[:ocml.encoder.stops.first_stop(enc, ids)]`` (``Encoder.to_openai(until_stop=True)``)."""
    from .parse import parse_ids

    res = parse_ids(enc, ids, strict=strict, role=role, detailed=True)
    stops = enc.format.stop_reasons(role)  # control -> reason, for the controls a sampler stops on
    return project(read_turns(enc.format, res.messages, res.ends, role), res.ends,
                   stop=stops.get(res.last_control or ""), stops=stops.values(),
                   call_id_seed=call_id_seed, strict=strict, errors=res.errors, tools=tools)


def read_turns(fmt: Format, messages: Sequence[Message], ends: Sequence[str], role: str | None) -> list[Message]:
    """Each parsed message as the OpenAI view reads it (``Format.turn_of``: a ChatML assistant
    frame's ``<think>`` block and ``<tool_call>`` blocks become the parts of its turn)."""
    turn = fmt.turn_of
    return [turn(m, ends[j] if j < len(ends) else "truncated", role) for j, m in enumerate(messages)]

