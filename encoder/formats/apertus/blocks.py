"""Apertus assistant turns as blocks: the data model, the input shapes, the turn layout.

A turn (``<|assistant_start|>`` ... ``<|assistant_end|>``) is one ``Message`` whose
``structured`` is a ``Turn``: blocks ``thoughts`` (inner section), ``response`` (outer),
``tool_calls`` and ``tool_outputs`` (in the section they appear in).  Every assistant and
tool message between two user messages goes into one turn, as the reference template merges
them.  ``Message.content`` of a turn is its response text (what a user sees).

Layout of the blocks (the reference template's, without whitespace):
``thoughts`` -> ``<|inner_prefix|>`` (when the inner section is not open) + text;
``response`` -> ``<|inner_suffix|>`` (when it is open) + text;
``tool_calls`` -> ``<|tools_prefix|>[{"NAME": ARGS}, ...]<|tools_suffix|>`` (a single
``display_answers`` call that is not its message's first block closes the inner section
first); ``tool_outputs`` -> ``[OUT1, OUT2]`` with no control token, never trained.

The layout is ambiguous in two places, which ocml refuses at render time
(``E-UNREPRESENTABLE`` / ``E-CALL-SCHEMA``) so that every rendered turn parses back exactly:
tool outputs must come right after a tool call (the parser reads a ``[`` right after
``<|tools_suffix|>`` as outputs), and text right after a call with no outputs must not
start with ``[``.  Outputs are read back by a JSON-aware bracket scan and split at the
top-level ``", "``: a round trip is exact for JSON outputs (what tools return) and for
text without brackets, quotes or ``", "``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...arguments import check_json
from ...errors import CallSchemaError, InputError, UnrepresentableError
from ...messages import Message
from ...pieces import CTL, OFF, TXT, Piece

THOUGHTS, RESPONSE, TOOL_CALLS, TOOL_OUTPUTS = "thoughts", "response", "tool_calls", "tool_outputs"
KINDS = (THOUGHTS, TOOL_CALLS, TOOL_OUTPUTS, RESPONSE)
INNER, OUTER = "<|inner_prefix|>", "<|inner_suffix|>"
#: the control that opens and the one that ends each role's frame (render writes them, the frame
#: machine reads them; the reason each end gives is the token data's ``end_reasons``)
FRAME_STARTS = {"system": "<|system_start|>", "developer": "<|developer_start|>", "user": "<|user_start|>",
                "assistant": "<|assistant_start|>"}
FRAME_ENDS = {"system": "<|system_end|>", "developer": "<|developer_end|>", "user": "<|user_end|>",
              "assistant": "<|assistant_end|>"}
TOOLS, END_TOOLS = "<|tools_prefix|>", "<|tools_suffix|>"
OUTPUT_SEPARATOR = ", "
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: str  # JSON text, inserted as it is


@dataclass(frozen=True, slots=True)
class Block:
    kind: str
    text: str = ""
    calls: tuple[Call, ...] = ()
    outputs: tuple[str, ...] = ()
    #: tool calls / outputs: inside the inner section?  (thoughts: always; response: never)
    inner: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.kind in (THOUGHTS, RESPONSE):
            return {"type": self.kind, "text": self.text}
        if self.kind == TOOL_CALLS:
            return {"type": self.kind, "calls": [{"name": c.name, "arguments": c.arguments} for c in self.calls]}
        return {"type": self.kind, "outputs": [{"output": o} for o in self.outputs]}


@dataclass(frozen=True, slots=True)
class Turn:
    """The blocks of one assistant turn (``Message.structured``)."""

    blocks: tuple[Block, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Apertus mapping content: ``{"blocks": [...]}``."""
        return {"blocks": [b.to_dict() for b in self.blocks]}

    @property
    def response(self) -> str:
        return "".join(b.text for b in self.blocks if b.kind == RESPONSE)

    @property
    def waiting(self) -> bool:
        """Does the turn end with a tool call or its outputs (the model goes on after them)?"""
        return bool(self.blocks) and self.blocks[-1].kind in (TOOL_CALLS, TOOL_OUTPUTS)

    def openai_parts(self) -> tuple[Message, ...]:
        """The turn as the plain messages an OpenAI assistant message is built from
        (``ocml.encoder.openai_message``): thoughts -> an ``analysis`` message, response -> a
        ``final`` one, each call -> a ``commentary`` message to ``functions.NAME`` whose content
        is the arguments' exact text, tool outputs -> a ``tool`` message (the tools' words,
        not the model's: no place in the assistant message).  Empty text blocks give nothing,
        and a text block right after another of its kind (only empty blocks between them)
        continues it, so the parts are what the stream's deltas show (one part per run of
        deltas of a kind)."""
        parts: list[Message] = []
        last: str | None = None  # the kind of the last block that showed something
        for b in self.blocks:
            if b.kind in (THOUGHTS, RESPONSE):
                if not b.text:
                    continue
                if last == b.kind:
                    parts[-1] = parts[-1].with_(content=parts[-1].content + b.text)
                else:
                    parts.append(Message(role="assistant", content=b.text,
                                         channel="analysis" if b.kind == THOUGHTS else "final"))
            elif b.kind == TOOL_CALLS:
                parts += [Message(role="assistant", content=c.arguments, channel="commentary",
                                  recipient="functions." + c.name if c.name else "") for c in b.calls]
            else:
                parts.append(Message(role="tool", content=outputs_text_lenient(b.outputs)))
            last = b.kind
        return tuple(parts)


