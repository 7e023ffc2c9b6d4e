"""Typed events produced by the frame state machine (parse and stream decoder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Union

from .fastinit import fast_constructor
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


#: ``Delta(text, channel, visible)`` without the frozen dataclass ``__init__`` (one per
#: streamed token: hot).
new_delta: Callable[[str, str | None, bool], Delta] = fast_constructor(Delta, ("t", "c", True))


@dataclass(frozen=True, slots=True)
class MessageEnd:
    type: ClassVar[str] = "message_end"
    message: Message
    reason: str            # "end" | "return" | "call" | "truncated"
    position: int


@dataclass(frozen=True, slots=True)
class Stop:
    type: ClassVar[str] = "stop"
    reason: str            # "return" | "call" | "stop_string" | "stop_id" | "cancel"
    token: str | None
    position: int
    #: ids after the stop within the fed chunk: not streamed, to be trimmed by the caller
    trailing: int = 0


@dataclass(frozen=True, slots=True)
class Error:
    """A problem the lenient reader recovered from.

    ``position``: token index where it was found (for skipped text: its first token).
    ``text``: the input text this error left out of every message, in full (a stray run
    between messages, an unreadable header, the body of a message whose header could
    not be read), or None when no text was lost (a bad id, a stray control, a header
    whose words were kept as content).
    """

    type: ClassVar[str] = "error"
    code: str
    message: str
    position: int | None
    text: str | None = None


Event = Union[MessageStart, Delta, MessageEnd, Stop, Error]
