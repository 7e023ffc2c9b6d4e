"""The frame state machine: atoms (text / controls) -> messages and events.

States: ``expect_start`` -> ``header`` (text collected until ``<|message|>``) ->
``content`` (until ``<|end|>``/``<|call|>``/``<|return|>``) -> ``expect_start``.
Shared by ``parse`` (ids), ``parse_text`` (transcripts) and the stream decoder, so all
three read a transcript the same way.  Lenient by default: malformed structure is
reported as an ``Error`` event and the machine resynchronises at the next ``<|start|>``;
``strict=True`` raises ``ParseError`` instead.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import HeaderError, OcmlError, ParseError
from .events import Delta, Error, Event, MessageEnd, MessageStart, new_delta
from .headers import Header, parse_header, parse_header_cached
from .messages import Message

TERMINATORS = {"<|end|>": "end", "<|call|>": "call", "<|return|>": "return"}
HEADER_INNER = ("<|channel|>", "<|constrain|>")
MAX_HEADER_CHARS = 4096  # models that never emit <|message|> must not grow the buffer forever


def visible(channel: str | None, intent: str | None, role: str) -> bool:
    """What a user may see: ``final`` (or no channel), and ``commentary`` flagged ``intent=preamble``."""
    if role != "assistant":
        return False
    if channel is None or channel == "final":
        return True
    return channel == "commentary" and intent == "preamble"


class FrameMachine:
    def __init__(self, *, harmony: bool, strict: bool = False, role: str | None = None,
                 emit: Callable[[Event], None] | None = None, markers: frozenset[str] = frozenset()) -> None:
        self.harmony = harmony
        self.strict = strict
        self.markers = markers
        self.messages: list[Message] = []
        self.ends: list[str] = []
        self.errors: list[Error] = []
        self._emit = emit
        self._prefill = role
        self.state = "header" if role is not None else "expect_start"
        self._header: list[str] = []
        self._header_len = 0
        self._content: list[str] = []
        self._h: Header | None = None
        #: the open message's channel and whether users may see it (valid in ``content``)
        self.channel: str | None = None
        self.visible = False

    # -- plumbing ---------------------------------------------------------
    def _event(self, ev: Event) -> None:
        if self._emit is not None:
            self._emit(ev)

    def error(self, code: str, message: str, position: int | None) -> None:
        if self.strict:
            raise ParseError(message, code=code, position=position)
        err = Error(code, message, position)
        self.errors.append(err)
        self._event(err)

    # -- input -------------------------------------------------------------
    def text(self, s: str, position: int) -> None:
        if not s:
            return
        st = self.state
        if st == "content":
            self._content.append(s)
            if self._emit is not None:
                self._emit(new_delta(s, self.channel, self.visible))
        elif st == "header":
            self._header.append(s)
            self._header_len += len(s)
            if self._header_len > MAX_HEADER_CHARS:
                self.error("E-PARSE-HEADER", f"header longer than {MAX_HEADER_CHARS} characters", position)
                self._header.clear()
                self._header_len = 0
                self.state = "expect_start"
        elif st == "skip":
            return
        elif not s.isspace():  # whitespace between frames is layout (transcripts print newlines)
            self.error("E-PARSE-STRAY-TEXT", f"text outside a message: {s[:40]!r}", position)

    def add_content(self, s: str) -> Delta:
        """Append text to the open message (state ``content``) and return its delta, unemitted.

        The stream decoder's per-token fast path: no state dispatch, no emit callback.
        """
        self._content.append(s)
        return new_delta(s, self.channel, self.visible)

    @property
    def content_append(self) -> Callable[[str], None]:
        """``add_content`` without the ``Delta``: the open message's content ``list.append``.

        For callers that cache the ``Delta`` themselves (``BatchDecoder``).  Valid only
        while the state stays ``content``: anything else fed to the machine (control,
        text, finish, close) may open a new content buffer - read it again after that.
        """
        return self._content.append

    def control(self, name: str, position: int) -> None:
        st = self.state
        if st == "content":
            reason = TERMINATORS.get(name)
            if reason is not None:
                self.close(reason, position)
            elif name in self.markers:
                self.text(name, position)
            elif name == "<|start|>":
                self.error("E-PARSE-UNTERMINATED", "a new message started before this one ended", position)
                self.close("truncated", position)
                self._begin()
            else:
                self.error("E-PARSE-STRAY-CONTROL", f"{name} inside message content", position)
        elif st == "header":
            if name == "<|message|>":
                self._open(position)
            elif name in HEADER_INNER:
                self._header.append(name)
            elif name == "<|start|>":
                self.error("E-PARSE-HEADER", "<|start|> inside a header", position)
                self._begin()
            elif name in TERMINATORS:
                # <|message|> missing: salvage "ROLE<|channel|>CH rest" as header + content.
                self.error("E-PARSE-HEADER", f"{name} before <|message|>", position)
                self._salvage(position)
                self.close(TERMINATORS[name], position)
            else:
                self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a header", position)
        elif st == "skip":
            if name == "<|start|>":
                self._begin()
            elif name in TERMINATORS:
                self.state = "expect_start"
        else:
            if name == "<|start|>":
                self._begin()
            else:
                self.error("E-PARSE-STRAY-CONTROL", f"{name} where a message should start", position)

    def special(self, token: str, position: int) -> None:
        self.error("E-PARSE-STRAY-CONTROL", f"special token {token} in the stream", position)

    def finish(self, position: int) -> None:
        if self.state == "content":
            self.error("E-STREAM-TRUNCATED", "the stream ended inside a message", position)
            self.close("truncated", position)
        elif self.state == "header" and (self._header or self._prefill is None):
            self.error("E-STREAM-TRUNCATED", "the stream ended inside a header", position)
            self.state = "expect_start"

    # -- transitions ---------------------------------------------------------
    def _begin(self) -> None:
        self.state = "header"
        self._header = []
        self._header_len = 0
        self._prefill = None

    def _open(self, position: int) -> None:
        hd = self._header
        text = hd[0] if len(hd) == 1 else "".join(hd)
        try:
            h = parse_header_cached(text, self.harmony, self._prefill, position)
        except HeaderError as exc:
            if self.strict:
                raise
            self.error(exc.code, exc.message, position)
            self.state = "skip"  # drop this message's content until the next <|start|>
            return
        self._prefill = None
        self._h = h
        self._content = []
        self.channel = h.channel
        self.visible = visible(h.channel, h.intent, h.role)
        self.state = "content"
        if self._emit is not None:
            self._emit(MessageStart(h.role, h.channel, h.recipient, h.call_id, h.name, h.intent, h.content_type,
                                    h.constrain, position))

    def _salvage(self, position: int) -> None:
        text = "".join(self._header)
        head, sep, rest = text.partition("<|channel|>")
        words = rest.split(None, 1) if sep else []
        try:
            h = parse_header(head + (sep + words[0] if words else ""), harmony=self.harmony, role=self._prefill,
                             position=position)
        except OcmlError:
            h = Header(role=self._prefill or "assistant")
        self._prefill = None
        self._h = h
        self._content = [words[1]] if len(words) > 1 else []
        self.channel = h.channel
        self.visible = visible(h.channel, h.intent, h.role)
        self.state = "content"

    def close(self, reason: str, position: int) -> None:
        """End the open message (``reason``: end | return | call | truncated)."""
        h = self._h
        assert h is not None
        msg = Message(role=h.role, content="".join(self._content), channel=h.channel, recipient=h.recipient,
                      call_id=h.call_id, name=h.name, intent=h.intent, content_type=h.content_type,
                      constrain=h.constrain)
        self.messages.append(msg)
        self.ends.append(reason)
        self.state = "expect_start"
        self._h = None
        self._content = []
        if self._emit is not None:
            self._emit(MessageEnd(msg, reason, position))