# -- input shapes -------------------------------------------------------------------------------

def read_messages(raws: Sequence[Any]) -> list[Any]:
    """Apertus mapping content -> what the shared adapters read: system ``{"text"}`` and user
    ``{"parts"}`` become strings, assistant ``{"blocks"}`` a ``Message`` with a ``Turn``.
    Enforces the format's consistency rule: all assistant messages have the same shape."""
    out: list[Any] = []
    shape: tuple[str, int] | None = None
    for k, raw in enumerate(raws):
        if not isinstance(raw, Mapping):
            out.append(raw)
            continue
        role = raw.get("role")
        content = raw.get("content")
        if role == "assistant" and ("content" in raw or "tool_calls" in raw):
            mine = "blocks" if isinstance(content, Mapping) else "string"
            if shape is None:
                shape = (mine, k)
            elif shape[0] != mine:
                raise InputError(f"assistant message {k} has {mine} content but assistant message {shape[1]} has "
                                 f"{shape[0]} content", code="E-APERTUS-MIXED-CONTENT", index=k, field="content",
                                 hint="Apertus: every assistant message of a conversation is a string, or every one "
                                      "is {'blocks': [...]}")
        if not isinstance(content, Mapping):
            out.append(raw)
        elif role == "system" and set(content) == {"text"}:
            out.append({**raw, "content": _string(content["text"], k, "content.text")})
        elif role == "user" and set(content) == {"parts"}:
            out.append({**raw, "content": _parts(content["parts"], k)})
        elif role == "assistant" and set(content) == {"blocks"}:
            out.append(_blocks_message(raw, k))
        else:
            want = {"system": "{'text': ...}", "user": "{'parts': [...]}", "assistant": "{'blocks': [...]}"}
            raise InputError(f"{role} content is a mapping with keys {sorted(content)}", index=k, field="content",
                             hint=f"Apertus {role} mapping content is {want.get(str(role), 'a string')}")
    return out


