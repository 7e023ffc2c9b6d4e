"""Apertus (Swiss AI), format ``apertus``.

Where Apertus frames are built: ``Apertus.plan`` (turns: ``apertus.blocks.turn_pieces``);
read back by ``apertus.frames.ApertusMachine``; the developer block: ``apertus.tools``.

Layout (the reference template swiss-ai/apertus_format ``chat_template.jinja``, e473d76;
no whitespace between segments): ``<s>``, ``<|system_start|>SYSTEM<|system_end|>`` (the
first message if it is ``system`` - a string or ``{"text": ...}`` - else the template's
default text with ``Current date:`` from the ``date`` option), the developer block
``<|developer_start|>Deliberation: enabled|disabled\\nTool Capabilities: ...<|developer_end|>``
(``enable_thinking``, ``tools``; a ``developer`` message right after the system message is
used as it is), users ``<|user_start|>TEXT<|user_end|>`` (a string or ``{"parts": [...]}``),
and assistant turns: every assistant and tool message up to the next user message is one
turn ``<|assistant_start|>`` blocks ``<|assistant_end|>`` (``apertus.blocks``).
Generation prompt: ``<|assistant_start|>``.

Ids: whole-run encoding (``TextLayout.whole_runs``): tool brackets and the text around
them are one run, as the models saw them.  Mask (default): the turn after
``<|assistant_start|>`` through ``<|assistant_end|>``, tool outputs excluded (a token that
straddles an output bracket and the model's text is trained, ``ocml.encoder.runs``).

Differences from the reference template, all deliberate:
- the last turn is closed with ``<|assistant_end|>`` (the template never closes it; the
  current HF template and the Swiss AI SFT code do), except in a training render whose
  turn ends with a tool call (the model stopped at ``<|tools_suffix|>``);
- prompt mode after tool outputs (or a tool call) continues the open turn (the template
  opens a nested ``<|assistant_start|>``);
- string content is text: ``<|inner_prefix|>`` typed into a string never becomes the control;
  a string assistant message is a ``response`` block;
- ``reasoning_content`` / ``thinking`` of OpenAI-style messages becomes a ``thoughts`` block
  (the template ignores it); OpenAI-wrapped tools are unwrapped (the template raises);
  dict arguments are serialised once;
- tool outputs must follow a tool call, and text right after a call without outputs must
  not start with ``[`` (else the ids would not parse back; the template renders them);
- the date of the default system text is the ``date`` option; without one the ``Current date``
  line is left out (the reference template writes today's date: ids would change daily).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from ...errors import CallSchemaError, InputError
from ...jsonlimits import loads_record
from ...grammar.headers import HeaderStyle
from ...grammar.text import check_text
from ...messages import Conversation, Message
from ...errors import UnrepresentableError
from ...messages import CotPolicy
from ...pieces import CTL, MessagePlan, Piece
from .blocks import FRAME_ENDS, FRAME_STARTS, TOOL_CALLS, Turn, TurnBuilder, read_messages, turn_pieces
from .tools import default_system, developer_text
from ..base import Format, PlanContext
from ..strategies import TextLayout, TranscriptStyle, TurnShape

if TYPE_CHECKING:
    from ...masks import MaskPolicy


class Apertus(Format):
    name: ClassVar[str] = "apertus"
    #: no header text: the frame controls stand for the five roles
    header_style: ClassVar[HeaderStyle] = HeaderStyle()
    text_layout: ClassVar[TextLayout] = TextLayout(whole_runs=True)
    transcript: ClassVar[TranscriptStyle] = TranscriptStyle(joiner="")
    turns: ClassVar[TurnShape] = TurnShape(blocks=True)

    def __init__(self, tokenizer, *, validate_bodies: bool = True, enable_thinking: bool = False,
                 date: str | None = None, default_system: str | None = None) -> None:
        super().__init__(tokenizer, validate_bodies=validate_bodies)
        if type(enable_thinking) is not bool:
            raise InputError(f"enable_thinking must be True or False, got {enable_thinking!r}", field="enable_thinking")
        for key, val in (("date", date), ("default_system", default_system)):
            if val is not None and not isinstance(val, str):
                raise InputError(f"{key} must be a string or None", field=key)
        self.enable_thinking = enable_thinking
        self.date = date
        self.default_system = default_system

    def init_options(self) -> dict[str, Any]:
        return {"enable_thinking": self.enable_thinking, "date": self.date, "default_system": self.default_system}

    def mask_unsupported(self, policy: MaskPolicy) -> str | None:
        if policy.channels is not None or not policy.tool_call_bodies:
            return "an Apertus assistant turn holds its thoughts, answer and tool calls together: masks by channel or tool-call body cannot apply (roles and last_turn_only can)"
        return None

    def cot_policies(self) -> tuple[CotPolicy, ...]:
        # every thoughts block is written, as the reference template writes them (no retention rule)
        return (CotPolicy.DEFAULT, CotPolicy.KEEP_ALL)

    # -- input ---------------------------------------------------------------------------------
    def read(self, obj: Any, shape: str = "auto") -> Conversation:
        """Apertus mapping content (``text`` / ``parts`` / ``blocks``), the consistency rule, and
        the ``enable_thinking`` conversation option; the rest is the shared adapters'."""
        if isinstance(obj, str):
            try:
                obj = loads_record(obj, "the conversation", field="conversation")
            except ValueError:  # typed pathologies (jsonlimits) included: the adapters raise the same
                return super().read(obj, shape)  # the adapters' error
        thinking = None
        if isinstance(obj, Mapping) and "messages" in obj:
            d = dict(obj)
            thinking = d.pop("enable_thinking", None)
            if isinstance(d["messages"], Sequence) and not isinstance(d["messages"], (str, bytes)):
                d["messages"] = read_messages(d["messages"])
            conv = super().read(d, shape)
        elif isinstance(obj, Sequence) and not isinstance(obj, (bytes, bytearray)):
            conv = super().read(read_messages(obj), shape)
        else:
            conv = super().read(obj, shape)
        if thinking is not None:
            if type(thinking) is not bool:
                raise InputError(f"enable_thinking must be true or false, got {thinking!r}", field="enable_thinking")
            conv = Conversation(conv.messages, replace(conv.options, extra={**conv.options.extra,
                                                                             "enable_thinking": thinking}),
                                chat=conv.chat)
        return conv

    def normalize(self, conv: Conversation) -> Conversation:
        msgs = conv.messages
        opts = conv.options
        out: list[Message] = []
        i = 0
        if msgs and msgs[0].role == "system":
            out.append(_simple(msgs[0], 0))
            i = 1
        else:
            date = opts.date or self.date  # no hidden clock: no date line unless a date is given
            out.append(Message(role="system", content=self.default_system or default_system(date)))
        thinking = opts.extra.get("enable_thinking")
        if i < len(msgs) and msgs[i].role == "developer":
            if opts.tools or thinking is not None:
                raise InputError("the conversation has a developer block and also tools / enable_thinking to build "
                                 "one", index=i, field="role", hint="give one or the other")
            out.append(_simple(msgs[i], i))
            i += 1
        else:
            out.append(Message(role="developer", content=developer_text(
                self.enable_thinking if thinking is None else thinking, opts.tools)))
        turn: TurnBuilder | None = None
        for j in range(i, len(msgs)):
            m = msgs[j]
            if m.role in ("assistant", "tool"):
                if turn is None:
                    if m.role == "tool":
                        raise CallSchemaError("a tool message outside an assistant turn", index=j, field="role",
                                              hint="tool results follow the assistant's tool call")
                    turn = TurnBuilder()
                turn.add_message(m, j)
            elif m.role == "user":
                if turn is not None:
                    out.append(turn.message())
                    turn = None
                out.append(_simple(m, j))
            else:
                raise InputError(f"a {m.role} message at position {j}", index=j, field="role",
                                 hint="Apertus has one system message (first) and one developer block (right after it)")
        if turn is not None:
            out.append(turn.message())
        return Conversation(tuple(out), opts, chat=conv.chat)

    # -- message level -----------------------------------------------------------------------------
    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        prompt: tuple[Piece, ...] = ((CTL, FRAME_STARTS[m.role]),)
        tail: tuple[Piece, ...] = ((CTL, end),) if end else ()
        if isinstance(m.structured, Turn):
            # raw text pieces, written by the one escape rule as runs (``ocml.encoder.grammar.escape``)
            pieces = turn_pieces(m.structured, _raw, self.validate_bodies)
            for kind, text in pieces:
                if kind != CTL and not text.isascii():
                    check_text(text, index=None, field="content")
            body = self.escaper.write(pieces + list(tail))
            return MessagePlan(prompt, (), body[:len(body) - len(tail)], tail)
        return MessagePlan(prompt, (), self.body_pieces(m, m.content, end, None), tail)

    def generation_prompt(self) -> tuple[Piece, ...]:
        return ((CTL, "<|assistant_start|>"),)

    def end_token(self, m: Message, last_of_train: bool) -> str:
        if last_of_train and isinstance(m.structured, Turn) and m.structured.blocks \
                and m.structured.blocks[-1].kind == TOOL_CALLS:
            return ""  # the model stopped at <|tools_suffix|>, waiting for the outputs
        return FRAME_ENDS[m.role]

    def prompt_continues(self, m: Message) -> bool:
        return isinstance(m.structured, Turn) and m.structured.waiting

    def frame_pieces(self, conv: Conversation) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
        return ((CTL, "<s>"),), ()

    # -- reading back ----------------------------------------------------------------------------------
    def frame_machine(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None = None,
                      markers: frozenset[str] = frozenset()) -> Any:
        from .frames import ApertusMachine

        # parse and the stream decoder read alike: the decoder stops at <|tools_suffix|> (a stop
        # token) and ends the stream there, where the machine closes the turn with reason "call"
        return ApertusMachine(strict=strict, role=role, emit=emit)


def _raw(text: str) -> str:
    return text


def _simple(m: Message, index: int) -> Message:
    if m.name:  # a name carries text the model would never see: refused, not dropped
        raise UnrepresentableError(f"apertus has no place for the {m.role} message's name {m.name!r}",
                                   index=index, field="name", hint="drop 'name', or put it in the content")
    return Message(role=m.role, content=m.content, train=m.train, source=m.source, source_field=m.source_field)


def to_apertus(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages (``Encoder.parse``, ``RenderResult.conversation``) in Apertus's own shape:
    assistant turns as ``{"blocks": [...]}``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m.structured, Turn):
            groups: list[list[dict[str, Any]]] = [[]]
            for b in m.structured.blocks:
                if groups[-1] and b.kind == TOOL_CALLS and b.inner and len(b.calls) == 1 \
                        and b.calls[0].name == "display_answers":
                    groups.append([])  # first in its message: the template keeps the inner section open
                groups[-1].append(b.to_dict())
            out += [{"role": m.role, "content": {"blocks": g}} for g in groups]
        else:
            out.append({"role": m.role, "content": m.content})
    return out


__all__ = ["Apertus", "to_apertus"]
