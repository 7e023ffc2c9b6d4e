"""ChatML assistant frames read as turns: Qwen3's ``<think>`` block and Qwen2.5's ``<tool_call>`` blocks.

The tags are text (one token or several, never a control): ``ChatML`` writes them
(``chatml.ChatML._tool_call``, ``reasoning.think_block``) and ``TurnReader`` reads them back,
incrementally, for the frame machine (stream deltas, errors) and whole for the OpenAI view
(``ChatML.turn_of``: the same reader fed the message's content at once).  A frame's content
(after ``<|im_start|>assistant\\n``) reads as::

    [<think>\\n REASONING \\n</think>\\n\\n]  ANSWER  [\\n<tool_call>\\n{"name": N, "arguments": A}\\n</tool_call>]...

* ``<think>`` opens the reasoning only at the very start of the content, and only when the
  encoder thinks (``reasoning="think"``, Qwen3's layout); the newlines right after ``<think>``,
  before ``</think>`` and after it are layout (Qwen3's template strips them, so does
  ``think_block``).  Inside the reasoning only ``</think>`` is markup (a ``<tool_call>`` there
  is the model's words).  With ``reasoning="error"`` / ``"drop"`` the tags are content text.
  A completion that starts *inside* the reasoning (a prompt that prefilled ``<think>\\n``, as
  Qwen3.5 / Qwen3-Thinking-2507 templates do) is read right when the reader sees that
  prefill: give the prompt to the decoder (``enc.decoder(prefill=prompt_ids)``,
  ``hf_streamer(prefill=True)``); from the completion alone its reasoning is content.
* ``<tool_call>`` opens a call anywhere in the answer; the call is the JSON object between
  it and ``</tool_call>``: ``name`` (a non-empty string) and ``arguments`` (any JSON).  Its
  arguments are the object's text verbatim when the call is laid out as ocml renders it,
  else the value re-serialised (``json.dumps``), so a rendered call reads back byte for byte.
  One ``\\n`` right before a call is layout (the renderer's separator after the text), and
  so is whitespace between calls and after the last one; other text after a call is content
  again (a new part, joined with ``"\\n"`` as ``to_openai`` joins parts).
* A call that cannot be read (not JSON, no name, no arguments, or ``</tool_call>`` missing
  when the frame ends) stays in the content as the text it is, never dropped, and is
  reported: ``E-CALL-SCHEMA``.  A reasoning block the frame ends inside (no ``</think>``)
  stays reasoning, reported ``E-PARSE-UNTERMINATED``.  A frame cut short (max tokens, a stop
  string, cancel: reason ``truncated``) reports neither: what was held goes out as it is
  (an unfinished call as content).

Streaming: ``feed`` returns pieces ``(kind, text)`` - ``answer`` (content), ``think``
(reasoning), ``markup`` (tags, layout, a whole call) - and holds back only what could still
be markup: a proper prefix of the tag it watches for, the newlines before it, whitespace
after a call, a call until its ``</tool_call>``.  So no partial tag reaches the content
under any chunking, and the pieces of any chunking, merged, are those of the whole text.
The parts (``ChatMLTurn.openai_parts``) are the runs of one kind between markup, so a
stream's deltas cut the message where ``to_openai`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...messages import Message

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
#: piece kinds; a call is a part of its own (``CALL``), sent as markup
ANSWER, THINK, MARKUP, CALL = "answer", "think", "markup", "call"
#: the Delta (channel, visible) of each piece kind: content, reasoning, hidden markup
CHANNELS: dict[str, tuple[str | None, bool]] = {ANSWER: (None, True), THINK: ("analysis", False),
                                                MARKUP: ("commentary", False)}
# reader states
_START, _THINK, _LEAD, _ANSWER, _CALL = "start", "think", "lead", "answer", "call"
_CALL_BODY = len(CALL_OPEN)
FUNCTIONS = "functions."


_PLAIN: dict[int, tuple[list, list]] = {}


def plain_table(fast_text: list) -> list:
    """The scanner's ``fast_text`` table without the texts that could touch markup (a ``<``, a
    trailing newline): the stream decoder's lean path while the reader is ``plain`` (built once
    per table)."""
    got = _PLAIN.get(id(fast_text))
    if got is None or got[0] is not fast_text:
        got = (fast_text, [t if t is not None and "<" not in t and t[-1:] != "\n" else None for t in fast_text])
        _PLAIN[id(fast_text)] = got
    return got[1]


def read_call(body: str) -> tuple[str, str] | str:
    """The body of a ``<tool_call>`` -> ``(name, arguments JSON text)``, or why it is unreadable."""
    text = body.strip()
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(obj, dict):
        return "not a JSON object"
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return 'no "name" string'
    if "arguments" not in obj:
        return 'no "arguments"'
    # the renderer's layout: the arguments' own text (not re-serialised: the ids round trip)
    head = '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": '
    if text.startswith(head) and text.endswith("}"):
        raw = text[len(head):-1]
        try:
            json.loads(raw)
        except ValueError:
            pass
        else:
            return name, raw
    return name, json.dumps(obj["arguments"], ensure_ascii=False)


def _held(text: str, tag: str, newlines: int) -> int:
    """How many characters at the end of ``text`` could still become ``tag`` (or the
    newlines before it that are layout): a proper prefix of ``tag``, after at most
    ``newlines`` newlines (-1: any number)."""
    if text[-1:] != "\n" and "<" not in text[1 - len(tag):]:
        return 0  # every proper prefix of a tag starts with "<" (the common case: one check)
    n = 0
    for j in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:j]):
            n = j
            break
    k = len(text) - n
    while k > 0 and text[k - 1] == "\n" and (newlines < 0 or len(text) - n - k < newlines):
        k -= 1
    return len(text) - k


@dataclass(frozen=True, slots=True)
class ChatMLTurn:
    """An assistant frame read as a turn (``Message.structured`` in the OpenAI view): its parts."""

    parts: tuple[Message, ...] = field(default_factory=tuple)

    def openai_parts(self) -> tuple[Message, ...]:
        """Reasoning -> ``analysis`` messages, answer text -> channel-less ones, each call -> a
        message to ``functions.NAME`` whose content is the arguments' text (see the module docstring)."""
        return self.parts

    def to_dict(self) -> dict[str, Any]:
        return {"parts": [m.to_dict() for m in self.parts]}


