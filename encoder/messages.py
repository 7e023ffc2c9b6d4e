"""The message model: what a conversation is, independent of any format.

Adapters (``ocml.encoder.adapters``) turn the shapes people have into these; formats
turn these into pieces.  Messages are frozen so renderers can cache on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Literal



class Mode(str, Enum):
    TRAIN = "train"      # supervised target: last assistant final ends with <|return|>
    PROMPT = "prompt"    # history + the generation prompt for the next assistant turn
    HISTORY = "history"  # stored history: every message closed with its normal end token
    CONTINUE = "continue"  # like train, the last (assistant) message left open: prefilled generation


#: ``mode=`` as a string: ``Mode``'s values (tests/house/test_public_types.py keeps the two in step)
ModeName = Literal["train", "prompt", "history", "continue"]


class CotPolicy(str, Enum):
    DEFAULT = "default"    # OpenChatML §7 / HIP-1 rule 7
    HARMONY = "harmony"    # openai-harmony 0.0.8's exact auto-drop rule
    KEEP_ALL = "keep-all"
    DROP_ALL = "drop-all"


#: ``cot=`` as a string: ``CotPolicy``'s values
CotName = Literal["default", "harmony", "keep-all", "drop-all"]


CHANNELS = ("analysis", "commentary", "final")

#: ``Message.with_``'s "not given" marker (None is a value a field can be set to)
_KEEP: Any = object()


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str = ""
    channel: str | None = None
    recipient: str | None = None
    call_id: str | None = None
    name: str | None = None
    intent: str | None = None
    content_type: str | None = None   # header hint (`content_type=`; Harmony's " code")
    constrain: str | None = None      # type after <|constrain|> (e.g. "json")
    # Several text items (openai-harmony renders each on its own); joined == content.
    parts: tuple[str, ...] | None = None
    # Harmony structured system/developer content (harmony.sections dataclasses).
    structured: Any = None
    # Per-message training override (None = follow the mask policy).
    train: bool | None = None
    # Where the message came from in the caller's input (not part of its identity): the input
    # message's position (None = built by ocml, e.g. a system header from options) and the
    # field its content came from (``content``, ``reasoning_content``,
    # ``tool_calls[0].function.arguments``).  Errors and ``RenderResult.message_index`` use it.
    source: int | None = field(default=None, compare=False, repr=False)
    source_field: str | None = field(default=None, compare=False, repr=False)

    @property
    def effective_channel(self) -> str | None:
        """1.x messages have no channel; an assistant's is then ``final`` (spec §5 rule 2)."""
        if self.channel is None and self.role == "assistant":
            return "final"
        return self.channel

    @property
    def is_tool_call(self) -> bool:
        return self.role == "assistant" and self.recipient is not None and self.recipient != "all"

    def with_(self, *, role: Any = _KEEP, content: Any = _KEEP, channel: Any = _KEEP, recipient: Any = _KEEP,
              call_id: Any = _KEEP, name: Any = _KEEP, intent: Any = _KEEP, content_type: Any = _KEEP,
              constrain: Any = _KEEP, parts: Any = _KEEP, structured: Any = _KEEP, train: Any = _KEEP,
              source: Any = _KEEP, source_field: Any = _KEEP) -> Message:
        """``dataclasses.replace(self, **changes)`` through ``new_message`` (a third of its cost)."""
        return new_message(self.role if role is _KEEP else role, self.content if content is _KEEP else content,
                           self.channel if channel is _KEEP else channel,
                           self.recipient if recipient is _KEEP else recipient,
                           self.call_id if call_id is _KEEP else call_id, self.name if name is _KEEP else name,
                           self.intent if intent is _KEEP else intent,
                           self.content_type if content_type is _KEEP else content_type,
                           self.constrain if constrain is _KEEP else constrain, self.parts if parts is _KEEP else parts,
                           self.structured if structured is _KEEP else structured,
                           self.train if train is _KEEP else train, self.source if source is _KEEP else source,
                           self.source_field if source_field is _KEEP else source_field)

    def to_dict(self) -> dict[str, Any]:
        """Canonical dict (None fields omitted); ``adapters`` reads it back unchanged."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if not f.compare:
                continue
            val = getattr(self, f.name)
            if val is None or (f.name == "content" and val == "" and self.structured is not None):
                continue
            if f.name == "structured":
                val = val.to_dict()
            elif f.name == "parts":
                val = list(val)
            out[f.name] = val
        return out


# Adapters build one Message per input message, so its constructor is on the render path.  The
# frozen dataclass ``__init__`` stores each field through ``object.__setattr__`` (the frozen
# ``__setattr__`` refuses plain stores); ``new_message`` stores through the slots' own descriptors
# instead, which skips the attribute lookup: 14 fields in ~0.6x the time of ``Message(...)``
# (tests/render/test_plain_constructors.py ties it to the dataclass).  Plain code: no generated source, no retyping,
# so it compiles as it is (issue 18).
_new = object.__new__
(_s_role, _s_content, _s_channel, _s_recipient, _s_call_id, _s_name, _s_intent, _s_content_type, _s_constrain,
 _s_parts, _s_structured, _s_train, _s_source, _s_source_field) = (
    Message.__dict__[f.name].__set__ for f in fields(Message))


def new_message(role: str, content: str = "", channel: str | None = None, recipient: str | None = None,
                call_id: str | None = None, name: str | None = None, intent: str | None = None,
                content_type: str | None = None, constrain: str | None = None, parts: tuple[str, ...] | None = None,
                structured: Any = None, train: bool | None = None, source: int | None = None,
                source_field: str | None = None) -> Message:
    """``Message(...)`` (same parameters, same defaults), without the frozen ``__init__``'s setattr."""
    m = _new(Message)
    _s_role(m, role)
    _s_content(m, content)
    _s_channel(m, channel)
    _s_recipient(m, recipient)
    _s_call_id(m, call_id)
    _s_name(m, name)
    _s_intent(m, intent)
    _s_content_type(m, content_type)
    _s_constrain(m, constrain)
    _s_parts(m, parts)
    _s_structured(m, structured)
    _s_train(m, train)
    _s_source(m, source)
    _s_source_field(m, source_field)
    return m


@dataclass(frozen=True, slots=True)
class Options:
    """Conversation-level options (used where a format builds system text)."""

    tools: tuple[dict[str, Any], ...] | None = None
    builtin_tools: tuple[str, ...] | None = None
    reasoning_effort: str | None = None
    date: str | None = None
    knowledge_cutoff: str | None = None
    model_identity: str | None = None
    instructions: str | None = None
    #: transcript metadata (the YAML header of ``to_text``) that is not an option
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def wants_system(self) -> bool:
        return any(v is not None for v in (self.tools, self.builtin_tools, self.reasoning_effort, self.date,
                                            self.knowledge_cutoff, self.model_identity, self.instructions))


@dataclass(frozen=True, slots=True)
class Conversation:
    messages: tuple[Message, ...]
    options: Options = field(default_factory=Options)
    #: read from OpenAI / HF chat dicts (mapped the way the models expect), not a format's own terms
    chat: bool = field(default=False, compare=False)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, i: int) -> Message:
        return self.messages[i]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages]}
        for f in fields(self.options):
            val = getattr(self.options, f.name)
            if f.name == "extra":
                out.update(val)
            elif val is not None:
                out[f.name] = list(val) if isinstance(val, tuple) else val
        return out
