"""Typed events produced by the frame state machine (parse and stream decoder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Union

from .messages import Message


@dataclass(frozen=True, slots=True)
class MessageStart:
    type: ClassVar[str] = "message_start"
    role: str
    channel: str | None
    recipient: str | None
    call_id: str | None
    name: str | None
    intent: str | None
    content_type: str | None
    constrain: str | None
    position: int


@dataclass(frozen=True, slots=True)
class Delta:
    type: ClassVar[str] = "delta"
    text: str
    channel: str | None
    visible: bool


_new = object.__new__
_set_text = Delta.__dict__["text"].__set__
_set_channel = Delta.__dict__["channel"].__set__
_set_visible = Delta.__dict__["visible"].__set__


def _new_delta_setters(text: str, channel: str | None, visible: bool) -> Delta:
    """``Delta(...)`` without the frozen dataclass ``__init__``: the slot descriptors' setters."""
    d = _new(Delta)
    _set_text(d, text)
    _set_channel(d, channel)
    _set_visible(d, visible)
    return d


class _DeltaBuilder:
    """Same slots as ``Delta`` but mutable: filled with plain attribute stores, then retyped."""

    __slots__ = Delta.__slots__


def _new_delta_retype(text: str, channel: str | None, visible: bool) -> Delta:
    """``Delta(...)`` at about half the cost of the setters (token-by-token streaming makes one
    per token): three plain stores, then a ``__class__`` assignment, allowed because the
    layouts are identical; the result is an ordinary frozen ``Delta``."""
    d = _DeltaBuilder()
    d.text = text  # type: ignore[attr-defined]
    d.channel = channel  # type: ignore[attr-defined]
    d.visible = visible  # type: ignore[attr-defined]
    d.__class__ = Delta  # type: ignore[assignment]
    return d  # type: ignore[return-value]


def _pick_new_delta() -> Callable[[str, str | None, bool], Delta]:
    # The retyping builder only if this interpreter accepts it and it yields an equal Delta.
    try:
        d = _new_delta_retype("t", "c", True)
        if type(d) is Delta and d == Delta("t", "c", True) and hash(d) == hash(Delta("t", "c", True)):
            return _new_delta_retype
    except TypeError:
        pass
    return _new_delta_setters


#: ``Delta(text, channel, visible)`` without the frozen dataclass ``__init__`` (hot path).
new_delta: Callable[[str, str | None, bool], Delta] = _pick_new_delta()


@dataclass(frozen=True, slots=True)
class MessageEnd:
    type: ClassVar[str] = "message_end"
    message: Message
    reason: str            # "end" | "return" | "call" | "truncated"
    position: int


@dataclass(frozen=True, slots=True)
class Stop:
    type: ClassVar[str] = "stop"
    reason: str            # "return" | "call" | "stop_string" | "stop_id"
    token: str | None
    position: int
    #: ids after the stop within the fed chunk: not streamed, to be trimmed by the caller
    trailing: int = 0


@dataclass(frozen=True, slots=True)
class Error:
    type: ClassVar[str] = "error"
    code: str
    message: str
    position: int | None


Event = Union[MessageStart, Delta, MessageEnd, Stop, Error]