def _string(value: Any, index: int, field: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{field} must be a string, got {type(value).__name__}", index=index, field=field)
    return value


def _parts(parts: Any, index: int) -> str:
    if not isinstance(parts, Sequence) or isinstance(parts, (str, bytes)):
        raise InputError("content.parts must be a list", index=index, field="content.parts")
    texts = []
    for j, p in enumerate(parts):
        kind = p.get("type") if isinstance(p, Mapping) else None
        if kind != "text":
            raise InputError(f"user part {j} has type {kind!r}", index=index, field=f"content.parts[{j}].type",
                             hint="Apertus user parts are {'type': 'text', 'text': ...}")
        texts.append(_string(p.get("text"), index, f"content.parts[{j}].text"))
    return "".join(texts)


def _blocks_message(raw: Mapping[str, Any], index: int) -> Message:
    extra = set(raw) - {"role", "content", "tool_calls", "name"}
    if extra:
        raise InputError(f"unknown keys {sorted(extra)} on an Apertus blocks message", index=index, field=sorted(extra)[0])
    blocks = raw["content"]["blocks"]
    if not isinstance(blocks, Sequence) or isinstance(blocks, (str, bytes)):
        raise InputError("content.blocks must be a list", index=index, field="content.blocks")
    out: list[Block] = []
    for j, b in enumerate(blocks):
        where = f"content.blocks[{j}]"
        kind = b.get("type") if isinstance(b, Mapping) else None
        if kind in (THOUGHTS, RESPONSE):
            out.append(Block(kind, _string(b.get("text"), index, where + ".text")))
        elif kind == TOOL_CALLS:
            listed = b.get("calls")
            if not isinstance(listed, Sequence) or isinstance(listed, (str, bytes)) or not listed:
                raise InputError("a tool_calls block needs a non-empty 'calls' list", index=index, field=where + ".calls")
            out.append(Block(kind, calls=tuple(_call(c, index, f"{where}.calls[{c_i}]") for c_i, c in enumerate(listed))))
        elif kind == TOOL_OUTPUTS:
            outs = b.get("outputs")
            if not isinstance(outs, Sequence) or isinstance(outs, (str, bytes)):
                raise InputError("a tool_outputs block needs an 'outputs' list", index=index, field=where + ".outputs")
            out.append(Block(kind, outputs=tuple(
                _string(o.get("output") if isinstance(o, Mapping) else o, index, f"{where}.outputs[{o_i}].output")
                for o_i, o in enumerate(outs))))
        else:
            raise InputError(f"block {j} has type {kind!r}", index=index, field=where + ".type",
                             hint="block types: " + ", ".join(KINDS))
    calls: list[Call] = []
    for c_i, c in enumerate(raw.get("tool_calls") or ()):  # OpenAI-style calls after the blocks: one group
        fn = c.get("function") if isinstance(c, Mapping) else None
        if not isinstance(fn, Mapping):
            raise InputError("a tool call needs 'function'", index=index, field=f"tool_calls[{c_i}]")
        calls.append(_call(fn, index, f"tool_calls[{c_i}].function"))
    if calls:
        out.append(Block(TOOL_CALLS, calls=tuple(calls)))
    return Message(role="assistant", content="", structured=Turn(tuple(out)), source=index, source_field="content")


def _call(c: Any, index: int, where: str) -> Call:
    if not isinstance(c, Mapping):
        raise InputError("a call must be {'name': ..., 'arguments': ...}", index=index, field=where)
    name = _string(c.get("name"), index, where + ".name")
    args = c.get("arguments", "{}")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)  # serialised once (llama.cpp's template double-encodes strings)
    return Call(name, args)


# -- turn building ------------------------------------------------------------------------------

