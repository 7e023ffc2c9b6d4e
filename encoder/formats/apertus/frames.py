"""Reading Apertus back: the frame machine for ``parse``, ``parse_text`` and the stream decoder.

Frames: ``<|system_start|>``/``<|developer_start|>``/``<|user_start|>`` TEXT and the matching
end; an assistant turn ``<|assistant_start|>`` ... ``<|assistant_end|>`` (or ``</s>``: reason
``eos``) read back into blocks (``apertus.blocks.Turn``).  Inside a turn, text is
``response`` (outer section) or ``thoughts`` (after ``<|inner_prefix|>``); the text between
``<|tools_prefix|>`` and ``<|tools_suffix|>`` is the call list; a ``[`` right after
``<|tools_suffix|>`` opens the tool outputs, which end at the matching ``]`` (JSON-aware
scan; at a control with the bracket still open, at the last ``]``).

Stream events: ``Delta.channel`` is ``final`` for response text (visible), ``analysis`` for
thoughts, ``commentary`` for the call list, ``tool`` for outputs (hidden).  The call list
and the outputs are not streamed token by token: they arrive whole, at the control (or
bracket) that ends them.  The stream decoder stops at ``<|tools_suffix|>`` (a stop token):
ids that end right after it end the turn so far with reason ``call`` (in ``parse`` too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...events import new_delta
from ...frames import FrameMachine
from ...grammar.headers import Header
from ...grammar.terminators import terminators_of
from ...messages import Message
from .blocks import (
    END_TOOLS,
    FRAME_ENDS,
    FRAME_STARTS,
    INNER,
    OUTER,
    RESPONSE,
    THOUGHTS,
    TOOL_CALLS,
    TOOL_OUTPUTS,
    TOOLS,
    Block,
    BracketScan,
    Call,
    Turn,
    parse_calls,
    split_outputs,
)

# the frames of apertus.blocks: system / developer / user messages, and the assistant turn
STARTS = {c: role for role, c in FRAME_STARTS.items() if role != "assistant"}
ENDS = {role: c for role, c in FRAME_ENDS.items() if role != "assistant"}
TURN_START, TURN_END = FRAME_STARTS["assistant"], FRAME_ENDS["assistant"]
_FRAMING = ("<s>", "</s>")
#: Delta (channel, visible) per block kind
CHANNELS = {THOUGHTS: ("analysis", False), RESPONSE: ("final", True), TOOL_CALLS: ("commentary", False),
            TOOL_OUTPUTS: ("tool", False)}


class ApertusMachine(FrameMachine):
    def __init__(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None) -> None:
        # the reason each end control gives (system/developer/user ends, <|assistant_end|>, </s>,
        # <|tools_suffix|>): the token data's (``ocml.encoder.grammar.terminators``)
        super().__init__(strict=strict, role=None, emit=emit,
                         terminators=terminators_of("apertus").reasons)
        self._turn = False
        if role == "assistant":  # prefilled "<|assistant_start|>"
            self._open_turn(0)
        elif role is not None:  # prefilled "<|user_start|>" etc.
            self._start(Header(role=role), 0)

    # -- turn bookkeeping -----------------------------------------------------------------------
    def _open_turn(self, position: int) -> None:
        self._start(Header(role="assistant"), position)
        self._turn = True
        self._blocks: list[Block] = []
        self._inner = False
        self._mode = "text"          # text | calls | after_call | outputs
        self._kind: str | None = None
        self._explicit = False       # the current text block was opened by a control
        self._calls: list[str] = []
        self._outputs: list[str] = []
        self._scan = BracketScan()
        self._begin_text(RESPONSE, False)

    def _begin_text(self, kind: str, explicit: bool) -> None:
        self._flush_text()
        self._kind = kind
        self._explicit = explicit
        self._mode = "text"
        self.state = "content"
        self.channel, self.visible = CHANNELS[kind]

    def _flush_text(self) -> None:
        if self._kind is not None:
            text = "".join(self._content)
            if text or self._explicit:
                self._blocks.append(Block(self._kind, text))
            self._content = []
            self._kind = None

    def _section_text(self) -> None:
        self._begin_text(THOUGHTS if self._inner else RESPONSE, False)

    def _emit_delta(self, text: str, kind: str) -> None:
        if self._emit is not None and text:
            channel, vis = CHANNELS[kind]
            self._emit(new_delta(text, channel, vis))

    def _end_outputs(self, text: str) -> None:
        self._blocks.append(Block(TOOL_OUTPUTS, outputs=split_outputs(text), inner=self._inner))
        self._emit_delta(text, TOOL_OUTPUTS)
        self._outputs = []
        self._section_text()

    def _settle(self, position: int) -> None:
        """Before a control: close what text alone cannot close (open outputs, a call list)."""
        if self._mode == "outputs":
            text = "".join(self._outputs)
            k = text.rfind("]")
            if k < 0:
                self.error("E-PARSE-TOOL-OUTPUT", "tool outputs without their closing ']'", position)
                self._end_outputs(text + "]")
                return
            self._end_outputs(text[:k + 1])
            if k + 1 < len(text):
                self.text(text[k + 1:], position)
        elif self._mode == "calls":
            text = "".join(self._calls)
            self.error("E-CALL-SCHEMA", f"{TOOLS} without {END_TOOLS}", position, text or None)
            self._section_text()
        elif self._mode == "after_call":
            self._section_text()

    def _close_turn(self, reason: str, position: int) -> None:
        self._settle(position)
        self._flush_text()
        turn = Turn(tuple(self._blocks))
        msg = Message(role="assistant", content=turn.response, structured=turn)
        self._turn = False
        self._h = None
        self._content = []
        self.state = "expect_start"
        self.messages.append(msg)
        self.ends.append(reason)
        if self._emit is not None:
            from ...events import MessageEnd

            self._emit(MessageEnd(msg, reason, position))

    # -- input ------------------------------------------------------------------------------------
    def close(self, reason: str, position: int) -> None:
        if self._turn:
            self._close_turn(reason, position)
        else:
            super().close(reason, position)

    @property
    def open_content(self) -> bool:
        return self.in_message and (not self._turn or self._mode == "text")

    def finish(self, position: int, partial: str = "") -> None:
        if self._turn and self._mode in ("after_call", "outputs"):
            # The ids end after <|tools_suffix|>: the generated turn ended at its call (the
            # stream decoder stops there), so the turn so far ends with reason "call".  Tool
            # outputs cut short (the tail of the stop token, "|>[") are not the model's: they
            # are reported with their text, not made a block.
            if self._mode == "outputs":
                text = "".join(self._outputs)
                self._outputs = []
                self._mode = "after_call"
                self.error("E-PARSE-TOOL-OUTPUT", "the ids end inside tool outputs", position, text or None)
            self._close_turn(self.terminators[END_TOOLS], position)
            return
        if self._turn and self.state != "content":  # inside a call list or outputs
            self.error("E-STREAM-TRUNCATED", "the stream ended inside a tool call or its outputs", position)
            self._close_turn("truncated", position)
            return
        super().finish(position, partial)

    def text(self, s: str, position: int) -> None:
        if not s:
            return
        if not self._turn:
            super().text(s, position)
            return
        mode = self._mode
        if mode == "text":
            self._content.append(s)
            self._emit_delta(s, self._kind or RESPONSE)
        elif mode == "calls":
            self._calls.append(s)
            self._emit_delta(s, TOOL_CALLS)
        elif mode == "after_call":
            if s[0] == "[":
                self._mode = "outputs"
                self._scan = BracketScan()
                self.text(s, position)
            else:
                self._section_text()
                self.text(s, position)
        else:  # outputs: held until the bracket closes, then one Delta
            k = self._scan.feed(s)
            if k < 0:
                self._outputs.append(s)
                return
            self._outputs.append(s[:k])
            self._end_outputs("".join(self._outputs))
            if k < len(s):
                self.text(s[k:], position)

    def control(self, name: str, position: int) -> None:
        self.last_control = name
        if self._skipped:
            self._flush_skipped()
        if self._turn:
            self._turn_control(name, position)
        elif self.state == "content":  # a system / developer / user message
            role = self._h.role if self._h is not None else ""
            if name == ENDS.get(role):
                self.close(self.terminators[name], position)
            elif name in STARTS or name == TURN_START:
                self.error("E-PARSE-UNTERMINATED", "a new message started before this one ended", position)
                self.close("truncated", position)
                self._open_at(name, position)
            else:
                self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a {role} message", position)
        elif name in STARTS or name == TURN_START:
            self._open_at(name, position)
        elif name not in _FRAMING:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} where a message should start", position)

    def _open_at(self, name: str, position: int) -> None:
        """A message (or an assistant turn) opens at its start control ``name``: Apertus has no
        header to read (the base's ``_open(position)`` reads one; this is not an override of it)."""
        if name == TURN_START:
            self._open_turn(position)
        else:
            self._start(Header(role=STARTS[name]), position)

    def _turn_control(self, name: str, position: int) -> None:
        if name == END_TOOLS and self._mode == "calls":
            text = "".join(self._calls)
            self._calls = []
            try:
                calls = parse_calls(text)
            except ValueError as exc:
                self.error("E-CALL-SCHEMA", f"unreadable tool call list ({exc})", position, text)
                calls = (Call("", text),)
            self._blocks.append(Block(TOOL_CALLS, calls=calls, inner=self._inner))
            self._mode = "after_call"
            self.state = "outputs"
            return
        if self._mode == "calls" and name not in (TURN_END, "</s>"):
            self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a tool call list", position)
            return
        self._settle(position)
        if name == INNER or name == OUTER:
            if self._inner == (name == INNER):
                self.error("E-PARSE-STRAY-CONTROL", f"{name} but the section is already "
                           f"{'inner' if self._inner else 'outer'}", position)
            self._inner = name == INNER
            self._begin_text(THOUGHTS if self._inner else RESPONSE, True)
        elif name == TOOLS:
            self._flush_text()
            self._mode = "calls"
            self.state = "calls"
            self.channel, self.visible = CHANNELS[TOOL_CALLS]
        elif name == TURN_END or name == "</s>":
            self._close_turn(self.terminators[name], position)
        elif name in STARTS or name == TURN_START:
            self.error("E-PARSE-UNTERMINATED", "a new message started before this turn ended", position)
            self._close_turn("truncated", position)
            self._open_at(name, position)
        else:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} inside an assistant turn", position)
