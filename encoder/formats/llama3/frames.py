"""Reading Llama 3 back: the frame machine for ``parse``, ``parse_text`` and the stream decoder.

A frame is ``<|start_header_id|>ROLE<|end_header_id|>`` + ``\\n\\n`` (layout, left out of the
content) + content + ``<|eot_id|>`` (reason ``end``), ``<|eom_id|>`` (``call``) or
``<|end_of_text|>`` (``eos``).  ``<|begin_of_text|>`` / ``<|end_of_text|>`` between frames
are the conversation's framing.  ``<|python_tag|>`` inside an assistant frame is kept in the
content as its text (``calls.read_call`` reads what follows as a built-in call or code).

Stream events: an assistant frame's text is the answer (channel ``final``, visible) unless its
first text is ``{`` or ``<|python_tag|>``: then it may be a call, and it is held until the frame
ends (or the stream does), then given as one ``Delta``: hidden (channel ``tool``) when it reads as a
call (``calls.read_call``), else visible as the answer (a JSON answer, a call cut short).  The
OpenAI view reads the call from the whole frame (``calls.read_turn``).  Prefill (``role=``): the ids start after the generation prompt
(``...assistant<|end_header_id|>\\n\\n``), inside the content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...events import new_delta
from ...read.frames import FrameMachine
from ...grammar.headers import Header
from .calls import PYTHON_TAG, read_call

START, END_HEADER = "<|start_header_id|>", "<|end_header_id|>"
FRAMING = ("<|begin_of_text|>", "<|end_of_text|>")
#: the newlines between <|end_header_id|> and the content
LEAD = "\n\n"
CALL_CHANNEL = "tool"


class Llama3Machine(FrameMachine):
    start = START
    framing = FRAMING

    def __init__(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None,
                 roles: tuple[str, ...], terminators: Mapping[str, str]) -> None:
        super().__init__(strict=strict, role=None, emit=emit, terminators=terminators)
        self.roles = roles
        self._lead = 0            # layout newlines still to drop at the content's start
        self._open_answer = False  # an assistant frame whose kind (answer / call) is not known yet
        self._hold = False         # its text may be a call: held until the frame ends
        if role is not None:
            self._start(Header(role=role), 0)
            self._lead = 0

    def _start(self, h: Header, position: int) -> None:
        super()._start(h, position)
        self._lead = len(LEAD)
        self._open_answer = h.role == "assistant"
        self.lean = False  # content text goes through text() until the layout and the kind are known

    def _settled(self) -> None:
        if not self._lead and not self._open_answer and not self._hold:
            self.lean = True

    def _held(self) -> None:
        self._open_answer = False
        self._hold = True
        self.channel, self.visible = CALL_CHANNEL, False

    def text(self, s: str, position: int) -> None:
        if self.state == "content" and s:
            if self._lead:
                k = 0
                while k < len(s) and k < self._lead and s[k] == "\n":
                    k += 1
                self._lead = 0 if k < len(s) else self._lead - k
                s = s[k:]
                self._settled()
                if not s:
                    return
            if self._open_answer and not s.isspace():
                if s.lstrip().startswith("{"):
                    self._held()
                self._open_answer = False
                self._settled()
            if self._hold:
                self._content.append(s)
                return
        super().text(s, position)

    def control(self, name: str, position: int) -> None:
        if name == PYTHON_TAG and self.state == "content":
            self.last_control = name
            if self._skipped:
                self._flush_skipped()
            self._lead = 0
            if self._open_answer:
                self._held()
            self._settled()
            self.text(name, position)
            return
        super().control(name, position)

    def _header_control(self, name: str, position: int) -> None:
        if name == END_HEADER:
            text = self._header_text()
            if text in self.roles:
                self._start(Header(role=text), position)
                return
            self.error("E-PARSE-HEADER", f"unknown role {text!r} (roles: {', '.join(self.roles)})", position,
                       text or None)
            self.state = "skip"  # the body up to the next frame: E-PARSE-SKIPPED
        elif name == START:
            self.error("E-PARSE-HEADER", f"{START} inside a header", position, self._header_text() or None)
            self._begin()
        elif name in self.terminators:
            self.error("E-PARSE-HEADER", f"{name} before {END_HEADER}", position, self._header_text() or None)
            self.state = "expect_start"
        else:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a header", position)

    def close(self, reason: str, position: int) -> None:
        if self._hold:
            self._hold = False
            text = "".join(self._content)
            if self._emit is not None and text:
                call = read_call(text) is not None
                self._emit(new_delta(text, CALL_CHANNEL if call else "final", not call))
        self._lead = 0
        self._open_answer = False
        self.lean = True
        super().close(reason, position)