class TurnBuilder:
    """Blocks of one turn from the messages that make it, with the template's section rules;
    merges what renders as one block and drops what renders as nothing, so that the turn is
    exactly what parsing its ids gives back."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.inner = False
        self._outputs_from_messages = False
        self._call_source: int | None = None  # input message of the last tool call (OpenAI calls group by it)
        self.first: Message | None = None

    def add_message(self, m: Message, index: int) -> None:
        if self.first is None:
            self.first = m
        if m.role == "tool":
            self.outputs((m.content,), index, from_messages=True)
        elif isinstance(m.structured, Turn):
            for j, b in enumerate(m.structured.blocks):
                self.block(b, index, first_in_message=j == 0)
        elif m.channel == "analysis":
            self.text(THOUGHTS, m.content, index)
        elif m.recipient is not None:
            name = m.recipient[len("functions."):] if m.recipient.startswith("functions.") else m.recipient
            call = Call(name, m.content or "{}")
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last.kind == TOOL_CALLS and self._call_source == m.source:
                self.blocks[-1] = Block(TOOL_CALLS, calls=last.calls + (call,), inner=last.inner)
            else:
                self.block(Block(TOOL_CALLS, calls=(call,)), index, first_in_message=True)
            self._call_source = m.source
            return
        else:
            self.text(RESPONSE, m.content, index)
        self._call_source = None

    def block(self, b: Block, index: int, first_in_message: bool) -> None:
        if b.kind in (THOUGHTS, RESPONSE):
            self.text(b.kind, b.text, index)
        elif b.kind == TOOL_CALLS:
            if self.inner and not first_in_message and len(b.calls) == 1 and b.calls[0].name == "display_answers":
                # the template closes the inner section before a final display_answers call: the
                # same ids as an empty response block, which is how they read back
                self.text(RESPONSE, "", index)
            self.blocks.append(Block(TOOL_CALLS, calls=b.calls, inner=self.inner))
            self._outputs_from_messages = False
        else:
            self.outputs(b.outputs, index, from_messages=False)

    def text(self, kind: str, text: str, index: int) -> None:
        last = self.blocks[-1] if self.blocks else None
        opens = (kind == THOUGHTS) != self.inner  # a section change: a control is rendered
        if last is not None and last.kind == kind and not opens:
            self.blocks[-1] = Block(kind, last.text + text)
        elif opens or text:
            if not opens and last is not None and last.kind == TOOL_CALLS and text.startswith("["):
                raise UnrepresentableError(f"{kind} text right after a tool call starts with '[': it would read "
                                           "as the tool outputs", index=index, field="content",
                                           hint="add the tool outputs first, or start the text differently")
            self.blocks.append(Block(kind, text))
        self.inner = kind == THOUGHTS

    def outputs(self, outputs: tuple[str, ...], index: int, from_messages: bool) -> None:
        last = self.blocks[-1] if self.blocks else None
        if last is not None and last.kind == TOOL_OUTPUTS and from_messages and self._outputs_from_messages:
            self.blocks[-1] = Block(TOOL_OUTPUTS, outputs=last.outputs + outputs, inner=last.inner)
            return
        if last is None or last.kind != TOOL_CALLS:
            raise CallSchemaError("tool outputs must come right after the tool call they answer", index=index,
                                  field="content", hint="Apertus writes outputs as [..] right after <|tools_suffix|>")
        self.blocks.append(Block(TOOL_OUTPUTS, outputs=outputs, inner=self.inner))
        self._outputs_from_messages = from_messages

    def message(self) -> Message:
        m = self.first
        assert m is not None
        turn = Turn(tuple(self.blocks))
        return Message(role="assistant", content=turn.response, structured=turn, train=m.train, source=m.source,
                       source_field=m.source_field)


# -- pieces ---------------------------------------------------------------------------------------

def turn_pieces(turn: Turn, escape: Any, validate: bool) -> list[Piece]:
    """The body pieces of a turn (``escape``: the format's text-control escaping)."""
    out: list[Piece] = []
    inner = False
    for b in turn.blocks:
        if b.kind == THOUGHTS:
            if not inner:
                out.append((CTL, INNER))
                inner = True
            out.append((TXT, escape(b.text)))
        elif b.kind == RESPONSE:
            if inner:
                out.append((CTL, OUTER))
                inner = False
            out.append((TXT, escape(b.text)))
        elif b.kind == TOOL_CALLS:
            if inner and not b.inner:
                out.append((CTL, OUTER))
                inner = False
            elif b.inner and not inner:
                out.append((CTL, INNER))
                inner = True
            if validate:
                for c in b.calls:
                    check_call(c)
            text = "[" + ", ".join('{"' + c.name + '": ' + c.arguments + "}" for c in b.calls) + "]"
            out += ((CTL, TOOLS), (TXT, escape(text)), (CTL, END_TOOLS))
        else:
            out.append((OFF, escape(outputs_text(b.outputs))))
    return out


def outputs_text(outputs: tuple[str, ...]) -> str:
    """``[A, B]``, refused (``E-UNREPRESENTABLE``) when a reader would not find the same outputs
    in it: the list must close at its last ``]`` (``BracketScan``) and split back into them
    (an output ``]`` or ``"`` unbalanced would end the list early and become response text)."""
    text = "[" + OUTPUT_SEPARATOR.join(outputs) + "]"
    if any(ch in o for o in outputs for ch in '[]{}"'):
        if BracketScan().feed(text) != len(text) or split_outputs(text) != tuple(outputs):
            raise UnrepresentableError("a tool output's brackets or quotes would end the output list early: it "
                                       "would not read back as the same outputs", field="content",
                                       hint="Apertus writes outputs as [A, B]: give each output as JSON (or text "
                                            "with balanced brackets and quotes)")
    return text


def outputs_text_lenient(outputs: tuple[str, ...]) -> str:
    """``[A, B]`` as a reader found them (no check: for reporting what was read)."""
    return "[" + OUTPUT_SEPARATOR.join(outputs) + "]"


def check_call(c: Call) -> None:
    if not _TOOL_NAME.match(c.name):
        raise CallSchemaError(f"tool name {c.name!r} is empty or has characters outside [A-Za-z0-9_.-]",
                              field="content", hint="the name is written inside a JSON string as it is")
    # the one argument rule of every format (encoder.arguments): Apertus inserts them into a JSON array as they are
    check_json(c.arguments, index=None, what=f"arguments of {c.name!r}")


# -- reading text back ------------------------------------------------------------------------------

class BracketScan:
    """Finds the ``]`` that closes a ``[`` (JSON strings and nesting aware), fed piece by piece."""

    __slots__ = ("depth", "in_string", "escaped")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False

    def feed(self, s: str) -> int:
        """Index in ``s`` just after the closing bracket, or -1."""
        depth, in_string, escaped = self.depth, self.in_string, self.escaped
        for k, ch in enumerate(s):
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    self.depth, self.in_string, self.escaped = depth, in_string, escaped
                    return k + 1
        self.depth, self.in_string, self.escaped = depth, in_string, escaped
        return -1

    def skip(self, s: str) -> None:
        """Feed all of ``s``, on past closing brackets (depth may go below zero)."""
        while (k := self.feed(s)) >= 0:
            s = s[k:]


def split_outputs(text: str) -> tuple[str, ...]:
    """``[A, B]`` -> ``("A", "B")``: split at ``", "`` outside strings and nested brackets."""
    scan = BracketScan()
    scan.depth = 1  # inside the list's "["
    out: list[str] = []
    item: list[str] = []
    for k, piece in enumerate(text[1:-1].split(OUTPUT_SEPARATOR)):
        if k:
            if scan.depth == 1 and not scan.in_string:  # a separator between items
                out.append("".join(item))
                item.clear()
            else:
                item.append(OUTPUT_SEPARATOR)
                scan.skip(OUTPUT_SEPARATOR)
        item.append(piece)
        scan.skip(piece)
    out.append("".join(item))
    return tuple(out)


_DECODER = json.JSONDecoder()


def parse_calls(text: str) -> tuple[Call, ...]:
    """``[{"NAME": ARGS}, ...]`` -> calls, each ``ARGS`` as its exact text; ValueError if malformed."""
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("a tool call list is [...]")
    calls = []
    pos = 1
    while True:
        if not text.startswith('{"', pos):
            raise ValueError(f"expected '{{\"' at {pos}")
        end = text.find('": ', pos + 2)
        if end < 0:
            raise ValueError("no '\": ' after the tool name")
        name = text[pos + 2:end]
        a = end + 3
        _, b = _DECODER.raw_decode(text, a)
        if not text.startswith("}", b):
            raise ValueError(f"expected '}}' at {b}")
        calls.append(Call(name, text[a:b]))
        pos = b + 1
        if text.startswith(", ", pos):
            pos += 2
        elif pos == len(text) - 1:
            return tuple(calls)
        else:
            raise ValueError(f"expected ', ' or ']' at {pos}")