class TurnReader:
    """One assistant frame's content, incrementally (see the module docstring)."""

    __slots__ = ("state", "held", "after_call", "fresh", "problems", "_parts", "_last", "_call", "_seek")

    def __init__(self, think: bool) -> None:
        self.state = _START if think else _ANSWER
        self.held = ""            # text not classified yet (a call's text: ``_call``)
        self.after_call = False   # in the answer, a call ended and only whitespace came since
        self.fresh = True         # no reasoning text yet (its leading newlines are layout)
        #: (code, message) of what could not be read, in order
        self.problems: list[tuple[str, str]] = []
        self._parts: list[list[Any]] = []   # [kind, [texts]] or [CALL, name, arguments]
        self._last: str | None = None
        self._call: list[str] = []
        self._seek = 0            # where to look for </tool_call> in the call's text

    @property
    def plain(self) -> bool:
        """Text with no ``<`` that does not end in a newline only extends the current part (nothing
        held, no layout to strip): the decoder may append it without the reader."""
        st = self.state
        return not self.held and ((st == _ANSWER and not self.after_call) or (st == _THINK and not self.fresh))

    @property
    def kind(self) -> str:
        """The kind of the text being read: ``think``, ``markup`` (inside a call) or ``answer``."""
        st = self.state
        return THINK if st == _THINK else MARKUP if st == _CALL else ANSWER

    # -- input ---------------------------------------------------------------------------------
    def feed(self, s: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if self.state == _CALL:
            self._call_text(s, out)
            return out
        text = self.held + s if self.held else s
        self.held = ""
        while text:
            text = self._step(text, out)
        return out

    def close(self, reason: str, drop_newline: bool = False) -> list[tuple[str, str]]:
        """The frame ended (``reason``: ``end``, ``eos``, ``truncated``...): what was held goes out.
        ``drop_newline``: the content's last newline is layout (ChatML's ``v0.1-literal``)."""
        out: list[tuple[str, str]] = []
        cut = reason == "truncated"
        st = self.state
        tail = ""
        if st == _CALL:
            text = "".join(self._call)
            self._call = []
            if drop_newline and text.endswith("\n"):
                text, tail = text[:-1], "\n"
            if not cut:
                self.problems.append(("E-CALL-SCHEMA", f"{CALL_OPEN} without {CALL_CLOSE} at the end of the "
                                      f"message: kept as content: {text[:60]!r}"))
            self._emit(ANSWER, text, out)
        else:
            held = self.held
            self.held = ""
            if drop_newline and held.endswith("\n"):
                held, tail = held[:-1], "\n"
            if st == _THINK:
                if not cut:
                    self.problems.append(("E-PARSE-UNTERMINATED", f"{THINK_OPEN} without {THINK_CLOSE} at the "
                                          "end of the message: read as reasoning"))
                self._think(held, not cut, out)
            elif st == _ANSWER and self.after_call and (not held or held.isspace()):
                self._emit(MARKUP, held, out)
            else:
                self._emit(ANSWER, held, out)
        self._emit(MARKUP, tail, out)
        self.state = _ANSWER
        return out

    def parts(self) -> tuple[Message, ...]:
        """The parts read so far (``ChatMLTurn.openai_parts``)."""
        out = []
        for p in self._parts:
            if p[0] == CALL:
                out.append(Message(role="assistant", content=p[2], recipient=FUNCTIONS + p[1]))
            else:
                out.append(Message(role="assistant", content="".join(p[1]),
                                   channel="analysis" if p[0] == THINK else None))
        return tuple(out)

    # -- states --------------------------------------------------------------------------------
    def _step(self, text: str, out: list[tuple[str, str]]) -> str:
        st = self.state
        if st == _ANSWER:
            k = text.find(CALL_OPEN)
            if k >= 0:
                self._before_call(text[:k], out)
                self.state = _CALL
                self._call = [CALL_OPEN]
                self._seek = _CALL_BODY
                self._call_text(text[k + _CALL_BODY:], out)
                return ""
            if self.after_call:
                if text.isspace():
                    self.held = text  # layout if a call or the end follows
                    return ""
                self.after_call = False  # text after a call: content again
            n = _held(text, CALL_OPEN, 1)
            self._emit(ANSWER, text[:len(text) - n], out)
            self.held = text[len(text) - n:]
            return ""
        if st == _THINK:
            k = text.find(THINK_CLOSE)
            if k >= 0:
                self._think(text[:k], True, out)
                self._emit(MARKUP, THINK_CLOSE, out)
                self.state = _LEAD
                return text[k + len(THINK_CLOSE):]
            n = _held(text, THINK_CLOSE, -1)
            self._think(text[:len(text) - n], False, out)
            self.held = text[len(text) - n:]
            return ""
        if st == _LEAD:  # the newlines after </think> are layout
            rest = text.lstrip("\n")
            self._emit(MARKUP, text[:len(text) - len(rest)], out)
            if rest:
                self.state = _ANSWER
            return rest
        # _START: <think> opens the reasoning only at the very start
        if text.startswith(THINK_OPEN):
            self._emit(MARKUP, THINK_OPEN, out)
            self.state = _THINK
            return text[len(THINK_OPEN):]
        if THINK_OPEN.startswith(text):
            self.held = text
            return ""
        self.state = _ANSWER
        return text

    def _think(self, text: str, last: bool, out: list[tuple[str, str]]) -> None:
        """Reasoning text; ``last``: the block ends after it (its trailing newlines are layout)."""
        if self.fresh:
            body = text.lstrip("\n")
            self._emit(MARKUP, text[:len(text) - len(body)], out)
            text = body
            self.fresh = not text
        if last:
            body = text.rstrip("\n")
            self._emit(THINK, body, out)
            self._emit(MARKUP, text[len(body):], out)
        else:
            self._emit(THINK, text, out)

    def _before_call(self, text: str, out: list[tuple[str, str]]) -> None:
        if self.after_call and (not text or text.isspace()):
            self._emit(MARKUP, text, out)  # between calls: layout
        elif text.endswith("\n"):
            self._emit(ANSWER, text[:-1], out)  # the renderer's "\n" before the call
            self._emit(MARKUP, "\n", out)
        else:
            self._emit(ANSWER, text, out)
        self.after_call = False

    def _call_text(self, s: str, out: list[tuple[str, str]]) -> None:
        if s:
            self._call.append(s)
        text = "".join(self._call) if len(self._call) > 1 else self._call[0]
        k = text.find(CALL_CLOSE, self._seek)
        if k < 0:
            self._call = [text]
            self._seek = max(_CALL_BODY, len(text) - len(CALL_CLOSE) + 1)
            return
        end = k + len(CALL_CLOSE)
        whole, rest = text[:end], text[end:]
        self._call = []
        self.state = _ANSWER
        got = read_call(text[_CALL_BODY:k])
        if isinstance(got, str):
            self.problems.append(("E-CALL-SCHEMA", f"unreadable tool call ({got}): kept as content: {whole[:60]!r}"))
            self._emit(ANSWER, whole, out)
        else:
            self._emit(MARKUP, whole, out)
            self._parts.append([CALL, got[0], got[1]])
            self._last = CALL
            self.after_call = True
        while rest:
            rest = self._step(rest, out)

    def _emit(self, kind: str, text: str, out: list[tuple[str, str]]) -> None:
        if not text:
            return
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
        if kind == MARKUP:
            self._last = MARKUP
        elif kind == self._last:
            self._parts[-1][1].append(text)
        else:
            self._parts.append([kind, [text]])
            self._last = kind


def read_turn(content: str, *, think: bool, end: str) -> ChatMLTurn:
    """A whole frame's content -> its turn (the reader fed at once; ``end``: the frame's end reason)."""
    r = TurnReader(think)
    r.feed(content)
    r.close(end)
    return ChatMLTurn(r.parts())
