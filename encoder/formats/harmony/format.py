"""Harmony (gpt-oss): byte-exact with openai-harmony 0.0.8.

Where Harmony headers are built: ``HarmonyFormat.plan``.  Piece order (each
text piece encoded on its own, as openai-harmony does):
``<|start|>`` role-or-tool-name | ``:name`` | `` to=recipient`` | ``<|channel|>`` channel |
`` `` ``<|constrain|>`` type  (or `` content_type``) | ``<|message|>`` | items... |
``<|call|>`` (assistant with any recipient, even ``all``) / ``<|end|>`` / ``<|return|>``.

Differences from openai-harmony, all deliberate and documented:
- header values are validated (no whitespace, ``<``, ``|``): Harmony renders them and
  corrupts the header;
- ``recipient_after_channel=True`` renders `` to=`` after the channel, as the model emits it;
- ``call_id`` and ``intent`` have no place in a Harmony header: they are dropped;
- conversation options (``reasoning_effort``, ``tools``, ``date``...) synthesise the system
  and developer messages the gpt-oss way (plain leading system/developer text becomes
  the developer instructions).
- OpenAI / HF chat data (``Conversation.chat``) always gets the model's own system header
  (the official gpt-oss template's mapping, in openai-harmony's bytes): the first message,
  if it is a system or developer message, becomes the developer instructions; later system
  or developer messages are developer messages; no date unless the caller gives one.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ...adapters import ChatStyle
from ...errors import CallSchemaError, InputError
from ...grammar.headers import Header
from ...messages import Conversation, Message, Options
from ...pieces import CTL, TXT, MessagePlan, Piece  # noqa: F401
from ...sections import SECTIONS, content_key
from ...grammar.headers import HeaderStyle
from ...grammar.roles import BASE_ROLES, TOOL_NAME, RoleGrammar
from ..base import PlanContext
from .content import DeveloperContent, SystemContent, ToolDescription, ToolNamespace, builtin_namespace
from .frame import HarmonyFrame
from .sections import developer_text, system_text


#: the five roles; a named author is written ``ROLE:NAME`` (``user:alice``); a tool message is
#: written with the tool's name as the word (``functions.get_weather``, ``browser.search``, or a
#: bare built-in: ``python``), and that word reads back as role ``tool`` with that name
ROLES = RoleGrammar(BASE_ROLES, tool_word=re.compile(r"[A-Za-z0-9_\-]+\." + TOOL_NAME),
                    builtin_tools=frozenset({"python", "browser", "container"}), tool_word_is_name=True,
                    author_names=True)


class HarmonyFormat(HarmonyFrame):
    name: ClassVar[str] = "harmony"
    #: Harmony's header: its role grammar, any channel word, a lone bare word as the recipient, the
    #: answer by its channel word itself (no 1.x default)
    header_style: ClassVar[HeaderStyle] = HeaderStyle(ROLES, bare_recipient=True, answer_by_channel_word=True)
    # gpt-oss template: assistant content next to tool calls is the call's analysis
    chat_style: ClassVar[ChatStyle] = ChatStyle(content_with_calls="analysis")

    def __init__(self, tokenizer, *, validate_bodies: bool = True, recipient_after_channel: bool = False) -> None:
        super().__init__(tokenizer, validate_bodies=validate_bodies)
        self.recipient_after_channel = recipient_after_channel

    def init_options(self) -> dict[str, Any]:
        # Only when set: a default Harmony encoder's manifests (format_options) and exported
        # templates name no option, as they always have.
        return {"recipient_after_channel": True} if self.recipient_after_channel else {}

    def normalize(self, conv: Conversation) -> Conversation:
        msgs = conv.messages
        has_system = strip = False
        for i, m in enumerate(msgs):
            if m.structured is not None:
                want = "system" if isinstance(m.structured, SystemContent) else "developer"
                if m.role != want:
                    raise InputError(f"{type(m.structured).__name__} in a {m.role} message", index=i,
                                     field="content", hint=f"put it in a {want} message")
                has_system = has_system or want == "system"
            if (m.role == "tool") and not m.name:
                raise CallSchemaError("a tool message needs the tool's name", index=i, field="name",
                                      hint="set name='functions.<tool>' (or tool_call_id of an earlier call)")
            strip = strip or m.call_id is not None or m.intent is not None
        if conv.chat:
            out = _synthesize(list(msgs), conv.options, chat=True)
        elif not strip and (has_system or not conv.options.wants_system):
            return conv  # the common case: nothing to rewrite
        else:
            out = list(msgs)
            if conv.options.wants_system and not has_system:
                out = _synthesize(out, conv.options)
        # Harmony headers have no call_id / intent (gpt-oss never saw them): dropped, not rendered.
        out = [m.with_(call_id=None, intent=None) if (m.call_id or m.intent) else m for m in out]
        return Conversation(tuple(out), conv.options, chat=conv.chat)

    def written_fields(self, m: Message) -> Header:
        """Harmony writes a tool message's name as the role word (it reads back as role
        ``tool``; so does a legacy ``functions.NAME`` role) and no ``to=all``."""
        role, name = m.role, m.name
        if role == "tool":
            role, name = "tool", m.name
        elif role not in self.roles:
            role, name = "tool", role if name is None else name
        recipient = None if m.recipient == "all" else m.recipient
        return Header(role, m.channel, recipient, m.call_id, name, m.intent, m.content_type, m.constrain)


    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        role = m.role
        if role == "tool":
            role = m.name or ""
        header: list[Piece] = []
        if m.name and m.role != "tool":
            header.append((TXT, ":" + m.name))
        to = (TXT, " to=" + m.recipient) if m.recipient and m.recipient != "all" else None
        if to and not self.recipient_after_channel:
            header.append(to)
        if m.channel is not None:
            header += ((CTL, "<|channel|>"), (TXT, m.channel))
        if to and self.recipient_after_channel:
            header.append(to)
        if m.constrain is not None:
            header += ((TXT, " "), (CTL, "<|constrain|>"))
            if m.constrain:
                header.append((TXT, m.constrain))
        elif m.content_type is not None:
            header.append((TXT, " " + m.content_type))
        header.append((CTL, "<|message|>"))
        s = m.structured
        if isinstance(s, SystemContent):
            body: tuple[Piece, ...] = self.section_pieces(s, system_text(s, ctx.has_function_tools), end)
        elif isinstance(s, DeveloperContent):
            body = self.section_pieces(s, developer_text(s), end)
        elif m.parts is not None:  # content items: one piece each (openai-harmony), one run for a reader
            body = self.body_pieces(m, m.parts, end, None)
        else:
            body = self.body_pieces(m, m.content, end, None)
        return MessagePlan(((CTL, "<|start|>"), (TXT, role)), tuple(header), body, ((CTL, end),))


def _synthesize(msgs: list[Message], opt: Options, chat: bool = False) -> list[Message]:
    """The gpt-oss convention: a system message from options, plain system/developer text as instructions.

    ``chat``: OpenAI / HF chat data, the official template's rule: only the first message
    becomes the instructions; later system/developer messages stay, as developer messages.
    """
    lead: list[str] = []
    rest = msgs
    lead_source: int | None = None
    while rest and rest[0].role in ("system", "developer") and rest[0].structured is None:
        lead.append(rest[0].content)
        lead_source = rest[0].source if lead_source is None else lead_source
        rest = rest[1:]
        if chat:
            break
    if chat:
        rest = [m.with_(role="developer") if m.role == "system" else m for m in rest]
    out = _head(opt, lead, lead_source if lead else None)
    existing_dev = [m for m in rest if m.role == "developer" and isinstance(m.structured, DeveloperContent)]
    if existing_dev and len(out) > 1:
        raise InputError("options would create a developer message, but the conversation already has one",
                         field="tools", hint="put the tools/instructions in the existing developer message")
    return out + rest


def _head(opt: Options, lead: list[str], source: int | None) -> list[Message]:
    """The system (and developer) messages built from ``opt`` and the leading text, each once per
    content (``ocml.encoder.sections``): a shared tool set and system prompt is built and its ids
    encoded once; the system header alone (options only) is shared even by conversations that
    each have their own tools.  Keys cost a fraction of encoding (``content_key`` of the tools)."""
    skey = ("harmony-system", opt.model_identity, opt.reasoning_effort, opt.date, opt.knowledge_cutoff,
            opt.builtin_tools)
    out = [SECTIONS.intern(skey, 64, lambda: _system(opt))]
    instructions = "\n\n".join(x for x in ([opt.instructions] if opt.instructions else []) + lead if x)
    if instructions or opt.tools:
        tools = content_key(opt.tools) if opt.tools else None
        dkey = ("harmony-developer", instructions, tools, source)
        out.append(SECTIONS.intern(dkey, 64 + len(tools or "") + len(instructions),
                                   lambda: _developer(opt, instructions, source)))
    return out


def _system(opt: Options) -> Message:
    kw: dict[str, object] = {}
    if opt.model_identity is not None:
        kw["model_identity"] = opt.model_identity
    if opt.reasoning_effort is not None:
        kw["reasoning_effort"] = opt.reasoning_effort
    if opt.date is not None:
        kw["conversation_start_date"] = opt.date
    if opt.knowledge_cutoff is not None:
        kw["knowledge_cutoff"] = opt.knowledge_cutoff
    if opt.builtin_tools:
        kw["tools"] = {name: builtin_namespace(name) for name in opt.builtin_tools}
    return Message(role="system", structured=SystemContent(**kw))  # type: ignore[arg-type]


def _developer(opt: Options, instructions: str, source: int | None) -> Message:
    fn_tools = tuple(ToolDescription(t["name"], t["description"], t["parameters"]) for t in (opt.tools or ()))
    dc = DeveloperContent(
        instructions=instructions or None,
        tools={"functions": ToolNamespace("functions", None, fn_tools)} if fn_tools else None,
    )
    return Message(role="developer", structured=dc, source=source)
