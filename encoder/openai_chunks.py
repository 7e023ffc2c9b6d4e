"""Sampled ids -> OpenAI Chat Completions stream chunks (``chat.completion.chunk``).

``enc.chunker()`` wraps a stream decoder (``ocml.encoder.stream.decoder``) and turns its events
into the chunks an OpenAI-compatible server sends::

    ck = enc.chunker(model="my-model")               # after the "<|start|>assistant" prefill
    for ids in sampler:
        for chunk in ck.feed(ids):
            send("data: " + json.dumps(chunk))
    for chunk in ck.finish(stop_reason=out.stop_reason):   # the engine's matched stop, if it stripped it
        send("data: " + json.dumps(chunk))

Each chunk is complete: ``id``, ``object``, ``created``, ``model``, ``choices[0]`` with
``index``, ``delta``, ``logprobs`` (None) and ``finish_reason``.  The first delta carries
``role``; then ``content`` deltas (the answer, preambles), ``reasoning_content`` deltas
(analysis and other hidden channels) and ``tool_calls`` deltas (``index``, ``id``,
``type`` and ``function.name`` once, when the call's header is complete, then
``function.arguments`` pieces); the last chunk has an empty delta and ``finish_reason``
(``stop`` | ``tool_calls`` | ``length``: OpenAI's values only, ``stop`` after ``cancel()``), sent as soon as the
stream stops (a stop token in ``feed``) or at ``finish()``.  With ``include_usage=True``
(OpenAI's ``stream_options``) every chunk has ``"usage": None`` and one more chunk with
``choices: []`` and the token counts closes the stream.

Invariant (tested for every format, registered and fallback): ``accumulate(chunks)`` - the
deltas concatenated as OpenAI clients do - equals ``enc.to_openai(ids)`` (message and
finish reason, tool call ids included) however the ids are chunked, and no delta holds
control text: deltas are cut from the decoder's message content, never from raw text.
Several answer (or reasoning) messages are joined with ``"\\n"``, as ``to_openai`` joins them.
A turn of blocks (``TurnShape.blocks``: Apertus, ChatML) streams its thoughts and response
text as ``reasoning_content`` / ``content`` deltas, and each call whole (``id``, name and
arguments in one delta) when the turn ends: an Apertus call list is readable only at its
``<|tools_suffix|>``, where a completion stops; a ChatML turn's calls come right before its
``<|im_end|>`` (the markup of a ChatML turn - ``<think>``, ``<tool_call>``, layout newlines -
never reaches a delta, ``ocml.encoder.formats.chatml.turns``).
With ``prefill=`` (``render(..., mode="continue")``) the deltas carry only the
continuation; ``decoder.to_openai()`` has the whole message (``ocml.encoder.prefill``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import InputError, InputTypeError
from .events import Delta, Error, Event, MessageEnd, MessageStart, Stop
from .frames import held
from .openai_envelope import chunk, new_id, usage
from .messages import Message
from .openai_message import CALL, CONTENT, REASONING, CallIds, call_errors, function_name, kind, parts_of, tool_names
from .stream.decoder import StreamDecoder

if TYPE_CHECKING:
    import numpy as np

    from .codec import Codec

__all__ = ["Chunker", "accumulate"]

BLOCKS = "blocks"  # the open message is a turn of blocks (``TurnShape.blocks``)
HELD = "held"  # the open message is held (``frames.held``): sent whole at its end
#: Delta channel of a block's text -> the OpenAI field it feeds (other blocks: calls, outputs,
#: ChatML markup); ChatML's answer text has no channel
_BLOCK_FIELDS = {"analysis": REASONING, "final": CONTENT, None: CONTENT}


class Chunker:
    """One streamed choice as ``chat.completion.chunk`` dicts (see the module docstring).

    ``id`` / ``created`` / ``model``: the chunk envelope (defaults: a random ``chatcmpl-``
    id and the time of construction, the same in every chunk); ``index``: the choice index
    (``n > 1``, or a batch row); ``call_id_seed``: mixed into generated tool call ids, as
    in ``to_openai``; ``prompt_tokens``: for ``usage`` (default with ``prefill``: its
    length); ``tools``: the request's tools, each call checked against them as it completes
    (``errors``: ``E-TOOL-UNKNOWN``, ``E-TOOL-ARGUMENTS``; the call is sent as generated).  Other
    keywords go to ``enc.decoder`` (``role``, ``prefill``, ``stop_strings``, ``stop_ids``, ``strict``...).
    """

    def __init__(self, enc: Codec, *, role: str | None = "assistant", id: str | None = None,
                 created: int | None = None, model: str = "", index: int = 0, call_id_seed: str = "",
                 include_usage: bool = False, prompt_tokens: int | None = None, prefill: Any = None,
                 tools: Any = None, **decoder_kw: Any) -> None:
        for name, val in (("id", id), ("model", model), ("call_id_seed", call_id_seed)):
            if val is not None and not isinstance(val, str):
                raise InputTypeError(f"{name} must be a string, got {type(val).__name__}", field=name)
        for name, num in (("created", created), ("index", index), ("prompt_tokens", prompt_tokens)):
            if num is not None and (type(num) is not int or num < 0):
                raise InputTypeError(f"{name} must be an integer >= 0, got {num!r}", field=name)
        if include_usage is not True and include_usage is not False:
            raise InputTypeError(f"include_usage must be True or False, got {include_usage!r}", field="include_usage")
        self.decoder = StreamDecoder(enc, role=None if prefill is not None else role, prefill=prefill, **decoder_kw)
        if prompt_tokens is None and self.decoder.prefill is not None:
            prompt_tokens = len(self.decoder.prefill)
        if include_usage and prompt_tokens is None:
            raise InputError("include_usage=True needs prompt_tokens (the prompt's length)", field="prompt_tokens")
        self.id = id if id is not None else new_id()
        self.created = int(time.time()) if created is None else created
        self.model = model
        self.index = index
        self.include_usage = include_usage
        self.prompt_tokens = prompt_tokens
        self.call_id_seed = call_id_seed
        self._blocks = enc.format.turns.blocks
        self._turn = enc.format.turn_of  # a message as the OpenAI view reads it (ChatML turns)
        self._role = self.decoder.role
        #: the request's tool names (``tools=``): each call is checked when it is complete
        self._offered = None if tools is None else tool_names(tools)
        self._reset()

    def _reset(self) -> None:
        self._ids = CallIds(self.call_id_seed)
        for m, _ in self.decoder.prefill_messages:  # to_openai's ids hash them first
            self._ids.add(m)
        self._sent_role = False
        self._done = False
        self._kind: str | None = None      # the open message's OpenAI field (None: no place / none open)
        self._channel: str | None = None   # the open message's header channel
        self._counts = {CONTENT: 0, REASONING: 0}
        self._calls = 0
        self.completion_tokens = 0
        #: calls that name a tool the request did not offer or whose arguments are not a JSON
        #: object (``openai_message.call_errors``), as each call completes; the calls are sent as is
        self.errors: list[Error] = []

    def _check(self, m: Message) -> None:
        if self._offered is not None:
            self.errors += call_errors(self._calls - 1, function_name(m.recipient or ""), m.content, self._offered)

    def reset(self) -> None:
        """A new stream (same envelope): ``decoder.reset()`` and forget what was sent."""
        self.decoder.reset()
        self._reset()

    # -- public API -----------------------------------------------------------------
    def feed(self, ids: Sequence[int] | np.ndarray | int) -> list[dict[str, Any]]:
        """Chunks for the next sampled ids (possibly none)."""
        if self._done:
            return []
        evs = self.decoder.feed(ids)
        n = 1 if isinstance(ids, int) or (hasattr(ids, "ndim") and ids.ndim == 0) else len(ids)
        stop = next((e for e in evs if type(e) is Stop), None)
        self.completion_tokens += n - (stop.trailing if stop is not None else 0)
        return self._convert(evs)

    def finish(self, stop_reason: int | str | None = None, *, eos: bool = False) -> list[dict[str, Any]]:
        """The end of the stream: the last chunk (``finish_reason``) and, with ``include_usage``,
        the usage chunk.  ``stop_reason`` / ``eos``: why the engine stopped when it stripped the
        stop token (``StreamDecoder.finish``)."""
        if self._done:
            return []
        return self._convert(self.decoder.finish(stop_reason, eos=eos), ended=True)

    def cancel(self, reason: str = "cancelled") -> list[dict[str, Any]]:
        """End the stream on purpose: ``finish_reason`` ``stop`` (the openai client's types allow only
        OpenAI's values; vLLM's ``abort`` is refused by them); ``decoder.status`` says ``cancelled``."""
        if self._done:
            return []
        return self._convert(self.decoder.cancel(reason), ended=True)

    # -- internals ------------------------------------------------------------------
    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return chunk(delta, id=self.id, created=self.created, model=self.model, index=self.index,
                     finish_reason=finish_reason, include_usage=self.include_usage)

    def _convert(self, evs: Iterable[Event], ended: bool = False) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self._sent_role:
            self._sent_role = True
            out.append(self._chunk({"role": "assistant"}))
        for ev in evs:
            t = type(ev)
            if t is Delta:
                k = self._kind
                if k is None or k is HELD or not ev.text:  # type: ignore[union-attr]
                    continue
                if k is BLOCKS:
                    self._block_delta(ev, out)  # type: ignore[arg-type]
                    continue
                ch = ev.channel  # type: ignore[union-attr]
                if ch != self._channel and not (self._channel is None and ch in (None, "final")):
                    continue
                out.append(self._chunk(self._piece(k, ev.text)))  # type: ignore[union-attr]
            elif t is MessageStart:
                self._start(ev, out)  # type: ignore[arg-type]
            elif t is MessageEnd:
                parts = parts_of(self._turn(ev.message, ev.reason, self._role))  # type: ignore[arg-type, union-attr]
                if self._kind is HELD:
                    self._held(ev.message, out)  # type: ignore[arg-type, union-attr]
                elif self._kind is CALL:
                    self._check(ev.message)  # type: ignore[arg-type, union-attr]
                if parts is None:
                    self._ids.add(ev.message)  # type: ignore[arg-type, union-attr]
                else:
                    self._block_calls(parts, out)
                self._kind = None
        if ended or self.decoder.done:
            self._done = True
            reason = self.decoder.to_openai().finish_reason
            out.append(self._chunk({}, reason))
            if self.include_usage:
                out.append(chunk(None, id=self.id, created=self.created, model=self.model,
                                 usage_of=usage(self.prompt_tokens or 0, self.completion_tokens)))
        return out

    # A turn of blocks (``TurnShape.blocks``: Apertus): thoughts and response text stream as
    # reasoning / content deltas, a new part at each change of block (as ``openai_parts`` cuts
    # them); the calls are sent whole when the turn ends, from its parsed blocks (the call list
    # is only readable at its ``<|tools_suffix|>``, which ends the turn in a completion).
    def _block_delta(self, ev: Delta, out: list[dict[str, Any]]) -> None:
        ch = ev.channel
        k = _BLOCK_FIELDS.get(ch)
        if k is not None:
            start = ch != self._channel
            out.append(self._chunk({k: ("\n" if start and self._counts[k] else "") + ev.text}))
            self._counts[k] += start
        self._channel = ch

    def _block_calls(self, parts: Sequence[Message], out: list[dict[str, Any]]) -> None:
        for m in parts:
            if kind(m.role, m.channel, m.recipient, m.intent) is CALL:
                self._whole_call(m, out)
            self._ids.add(m)

    def _whole_call(self, m: Message, out: list[dict[str, Any]]) -> None:
        """A complete call sent in one delta (``id``, name and arguments), then checked."""
        cid = m.call_id if m.call_id is not None else self._ids.id_for(m)
        out.append(self._chunk({"tool_calls": [{"index": self._calls, "id": cid, "type": "function",
                                                "function": {"name": function_name(m.recipient or ""),
                                                             "arguments": m.content}}]}))
        self._calls += 1
        self._check(m)

    def _piece(self, k: str, text: str) -> dict[str, Any]:
        if k is CALL:
            return {"tool_calls": [{"index": self._calls - 1, "function": {"arguments": text}}]}
        return {k: text}

    def _held(self, m: Message, out: list[dict[str, Any]]) -> None:
        """A held message (``frames.held``: an unknown channel) ended: it goes where its final
        reading puts it (``<|return|>`` made it the answer), sent whole."""
        k = kind(m.role, m.channel, m.recipient, m.intent)
        if k is CALL:
            self._whole_call(m, out)
        elif k is not None:
            out.append(self._chunk({k: ("\n" if self._counts[k] else "") + m.content}))
            self._counts[k] += 1

    def _start(self, ev: MessageStart, out: list[dict[str, Any]]) -> None:
        k = kind(ev.role, ev.channel, ev.recipient, ev.intent)
        self._channel = ev.channel
        if k is not None and self._blocks:
            self._kind = BLOCKS
            self._channel = BLOCKS  # not a Delta channel: the turn's first text starts a part
            return
        if held(ev.channel):  # its field is known at its end (``_held``); its text comes whole then
            self._kind = HELD
            return
        self._kind = k
        if k is CALL:
            header = Message(role=ev.role, content="", channel=ev.channel, recipient=ev.recipient,
                             call_id=ev.call_id, name=ev.name, intent=ev.intent, content_type=ev.content_type,
                             constrain=ev.constrain)
            cid = ev.call_id if ev.call_id is not None else self._ids.id_for(header)
            out.append(self._chunk({"tool_calls": [{"index": self._calls, "id": cid, "type": "function",
                                                    "function": {"name": function_name(ev.recipient or ""),
                                                                 "arguments": ""}}]}))
            self._calls += 1
        elif k is not None:
            # to_openai joins several messages of a field with "\n"; an empty message still makes
            # the field a string ("" - not absent / None), so the first one opens it with ""
            out.append(self._chunk({k: "\n" if self._counts[k] else ""}))
            self._counts[k] += 1


def accumulate(chunks: Iterable[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    """The deltas of one choice merged as OpenAI clients merge them: ``{"message", "finish_reason"}``
    (``message`` keys as ``to_openai``'s: ``content`` None when no content delta came,
    ``reasoning_content`` / ``tool_calls`` only when some came)."""
    msg: dict[str, Any] = {"role": None, "content": None}
    calls: list[dict[str, Any]] = []
    finish = None
    for c in chunks:
        for ch in c["choices"]:
            if ch["index"] != index:
                continue
            d = ch["delta"]
            if "role" in d:
                msg["role"] = d["role"]
            for key in ("content", "reasoning_content"):
                if d.get(key) is not None:
                    msg[key] = (msg.get(key) or "") + d[key]
            for tc in d.get("tool_calls") or ():
                i = tc["index"]
                if i == len(calls):
                    calls.append({"id": tc.get("id"), "type": tc.get("type"),
                                  "function": {"name": tc["function"].get("name"), "arguments": ""}})
                calls[i]["function"]["arguments"] += tc["function"].get("arguments") or ""
            if ch["finish_reason"] is not None:
                finish = ch["finish_reason"]
    if calls:
        msg["tool_calls"] = calls
    return {"message": msg, "finish_reason": finish}
