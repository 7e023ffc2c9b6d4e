"""Reading ChatML back: the frame machine for ``parse``, ``parse_text`` and the stream decoder.

A frame is ``<|im_start|>`` + header line (``ROLE[ name=X]``, up to the first ``\\n``) +
content + ``<|im_end|>`` (or ``</s>``: reason ``eos``).  Between frames whitespace is
layout (the ``\\n`` after ``<|im_end|>``); ``<s>`` / ``</s>`` there are the conversation's
framing.  In the ``v0.1-literal`` layout the newline before ``<|im_end|>`` is layout: the
message content drops it (a stream has already shown it as text: it cannot be known to be
layout before ``<|im_end|>`` arrives).

Prefill (``role=``): the ids start after ``<|im_start|>ROLE\\n`` (the generation prompt),
so the machine starts inside that message's content.  ``role="fim"``: the ids are a
fill-in-the-middle middle (after ``<|fim_middle|>``): one assistant message ended by
``</s>``, ``<|file_separator|>``, ``<|fim_suffix|>`` or ``<|im_end|>``.

An assistant frame's content (not a fill-in-the-middle middle) is read as a turn while it
streams (``chatml.turns.TurnReader``): its ``Delta`` events are the reasoning of a ``<think>``
block (channel ``analysis``), the answer (no channel, visible) and markup - the tags, their
layout newlines, each whole call - (channel ``commentary``, hidden), so the concatenated
deltas are still the message's content; what could still be markup is held back.  Calls
that cannot be read and a ``<think>`` the frame ends inside are reported when the frame
ends (``E-CALL-SCHEMA``, ``E-PARSE-UNTERMINATED``, at the frame's end position).  The
message itself stays the frame's text (``parse`` gives back what was rendered); the OpenAI
view reads its turn (``ChatML.turn_of``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...errors import HeaderError
from ...events import new_delta
from ...frames import FrameMachine
from ...grammar.headers import Header
from .fim import FIM_ROLE
from .turns import CHANNELS, TurnReader, plain_table

START = "<|im_start|>"


def parse_chatml_header(text: str, roles: tuple[str, ...], position: int | None = None) -> Header:
    """``ROLE[ name=X]`` (extra spaces tolerated, as in the spec's own examples)."""
    words = text.split()

    def bad(msg: str, field: str) -> HeaderError:
        return HeaderError(f"{msg} in header {text!r}", code="E-PARSE-HEADER", field=field, position=position,
                           hint="a ChatML header is ROLE or ROLE name=NAME, then a newline")

    if not words:
        raise bad("missing role", "role")
    role = words[0]
    if role not in roles:
        raise bad(f"unknown role {role!r} (roles: {', '.join(roles)})", "role")
    name = None
    for w in words[1:]:
        key, eq, val = w.partition("=")
        if key != "name" or not eq or not val or name is not None:
            raise bad(f"unexpected {w!r}", "name")
        name = val
    return Header(role=role, name=name)


class ChatMLMachine(FrameMachine):
    start = START
    framing = ("<s>", "</s>")  # between frames: the conversation's framing

    def __init__(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None,
                 roles: tuple[str, ...], literal: bool, terminators: Mapping[str, str], think: bool = False) -> None:
        # terminators: ChatML.stop_reasons(role), the FIM middle ends at more (the token data's)
        super().__init__(strict=strict, role=None, emit=emit, terminators=terminators)
        self.roles = roles
        fim = role == FIM_ROLE
        self.literal = literal and not fim
        self.think = think       # the encoder thinks (reasoning="think"): <think> opens the reasoning
        self.turns = not fim     # assistant frames are read as turns (a FIM middle is code)
        self._reader: TurnReader | None = None
        if role is not None:  # prefilled "<|im_start|>ROLE\n" (or "<|fim_middle|>"): inside the content
            self._start(Header(role="assistant" if fim else role), 0)

    def _start(self, h: Header, position: int) -> None:
        super()._start(h, position)
        if self.turns and h.role == "assistant":
            self._reader = r = TurnReader(self.think)
            self.lean = False  # content text goes through text(): the reader classifies it
            self.plain = r.plain
        else:
            self._reader = None
            self.lean = True
            self.plain = False

    def plain_table(self, fast_text: list) -> list:
        return plain_table(fast_text)

    def text(self, s: str, position: int) -> None:
        r = self._reader
        if r is not None and self.state == "content":
            if s:
                self._content.append(s)
                self._pieces(r.feed(s))
                self.channel, self.visible = CHANNELS[r.kind]
                self.plain = r.plain
            return
        if self.state == "header" and s:
            k = s.find("\n")
            if k >= 0:  # the header line ends at the first newline
                if k:
                    self._header.append(s[:k])
                self._open(position)
                if k + 1 < len(s):
                    self.text(s[k + 1:], position)
                return
        super().text(s, position)

    def _header_control(self, name: str, position: int) -> None:
        if name == START:
            self.error("E-PARSE-HEADER", f"{START} inside a header", position, self._header_text() or None)
            self._begin()
        elif name in self.terminators:  # no newline after the header: an empty message
            self.error("E-PARSE-HEADER", f"{name} before the header's newline", position)
            self._open(position)
            if self.state == "content":
                self.close(self.terminators[name], position)
            else:
                self.state = "expect_start"
        else:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a header", position)

    def _open(self, position: int) -> None:
        text = self._header_text()
        try:
            h = parse_chatml_header(text, self.roles, position)
        except HeaderError as exc:
            if self.strict:
                raise
            self.error(exc.code, exc.message, position, text or None)
            self.state = "skip"  # the body up to the next frame: E-PARSE-SKIPPED
            return
        self._start(h, position)

    def _pieces(self, pieces: list[tuple[str, str]]) -> None:
        if self._emit is not None:
            for kind, t in pieces:
                channel, vis = CHANNELS[kind]
                self._emit(new_delta(t, channel, vis))

    def close(self, reason: str, position: int) -> None:
        drop = self.literal and reason != "truncated"  # the literal layout's newline before <|im_end|>
        r = self._reader
        if r is not None:
            self._reader = None
            self.lean = True
            self.plain = False
            self._pieces(r.close(reason, drop))
            for code, message in r.problems:
                self.error(code, message, position)
        if drop:
            body = "".join(self._content)
            if body.endswith("\n"):
                self._content = [body[:-1]]
        super().close(reason, position)
