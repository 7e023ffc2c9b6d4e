"""Typed events produced by the frame state machine (parse and stream decoder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union

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


def new_delta(text: str, channel: str | None, visible: bool) -> Delta:
    """``Delta(...)`` without the frozen dataclass ``__init__`` (one per streamed text run: hot)."""
    d = _new(Delta)
    _set_text(d, text)
    _set_channel(d, channel)
    _set_visible(d, visible)
    return d


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
