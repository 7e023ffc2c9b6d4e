"""OpenChatML 2.2 §9 streaming events from the stream decoder (what a transport sends).

§9 names four events: ``response.delta`` (``final`` token slices: display),
``response.delta.flush`` (paragraph / segment boundary hint), ``response.cancel``
(cancellation notice: stop rendering) and ``tool.cancel {call_id, reason}`` (internal
routing), and says a stream that ends without its "…done" (without ``<|return|>`` or
``<|call|>``) is incomplete.  ``Transport`` wraps a ``StreamDecoder`` and maps its events::

    tr = Transport(enc.decoder(role="assistant"), message_id="msg_1")
    for chunk in sampler:
        for ev in tr.feed(chunk):
            send(ev.to_dict())               # {"type": "response.delta", "text": ..., ...}
    for ev in tr.finish():                   # or tr.cancel("client went away")
        send(ev.to_dict())

Mapping (decoder event -> §9 event):

* ``Delta`` with ``visible`` (``final`` or no channel, ``commentary`` with
  ``intent=preamble``: ``frames.visible``) -> ``ResponseDelta(text, channel)``.  Nothing
  else is ever sent: analysis, other commentary, headers and tool-call bodies stay
  private (§11).
* A paragraph break in visible text (a second line break with only whitespace since the
  previous one, ``"\\n\\n"``) -> ``DeltaFlush`` right after it; the end of a visible message
  with text since the last flush -> ``DeltaFlush``.
* ``Stop`` on one of the format's stop controls (``return`` | ``call``; ChatML: its end
  tokens) or on a stop string -> ``ResponseDone(reason)`` (ours: §9 only implies the
  "…done" event; ``stop_string`` is a stop the caller asked for).
* ``Stop(cancel)`` (``cancel()``) -> ``ResponseCancel(reason)``; no error: the open
  message is marked truncated by the decoder (``MessageEnd(reason="truncated")``).
* A tool call (assistant message with a recipient other than ``all``) that ended
  ``truncated`` - cancelled, cut by the end of the stream, or followed by ``<|start|>``
  before its ``<|call|>`` - -> ``ToolCancel(call_id, reason)`` (``reason``: the cancel
  reason, ``truncated`` or ``unterminated``): the runtime must not run it.  ``call_id``
  is the header's ``call_id``, else the id ``to_openai`` gives that call
  (``ocml.encoder.openai_message.tool_call_ids``, with this transport's ``call_id_seed``).
* The stream ends (``finish()``, or a stop id) without ``<|return|>`` / ``<|call|>`` (the
  format's stop controls) -> ``ResponseError("E-STREAM-TRUNCATED", message)`` (§14), last.

Decoder ``Error`` events (parse problems) are not transport events; read them from
``decoder.errors``.  Chunk invariance: any chunking of the ids gives the same §9 events
once adjacent ``ResponseDelta`` of one channel are merged (``merge_deltas``).  Each
event carries ``message_id`` when the transport has one (§9: streams interleaved on one
connection are tagged).  For ``BatchDecoder`` rows: ``Transport(bd.decoder(r))`` and
``convert(events[r])`` (``ended=True`` for the lists ``finish`` / ``cancel`` return);
make a new transport after ``bd.reset(r, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Union

from ..errors import InputTypeError
from ..events import Delta, Error, Event, MessageEnd, MessageStart, Stop

if TYPE_CHECKING:
    import numpy as np

    from .decoder import StreamDecoder

__all__ = ["DeltaFlush", "ResponseCancel", "ResponseDelta", "ResponseDone", "ResponseError", "ToolCancel",
           "Transport", "TransportEvent", "merge_deltas"]


class _Wire:
    """``to_dict()``: the event as sent, ``{"type": <§9 name>, **fields}`` (``message_id`` only when set)."""

    __slots__ = ()
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)  # type: ignore[call-overload]
        if d.get("message_id") is None:
            d.pop("message_id", None)
        return {"type": self.type, **d}


@dataclass(frozen=True, slots=True)
class ResponseDelta(_Wire):
    type: ClassVar[str] = "response.delta"
    text: str
    channel: str | None          # "final" (or None: no channel), or "commentary" for a preamble
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class DeltaFlush(_Wire):
    type: ClassVar[str] = "response.delta.flush"
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseCancel(_Wire):
    type: ClassVar[str] = "response.cancel"
    reason: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCancel(_Wire):
    type: ClassVar[str] = "tool.cancel"
    call_id: str
    reason: str                  # the cancel reason | "truncated" | "unterminated"
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseDone(_Wire):
    type: ClassVar[str] = "response.done"
    reason: str                  # "return" | "call" | "stop_string" (or another format's stop reason)
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseError(_Wire):
    type: ClassVar[str] = "response.error"
    code: str                    # "E-STREAM-TRUNCATED"
    message: str
    message_id: str | None = None


TransportEvent = Union[ResponseDelta, DeltaFlush, ResponseCancel, ToolCancel, ResponseDone, ResponseError]



class Transport:
    """§9 events for one ``StreamDecoder`` (see the module docstring)."""

    def __init__(self, decoder: StreamDecoder, *, message_id: str | None = None, call_id_seed: str = "") -> None:
        from .decoder import StreamDecoder

        if not isinstance(decoder, StreamDecoder):
            raise InputTypeError(f"decoder must be a StreamDecoder, got {type(decoder).__name__}", field="decoder",
                                 hint="Transport(enc.decoder(role='assistant'))")
        if message_id is not None and not isinstance(message_id, str):
            raise InputTypeError(f"message_id must be a string or None, got {type(message_id).__name__}",
                                 field="message_id")
        if not isinstance(call_id_seed, str):
            raise InputTypeError(f"call_id_seed must be a string, got {type(call_id_seed).__name__}",
                                 field="call_id_seed")
        self.decoder = decoder
        self.message_id = message_id
        self.call_id_seed = call_id_seed
        self._reset()

    def _reset(self) -> None:
        self._nl = 0             # line breaks since the last non-whitespace visible character
        self._unflushed = False  # visible text sent since the last flush
        self._n_messages = 0     # messages ended so far (index of the next MessageEnd)
        self._ended = False

    def reset(self) -> None:
        """``decoder.reset()`` and forget the stream."""
        self.decoder.reset()
        self._reset()

    def feed(self, ids: Sequence[int] | np.ndarray | int) -> list[TransportEvent]:
        return self.convert(self.decoder.feed(ids))

    def finish(self) -> list[TransportEvent]:
        return self.convert(self.decoder.finish(), ended=True)

    def cancel(self, reason: str = "cancelled") -> list[TransportEvent]:
        return self.convert(self.decoder.cancel(reason), ended=True)

    def convert(self, events: Iterable[Event], *, ended: bool = False) -> list[TransportEvent]:
        """Decoder events (of this transport's decoder, in order) -> §9 events.  ``ended``:
        ``events`` are what ``finish()`` / ``cancel()`` returned (the stream is over)."""
        out: list[TransportEvent] = []
        mid = self.message_id
        evs = events if isinstance(events, list) else list(events)
        for k, ev in enumerate(evs):
            t = type(ev)
            if t is Delta:
                if ev.visible:
                    self._delta(ev.text, ev.channel, out)
            elif t is MessageStart:
                self._nl = 0
            elif t is MessageEnd:
                self._end_message(evs, k, out)
            elif t is Stop:
                self._ended = True
                reason = ev.reason
                if reason == "cancel":
                    out.append(ResponseCancel(self.decoder.cancel_reason or "cancelled", mid))
                elif reason == "stop_string" or reason in self.decoder.stop_controls.values():
                    out.append(ResponseDone(reason, mid))
                else:  # a stop id: the sampler's end of stream, not the format's stop control
                    out.append(self._truncated(f"the stream stopped on {ev.token} "
                                               "without <|return|> or <|call|>"))
        if ended and not self._ended:
            self._ended = True
            out.append(self._truncated("the stream ended without <|return|> or <|call|>"))
        return out

    # -- internals ------------------------------------------------------------
    def _truncated(self, message: str) -> ResponseError:
        return ResponseError("E-STREAM-TRUNCATED", message, self.message_id)

    def _delta(self, text: str, channel: str | None, out: list[TransportEvent]) -> None:
        mid = self.message_id
        if "\n" not in text:  # the common case: no paragraph break possible
            if self._nl and not text.isspace():
                self._nl = 0
            out.append(ResponseDelta(text, channel, mid))
            self._unflushed = True
            return
        nl = self._nl
        start = 0
        for i, c in enumerate(text):
            if c == "\n":
                nl += 1
                if nl == 2:  # a paragraph ends here
                    out.append(ResponseDelta(text[start:i + 1], channel, mid))
                    out.append(DeltaFlush(mid))
                    start = i + 1
            elif not c.isspace():
                nl = 0
        self._nl = nl
        if start < len(text):
            out.append(ResponseDelta(text[start:], channel, mid))
            self._unflushed = True
        else:
            self._unflushed = False

    def _end_message(self, evs: list[Event], k: int, out: list[TransportEvent]) -> None:
        ev = evs[k]
        assert type(ev) is MessageEnd
        j = self._n_messages
        self._n_messages += 1
        if self._unflushed:  # the end of a visible message is a segment boundary
            out.append(DeltaFlush(self.message_id))
            self._unflushed = False
        m = ev.message
        if ev.reason != "truncated" or not m.is_tool_call:
            return
        # Why it was cut, from the events around it (the same in any chunking): the decoder
        # reports E-PARSE-UNTERMINATED before, and cancel() puts its Stop right after.
        nxt = evs[k + 1] if k + 1 < len(evs) else None
        prev = evs[k - 1] if k else None
        if type(nxt) is Stop and nxt.reason == "cancel":
            reason = self.decoder.cancel_reason or "cancelled"
        elif type(prev) is Error and prev.code == "E-PARSE-UNTERMINATED":
            reason = "unterminated"
        else:
            reason = "truncated"
        call_id = m.call_id
        if call_id is None:
            from ..openai_message import tool_call_ids

            call_id = tool_call_ids(self.decoder.messages[:j + 1], self.call_id_seed)[j]
        out.append(ToolCancel(call_id, reason, self.message_id))


def merge_deltas(events: Iterable[TransportEvent]) -> list[TransportEvent]:
    """Adjacent ``ResponseDelta`` of one channel merged: the chunking-invariant form of a stream."""
    out: list[TransportEvent] = []
    for ev in events:
        if type(ev) is ResponseDelta and out and type(out[-1]) is ResponseDelta \
                and out[-1].channel == ev.channel:
            prev = out[-1]
            out[-1] = ResponseDelta(prev.text + ev.text, ev.channel, ev.message_id)
        else:
            out.append(ev)
    return out
