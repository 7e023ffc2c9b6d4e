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


# One Delta per streamed token (hot): stored through the slots' descriptors, not the frozen
# ``__init__``'s ``object.__setattr__`` (see ``messages.new_message``; tests/render/test_plain_constructors.py).
_new = object.__new__
_s_text, _s_channel, _s_visible = (Delta.__dict__[n].__set__ for n in ("text", "channel", "visible"))


def new_delta(text: str, channel: str | None, visible: bool) -> Delta:
    """``Delta(text, channel, visible)`` without the frozen dataclass ``__init__``."""
    d = _new(Delta)
    _s_text(d, text)
    _s_channel(d, channel)
    _s_visible(d, visible)
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
    reason: str            # "return" | "call" | "stop_string" | "stop_id" | "cancel"
    token: str | None
    position: int
    #: ids after the stop within the fed chunk: not streamed, to be trimmed by the caller
    trailing: int = 0
    #: fallback mode: the text of the stop token after the stop control's spelling (o200k's
    #: ``><`` after ``<|call|>``: the ``<`` of the next ``<|start|>``): past the end of the
    #: turn, so not read (``ParseResult.tail`` says the same for ``parse``)
    rest: str = ""


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
