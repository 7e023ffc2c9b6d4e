"""Llama 3 (Meta), format ``llama3`` (aliases ``llama-3``, ``llama3.1``, ``llama3.2``, ``llama3.3``).

Modules: ``format`` (this one: normalising and planning frames), ``calls`` (tool calls written and read),
``frames`` (the frame machine).  References: Meta's llama-models 0.3.0 (``llama3/tokenizer.model``:
the ``llama3`` encoding, specials at Meta's ids 128000+; ``llama3/chat_format.py``: ``ChatFormat``)
and the HF templates the trl wheel ships (``llama3.jinja``, ``llama3_1.jinja``, ``llama3_2.jinja``).

Layout: ``<|begin_of_text|>``, then per message ``<|start_header_id|>ROLE<|end_header_id|>\\n\\n``
CONTENT ``<|eot_id|>`` (``<|eom_id|>`` after a built-in tool's call), content trimmed as the
templates trim it (tool results are not).  ``system_header=True`` (default: 3.1 / 3.2 / 3.3) writes
the templates' system frame: ``Environment: ipython`` (with tools), ``Tools: ...`` (built-in
tools but ``code_interpreter``), ``Cutting Knowledge Date: {knowledge_cutoff}``, ``Today Date:
{date}``, a blank line, then the system message's text; tool definitions go in front of the
first user message (``tools_in_user_message=True``, the templates' default) or in the system frame.
``system_header=False`` is ``llama3.jinja`` (3.0): messages as given, no tools.  Tool results are
role ``ipython``.  Generation prompt: ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``.

Options: ``date`` (default ``26 Jul 2024``, the 3.1 template's; the 3.2 template writes today's
date: pass it), ``knowledge_cutoff``, ``builtin_tools``, ``tools_in_user_message``,
``tool_results`` (``json``, the HF templates: a string result is written as a JSON string;
``raw``: as Meta's ``ChatFormat`` writes it).

Ids: whole-run encoding (``Format.merge_text_runs``): ``\\n\\n`` and the content are one run, as
the HF tokenizer encodes the template's text.  Mask: content and end token of assistant frames.

Differences from the references, all deliberate (the format page lists them):
- content is always text: ``<|eot_id|>`` typed into content never becomes the control (Meta's
  ``ChatFormat`` agrees; the HF templates' text would);
- one call per assistant message, and no text beside it (the templates raise / drop it):
  ``E-CALL-SCHEMA`` / ``E-UNREPRESENTABLE``; a message's ``name`` is ``E-UNREPRESENTABLE``;
- call arguments given as a JSON string are written as that JSON (the templates' ``tojson``
  double-encodes strings); Meta's ``ChatFormat`` writes ``{"type": "function", "name": ...}``;
- reasoning has no place: ``E-INPUT-REASONING``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from ...errors import CallSchemaError, HeaderError, InputError, UnrepresentableError
from ...grammar.headers import Header, HeaderStyle
from ...grammar.roles import RoleGrammar
from ...messages import Conversation, Message
from ...plan import CTL, TXT, MessagePlan, Piece
from ..base import Format, PlanContext
from ..strategies import TextLayout, TranscriptStyle, TurnShape
from .calls import PYTHON_TAG, Llama3Frame, builtin_call_text, call_text, read_turn
from .frames import END_HEADER, LEAD, START, Llama3Machine

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer

    from ...read.frames import FrameMachine
    from ...masks import Flags, MaskPolicy

BOS, EOT, EOM = "<|begin_of_text|>", "<|eot_id|>", "<|eom_id|>"
ROLES = RoleGrammar(("system", "user", "assistant", "ipython"))
DEFAULT_DATE = "26 Jul 2024"
DEFAULT_CUTOFF = "December 2023"
_CALL_FORMAT = ('Respond in the format {"name": function name, "parameters": dictionary of argument name and its '
                'value}.Do not use variables.\n\n')
_TOOLS_USER = ("Given the following functions, please respond with a JSON for a function call with its proper "
               "arguments that best answers the given prompt.\n\n" + _CALL_FORMAT)
_TOOLS_SYSTEM = ("You have access to the following functions. To call a function, please respond with JSON for a "
                 "function call." + _CALL_FORMAT)


class Llama3(Format):
    name: ClassVar[str] = "llama3"
    header_style: ClassVar[HeaderStyle] = HeaderStyle(ROLES)
    #: whole-run ids: ``\n\n`` and the content are one run, as the HF tokenizer encodes the template's text
    text_layout: ClassVar[TextLayout] = TextLayout(whole_runs=True)
    transcript: ClassVar[TranscriptStyle] = TranscriptStyle(joiner="")
    #: the OpenAI view reads an assistant frame as a turn (``turn_of``: its answer or its call); the
    #: CoT policy applies before ``normalize`` (``cot="drop-all"`` leaves reasoning out; any
    #: reasoning kept is ``E-INPUT-REASONING``: Llama 3 has no place for it)
    turns: ClassVar[TurnShape] = TurnShape(blocks=True, inline_reasoning=True)

    def __init__(self, tokenizer: Tokenizer, *, validate_bodies: bool = True, system_header: bool = True,
                 date: str = DEFAULT_DATE, knowledge_cutoff: str = DEFAULT_CUTOFF,
                 builtin_tools: Sequence[str] = (), tools_in_user_message: bool = True,
                 tool_results: str = "json") -> None:
        super().__init__(tokenizer, validate_bodies=validate_bodies)
        for key, val in (("system_header", system_header), ("tools_in_user_message", tools_in_user_message)):
            if type(val) is not bool:
                raise InputError(f"{key} must be True or False, got {val!r}", field=key)
        for key, text in (("date", date), ("knowledge_cutoff", knowledge_cutoff)):
            if not isinstance(text, str):
                raise InputError(f"{key} must be a string, got {text!r}", field=key, hint="e.g. date='26 Jul 2024'")
        if isinstance(builtin_tools, str) or not all(isinstance(t, str) for t in builtin_tools):
            raise InputError("builtin_tools must be a list of tool names", field="builtin_tools",
                             hint="e.g. ['brave_search', 'wolfram_alpha']")
        if tool_results not in ("json", "raw"):
            raise InputError(f"tool_results must be 'json' or 'raw', got {tool_results!r}", field="tool_results",
                             hint="'json': a string result as a JSON string (the HF templates); 'raw': as given "
                                  "(Meta's ChatFormat)")
        if builtin_tools and not system_header:
            raise InputError("builtin_tools need the 3.1 system header", field="builtin_tools",
                             hint="drop system_header=False")
        self.system_header = system_header
        self.date = date
        self.knowledge_cutoff = knowledge_cutoff
        self.builtin_tools = tuple(builtin_tools)
        self.tools_in_user_message = tools_in_user_message
        self.tool_results = tool_results

    def init_options(self) -> dict[str, Any]:
        return {"system_header": self.system_header, "date": self.date, "knowledge_cutoff": self.knowledge_cutoff,
                "builtin_tools": self.builtin_tools, "tools_in_user_message": self.tools_in_user_message,
                "tool_results": self.tool_results}

    def mask_unsupported(self, policy: MaskPolicy) -> str | None:
        if policy.channels is not None:
            return "a Llama 3 frame has no channels: masks by channel cannot apply (roles and last_turn_only can)"
        return None

    # -- conversation level ------------------------------------------------------------------
    def system_text(self, tools: Sequence[Mapping[str, Any]] | None, text: str) -> str:
        """The 3.1 system frame's text (``llama3_1.jinja``)."""
        head = "Environment: ipython\n" if (self.builtin_tools or tools) else ""
        named = [t for t in self.builtin_tools if t != "code_interpreter"]
        if self.builtin_tools:
            head += "Tools: " + ", ".join(named) + "\n\n"
        head += f"Cutting Knowledge Date: {self.knowledge_cutoff}\nToday Date: {self.date}\n\n"
        if tools and not self.tools_in_user_message:
            head += _TOOLS_SYSTEM + tools_json(tools)
        return head + text

    def normalize(self, conv: Conversation) -> Conversation:
        msgs = conv.messages
        tools = conv.options.tools or None
        out: list[Message] = []
        i = 0
        if tools and not self.system_header:
            raise InputError("Llama 3.0 (system_header=False) has no tool layout", field="tools",
                             hint="use the 3.1 layout (the default) for tools")
        first = msgs[0] if msgs and msgs[0].role == "system" else None
        if first is not None:
            _plain(first, 0)
            i = 1
        if self.system_header:
            out.append(Message(role="system", content=self.system_text(tools, first.content.strip() if first else ""),
                               train=first.train if first else None, source=first.source if first else None,
                               source_field=first.source_field if first else None))
        elif first is not None:
            out.append(_frame(first, first.content.strip()))
        if tools and self.tools_in_user_message:
            if i >= len(msgs) or msgs[i].role != "user":
                raise InputError("tools go in front of the first user message, and there is none", index=i,
                                 field="tools", hint="start with a user message, or tools_in_user_message=False")
            _plain(msgs[i], i)
            out.append(_frame(msgs[i], _TOOLS_USER + tools_json(tools) + msgs[i].content.strip()))
            i += 1
        n = len(msgs)
        while i < n:
            m = msgs[i]
            if m.role == "assistant":
                i = self._assistant(msgs, i, out)
                continue
            if m.role in ("tool", "ipython"):
                content = m.content
                if self.tool_results == "json":
                    content = json.dumps(content, ensure_ascii=False)
                out.append(Message(role="ipython", content=content, train=m.train, source=m.source,
                                   source_field=m.source_field))
            else:
                _plain(m, i)
                out.append(_frame(m, m.content.strip()))
            i += 1
        return Conversation(tuple(out), conv.options, chat=conv.chat)

    def _assistant(self, msgs: Sequence[Message], i: int, out: list[Message]) -> int:
        m = msgs[i]
        if m.channel == "analysis":
            raise InputError("llama3 has no reasoning channel", code="E-INPUT-REASONING", index=i, field="content",
                             hint="drop reasoning_content / thinking from the input")
        if not m.is_tool_call:
            nxt = msgs[i + 1] if i + 1 < len(msgs) else None
            if nxt is not None and nxt.is_tool_call and nxt.source == m.source and m.source is not None:
                if m.content.strip():
                    raise UnrepresentableError("a Llama 3 tool-call message has no place for text beside the call",
                                               index=i, field="content",
                                               hint="drop the content (the templates write only the call)")
                return i + 1
            _plain(m, i)
            out.append(_frame(m, m.content.strip()))
            return i + 1
        j = i + 1
        if j < len(msgs) and msgs[j].is_tool_call and msgs[j].source == m.source:
            raise CallSchemaError("Llama 3 writes one tool call per assistant message", index=j, field="tool_calls",
                                  hint="split parallel calls into turns, each with its result")
        name = m.recipient or ""
        if name.startswith("functions."):
            name = name[len("functions."):]
        builtin = name in self.builtin_tools
        text = builtin_call_text(name, m.content, i) if builtin else call_text(name, m.content, i,
                                                                               self.validate_bodies)
        out.append(Message(role="assistant", content=text, train=m.train, source=m.source,
                           source_field=m.source_field,
                           structured=Llama3Frame(python_tag=builtin, eom=True) if self.builtin_tools else None))
        return j

    def message_flags(self, messages: Sequence[Message], policy: MaskPolicy) -> list[Flags]:
        # the header is always the runtime's prompt (the generation prompt writes it)
        return [(False, False, b, e) for _, _, b, e in super().message_flags(messages, policy)]

    def frame_pieces(self, conv: Conversation) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
        return ((CTL, BOS),), ()

    # -- the header as written and read back -------------------------------------------------
    def header_text(self, m: Message) -> str | None:
        return m.role

    def read_header(self, text: str) -> Header:
        if text not in ROLES.roles:
            raise HeaderError(f"unknown role {text!r}", code="E-PARSE-HEADER", field="role",
                              hint="roles: " + ", ".join(ROLES.roles))
        return Header(role=text)

    # -- message level -------------------------------------------------------------------------
    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        prompt = ((CTL, START), (TXT, m.role), (CTL, END_HEADER))
        body = self.body_pieces(m, m.content, end, None)
        if isinstance(m.structured, Llama3Frame) and m.structured.python_tag:
            body = ((CTL, PYTHON_TAG),) + body
        return MessagePlan(prompt, ((TXT, LEAD),), body, ((CTL, end),) if end else ())

    def generation_prompt(self) -> tuple[Piece, ...]:
        return ((CTL, START), (TXT, "assistant"), (CTL, END_HEADER), (TXT, LEAD))

    def end_token(self, m: Message, last_of_train: bool) -> str:
        return EOM if isinstance(m.structured, Llama3Frame) and m.structured.eom else EOT

    # -- reading back --------------------------------------------------------------------------
    def frame_machine(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None = None,
                      markers: frozenset[str] = frozenset()) -> FrameMachine:
        return Llama3Machine(strict=strict, role=role, emit=emit, roles=self.roles,
                             terminators=self.stop_reasons(role))

    def turn_of(self, m: Message, end: str, role: str | None) -> Message:
        """An assistant frame with its turn read (``calls.read_turn``): the answer or the call."""
        if m.role != "assistant":
            return m
        return m.with_(structured=read_turn(m))


def tools_json(tools: Sequence[Mapping[str, Any]]) -> str:
    """Each tool in the OpenAI wrapped form, as the templates' ``tojson(indent=4)`` writes it."""
    out = []
    for t in tools:
        fn: dict[str, Any] = {"name": t["name"], "description": t.get("description") or ""}
        if t.get("parameters") is not None:
            fn["parameters"] = t["parameters"]
        out.append(json.dumps({"type": "function", "function": fn}, ensure_ascii=False, indent=4) + "\n\n")
    return "".join(out)


def _plain(m: Message, i: int) -> None:
    if m.name:
        raise UnrepresentableError(f"llama3 has no place for the {m.role} message's name {m.name!r}", index=i,
                                   field="name", hint="drop 'name', or put it in the content")


def _frame(m: Message, content: str) -> Message:
    return Message(role=m.role, content=content, train=m.train, source=m.source, source_field=m.source_field)


__all__ = ["Llama3", "tools_json"]
