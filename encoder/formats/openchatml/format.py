"""OpenChatML 2.2 and 2.0 (1.x transcripts read as all-``final``).

Where 2.x headers are built: ``OpenChatML22.plan``.  Canonical 2.2 header (§6):
``<|start|>ROLE[ to=][ call_id=][ name=][ intent=][ content_type=]`` then
``<|channel|>CHANNEL``, ``<|constrain|>TYPE``, ``<|message|>``; no space before
``<|constrain|>`` (§16.2; Harmony puts one).  The attribute string is one text
piece.  Terminators: ``<|call|>`` for an assistant message with a recipient,
``<|return|>`` for the last assistant ``final`` of a training render, else ``<|end|>``.
A message without a channel renders without a channel tag (1.x) and reads as ``final``.

CoT markers (§7) inside ``analysis`` content become their registered ids; elsewhere
they are text.  In text mode (controls not registered) content is escaped
(``<<|start|>``); see ``Format.body_pieces``.
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import ClassVar

from ...errors import CallSchemaError
from ...messages import CHANNELS, Conversation, Message
from ...pieces import CTL, TXT, MessagePlan, Piece
from ...grammar.headers import HeaderStyle
from ...grammar.roles import BASE_ROLES, TOOL_NAME, RoleGrammar
from ..base import Format, PlanContext
from ..strategies import TranscriptStyle
from ..harmony.format import _synthesize
from ..harmony.frame import HarmonyFrame
from ..harmony.content import DeveloperContent, SystemContent
from ..harmony.sections import developer_text, system_text


#: §4, §15 ABNF: the five roles and the legacy tool-reply role ``functions.NAME``; nothing else
#: (``browser.search`` is a recipient, ``to=browser.search``, and its reply ``tool name=browser.search``)
ROLES = RoleGrammar(BASE_ROLES, tool_word=re.compile(r"functions\." + TOOL_NAME))


class OpenChatML22(HarmonyFrame):
    name: ClassVar[str] = "openchatml-2.2"
    transcript: ClassVar[TranscriptStyle] = TranscriptStyle(version="2.2")
    #: attributes after the role (§6), then ``<|channel|>``, ``<|constrain|>``
    header_style: ClassVar[HeaderStyle] = HeaderStyle(ROLES, channels=CHANNELS, attributes=(
        ("recipient", "to"), ("call_id", "call_id"), ("name", "name"), ("intent", "intent"),
        ("content_type", "content_type")))

    def __init__(self, tokenizer, *, validate_bodies: bool = True, require_call_ids: bool = False) -> None:
        super().__init__(tokenizer, validate_bodies=validate_bodies)
        self.require_call_ids = require_call_ids
        # header attributes read as one C call per message (plan runs per message with a non-plain body)
        self._attr_names = tuple(attr for _, attr in self.header_style.attributes)
        self._attr_values = attrgetter(*(key for key, _ in self.header_style.attributes))
        markers = [mk for mk in self.table.markers if tokenizer.control_id(mk) is not None]
        self._markers_re = re.compile("(" + "|".join(map(re.escape, markers)) + ")") if markers else None

    def normalize(self, conv: Conversation) -> Conversation:
        msgs = list(conv.messages)
        calls: dict[str, str] = {}
        for i, m in enumerate(msgs):
            if m.is_tool_call and m.call_id:
                calls[m.call_id] = m.recipient or ""
            if m.role == "tool" and not m.name:
                inferred = calls.get(m.call_id or "")
                if not inferred:
                    raise CallSchemaError("a tool reply needs name=<tool> (§4)", index=i, field="name",
                                          hint="set 'name' or the call_id of the call it answers")
                msgs[i] = m.with_(name=inferred)
            if self.require_call_ids and (m.is_tool_call or self.is_tool_reply(m)) and not m.call_id:
                raise CallSchemaError("tool calls and replies must carry call_id (§8.2)", index=i, field="call_id")
        # Synthesised last, so the errors above index the caller's messages.
        if conv.options.wants_system and not any(isinstance(m.structured, SystemContent) for m in msgs):
            msgs = _synthesize(msgs, conv.options)
        return Conversation(tuple(msgs), conv.options, chat=conv.chat)

    def validate(self, conv: Conversation) -> None:
        super().validate(conv)
        open_calls = {m.call_id for m in conv.messages if m.is_tool_call and m.call_id}
        for i, m in enumerate(conv.messages):
            if self.is_tool_reply(m) and open_calls and m.call_id is None:
                raise CallSchemaError("this tool reply does not echo its call's call_id (§8.2)", index=i,
                                      field="call_id", hint="copy call_id from the assistant's tool call")

    def plain_body(self, m: Message) -> str | None:
        if self._markers_re is not None and m.channel == "analysis" and "<|start_" in m.content:
            return None  # CoT markers become control ids
        return super().plain_body(m)

    def header_attrs(self, m: Message) -> str:
        return "".join([f" {a}={v}" for a, v in zip(self._attr_names, self._attr_values(m)) if v is not None])

    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        header: list[Piece] = []
        a = self.header_attrs(m)
        if a:
            header.append((TXT, a))
        if m.channel is not None:
            header += ((CTL, "<|channel|>"), (TXT, m.channel))
        if m.constrain is not None and self.header_style.constrain:
            header += ((CTL, "<|constrain|>"), (TXT, m.constrain))
        header.append((CTL, "<|message|>"))
        s = m.structured
        if isinstance(s, SystemContent):
            body: tuple[Piece, ...] = self.section_pieces(s, system_text(s, ctx.has_function_tools), end)
        elif isinstance(s, DeveloperContent):
            body = self.section_pieces(s, developer_text(s), end)
        elif self._markers_re is not None and m.channel == "analysis" and "<|start_" in m.content:
            chunks = self._markers_re.split(m.content)
            pieces: list[Piece] = []
            for k, chunk in enumerate(chunks):
                if k % 2:
                    pieces.append((CTL, chunk))
                elif chunk:
                    pieces.extend(self.body_pieces(m, chunk, end if k == len(chunks) - 1 else "", None))
            body = tuple(pieces)
        else:
            body = self.body_pieces(m, m.content, end, None)
        return MessagePlan(((CTL, "<|start|>"), (TXT, m.role)), tuple(header), body, ((CTL, end),))



class OpenChatML20(OpenChatML22):
    """2.0: six controls, header attributes ``to=`` and ``name=`` only.

    2.0 cannot carry ``call_id``, ``intent``, ``content_type`` or ``<|constrain|>``; they are
    dropped when rendering (the OpenAI adapter fills call ids and ``json`` by default) and a
    parse returns messages without them.
    """

    name: ClassVar[str] = "openchatml-2.0"
    transcript: ClassVar[TranscriptStyle] = TranscriptStyle(version="2.0")
    header_style: ClassVar[HeaderStyle] = HeaderStyle(ROLES, channels=CHANNELS, constrain=False,
                                                      attributes=(("recipient", "to"), ("name", "name")))

    def normalize(self, conv: Conversation) -> Conversation:
        conv = super().normalize(conv)
        msgs = tuple(m.with_(call_id=None, intent=None, content_type=None, constrain=None)
                     if (m.call_id or m.intent or m.content_type or m.constrain) else m for m in conv.messages)
        return Conversation(msgs, conv.options, chat=conv.chat)

    def validate(self, conv: Conversation) -> None:
        Format.validate(self, conv)
