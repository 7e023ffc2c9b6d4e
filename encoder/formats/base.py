"""What every format shares: header validation, body constraints, text-mode escaping.

A format turns one message into a ``MessagePlan`` (pieces); it never encodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from vocab import ControlTable, Tokenizer, control_table

from ..adapters import DEFAULT_STYLE, ChatStyle, suggest, to_conversation
from ..arguments import check_json
from ..errors import CallSchemaError, HeaderError, UnknownNameError, UnrepresentableError
from ..messages import Conversation, CotPolicy, Message
from ..pieces import CTL, TXT, MessagePlan, Piece

if TYPE_CHECKING:
    from ..frames import FrameMachine
    from ..masks import Flags, MaskPolicy

#: the controls after which the stream decoder stops, and the ``Stop.reason`` for each
STOP_REASONS: dict[str, str] = {"<|return|>": "return", "<|call|>": "call"}

# A header value ends at whitespace or "<" (HIP-1 parsers cut there), so neither may occur inside.
_BAD_HEADER = re.compile(r"[\s<>]|\|")
HEADER_FIELDS = ("role", "channel", "recipient", "call_id", "name", "intent", "content_type", "constrain")


class Format:
    """Base class: subclasses set ``name`` and implement ``plan``/``generation_prompt``."""

    name: ClassVar[str]
    #: the control that ends the last assistant ``final`` of a training render, if the format has one
    return_token: ClassVar[str | None] = None
    channels: ClassVar[tuple[str, ...] | None] = ("analysis", "commentary", "final")
    #: the roles a message may have (plus ``functions.NAME`` where ``tool_namespace_roles``)
    roles: ClassVar[tuple[str, ...]] = ("system", "developer", "user", "assistant", "tool")
    tool_namespace_roles: ClassVar[bool] = True
    #: how OpenAI / HF chat dicts map into this format (applied by ``encoder.adapters``)
    chat_style: ClassVar[ChatStyle] = DEFAULT_STYLE
    #: encode each run of text between two registered controls in one call, as the deployed
    #: template's text was tokenized (``encoder.runs``: segments, the straddling-token rule)
    merge_text_runs: ClassVar[bool] = False
    #: pieces after every message's terminator, never trained (ChatML's ``\n``)
    after_message: ClassVar[tuple[Piece, ...]] = ()
    #: what ``to_text`` puts between two messages (the transcript is otherwise the render's text)
    transcript_joiner: ClassVar[str] = "\n"
    #: reasoning is written inside its answer's frame (ChatML ``reasoning="think"``): the CoT
    #: policy then applies before ``normalize`` builds the frames (``Encoder.prepare``)
    inline_reasoning: bool = False

    def __init__(self, tokenizer: Tokenizer, *, validate_bodies: bool = True) -> None:
        self.tokenizer = tokenizer
        self.table: ControlTable = control_table(self.name)
        self.validate_bodies = validate_bodies
        self._valid_headers: set[tuple[str | None, ...]] = set()
        #: controls with no id in this tokenizer: spelled as text, so content must escape them
        self.text_controls: tuple[str, ...] = tuple(c for c in self.table.controls if tokenizer.control_id(c) is None)
        self._escape_re = (
            re.compile("(?=" + "|".join(re.escape(c) for c in self.text_controls) + ")") if self.text_controls else None
        )
        # the cheap "could it need escaping" test (ChatML's <s> / </s> do not start with "<|")
        self._escape_probe = "<|" if all(c.startswith("<|") for c in self.text_controls) else "<"

    def init_options(self) -> dict[str, Any]:
        """The keyword options this instance was built with (a text-only twin for ``to_text`` gets them)."""
        return {}

    # -- conversation level -------------------------------------------------
    def read(self, obj: Any, shape: str = "auto") -> Conversation:
        """Input -> ``Conversation`` (``encoder.adapters``); a format with input shapes of its own
        (Apertus ``blocks``) maps them here first."""
        return to_conversation(obj, self.chat_style, shape)  # type: ignore[arg-type]

    def message_flags(self, messages: Sequence[Message], policy: MaskPolicy) -> list[Flags]:
        """Per message: (prompt, header, body, end) trained? (``encoder.masks``)."""
        from ..masks import message_flags

        return message_flags(messages, policy)

    def frame_pieces(self, conv: Conversation) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
        """Pieces before the first message and after the last (not in prompt mode): never trained."""
        return (), ()

    def prompt_continues(self, m: Message) -> bool:
        """Prompt mode: does the model continue the last message ``m`` (left open, no generation prompt)?"""
        return False

    def frame_machine(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None = None,
                      markers: frozenset[str] = frozenset()) -> FrameMachine:
        """The state machine that reads this format's atoms (parse, parse_text, stream decoder)."""
        from ..frames import FrameMachine

        return FrameMachine(harmony=self.name == "harmony", strict=strict, role=role, emit=emit, markers=markers)

    def stop_reasons(self, role: str | None) -> Mapping[str, str]:
        """Controls after which a stream stops, and the ``Stop.reason`` of each."""
        return STOP_REASONS

    def fim_pieces(self, **kw: Any) -> list[tuple[Piece, bool, int]]:
        raise UnknownNameError(f"format {self.name!r} has no fill-in-the-middle tokens", code="E-FORMAT-UNAVAILABLE",
                               field="format", hint="use Encoder('chatml') for fill-in-the-middle")

    def mask_unsupported(self, policy: MaskPolicy) -> str | None:
        """Why this format cannot apply ``policy`` (None: it can); the caller makes it a usage error."""
        return None

    def cot_policies(self) -> tuple[CotPolicy, ...]:
        """The CoT policies that mean something here (any other is a usage error, not ignored)."""
        return tuple(CotPolicy)

    def normalize(self, conv: Conversation) -> Conversation:
        """Format-specific rewriting (system synthesis, attribute defaults)."""
        return conv

    def validate(self, conv: Conversation) -> None:
        calls: dict[str, int] = {}
        bodies = self.validate_bodies
        for i, m in enumerate(conv.messages):
            self.validate_header(m, i)  # one key and one set lookup on the common path: headers repeat
            if bodies and (m.constrain is not None or m.content_type is not None):
                self.validate_body(m, i)
            if m.call_id is None:
                continue
            if m.is_tool_call:
                calls[m.call_id] = i
            if self.is_tool_reply(m) and calls and m.call_id not in calls:
                raise CallSchemaError(f"tool reply call_id {m.call_id!r} matches no earlier tool call",
                                      index=i, field="call_id", hint="echo the call_id of the call this replies to")

    def validate_header(self, m: Message, i: int) -> None:
        key = self.header_key(m)
        if key in self._valid_headers:  # headers repeat across messages: check each once
            return
        self._check_header(m, i)
        if len(self._valid_headers) > 65536:
            self._valid_headers.clear()
        self._valid_headers.add(key)

    def _check_header(self, m: Message, i: int) -> None:
        self.check_role(m.role, i)
        for f in HEADER_FIELDS:
            val = getattr(m, f)
            if val is None:
                continue
            if val == "" or _BAD_HEADER.search(val):
                raise HeaderError(
                    f"{f} {val!r} is empty or contains whitespace, '<', '>' or '|'",
                    index=i, field=f,
                    hint="header values are single words; put free text in the content",
                )
        if self.channels is not None and m.channel is not None and m.channel not in self.channels:
            raise HeaderError(f"channel {m.channel!r} is not one of {', '.join(self.channels)}", index=i,
                              field="channel")

    def check_role(self, role: str, i: int | None) -> None:
        """The role grammar: one of ``roles``, or ``functions.NAME`` (a legacy tool reply)."""
        if role in self.roles or (self.tool_namespace_roles and role.startswith("functions.") and len(role) > 10):
            return
        raise HeaderError(f"unknown role {role!r} for {self.name}", code="E-ROLE-UNKNOWN", index=i, field="role",
                          hint=suggest(role, self.roles) + "roles: " + ", ".join(self.roles))

    def validate_body(self, m: Message, i: int) -> None:
        ctype = m.constrain or m.content_type
        if m.constrain and m.content_type and m.constrain != m.content_type:
            raise HeaderError(f"constrain {m.constrain!r} and content_type {m.content_type!r} disagree",
                              index=i, field="constrain")
        # call bodies read from OpenAI tool_calls were checked where they were read (encoder.arguments)
        if ctype == "json" and m.structured is None and not _read_checked(m.source_field):
            check_json(m.content, index=i, what="tool-call arguments" if m.is_tool_call else "body")

    @staticmethod
    def is_tool_reply(m: Message) -> bool:
        return m.role == "tool" or m.role.startswith("functions.")

    def context(self, conv: Conversation) -> PlanContext:
        # Harmony's rule: the system text gains the "Calls to these tools..." line when any
        # developer message declares function tools.
        return PlanContext(has_function_tools=any(getattr(m.structured, "has_function_tools", False)
                                                  for m in conv.messages if m.role == "developer"))

    # -- message level --------------------------------------------------------
    def header_key(self, m: Message) -> tuple[str | None, ...]:
        """Everything ``plan`` reads to build the prompt + header pieces: the renderer caches
        their ids under it.  A subclass whose header depends on anything else must extend it."""
        return (m.role, m.channel, m.recipient, m.call_id, m.name, m.intent, m.content_type, m.constrain)  # HEADER_FIELDS

    def plain_body(self, m: Message) -> str | None:
        """The body when ``plan`` would make it one unescaped text piece, else None (the
        renderer then asks ``plan``).  This is the common case the renderer keeps cheap."""
        if m.structured is not None or m.parts is not None or (self.text_controls and "<" in m.content):
            return None
        return m.content

    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        raise NotImplementedError

    def generation_prompt(self) -> tuple[Piece, ...]:
        return ((CTL, "<|start|>"), (TXT, "assistant"))

    def is_final(self, m: Message) -> bool:
        """Does this assistant message close the answer (gets ``<|return|>`` when last in training)?"""
        return m.effective_channel == "final" and m.recipient is None

    def end_token(self, m: Message, last_of_train: bool) -> str:
        """``<|call|>`` for a tool call; ``return_token`` for the final answer that ends a
        training render (``last_of_train``: ``m`` is its last message); else ``<|end|>``."""
        if m.role == "assistant" and m.recipient is not None:
            return "<|call|>"
        if last_of_train and self.return_token and m.role == "assistant" and self.is_final(m):
            return self.return_token
        return "<|end|>"

    # -- text-mode escaping -----------------------------------------------------
    def escape(self, text: str) -> str:
        """Double the ``<`` of every control spelled as text (OpenChatML 2.2 §3)."""
        if self._escape_re is None or self._escape_probe not in text:
            return text
        return self._escape_re.sub("<", text)

    def body_pieces(self, m: Message, text: str, end: str, index: int) -> tuple[Piece, ...]:
        """One text piece, escaped where controls are text; a trailing ``<`` must not read as an escape."""
        if not self.text_controls:
            return ((TXT, text),)
        body = self.escape(text)
        if body.endswith("<") and end in self.text_controls:
            stripped = body.rstrip("<")
            run = body[len(stripped):]
            if "<|literal|>" in self.table.controls and "<|endliteral|>" not in text:
                return ((TXT, stripped), (CTL, "<|literal|>"), (TXT, run), (CTL, "<|endliteral|>"))
            raise UnrepresentableError(
                "content ends with '<' right before a control spelled as text; it would read as an escape",
                index=index, field="content",
                hint="register the control tokens on the tokenizer (vocab.load(..., register=...)) or use openchatml-2.2",
            )
        return ((TXT, body),)


def _read_checked(source_field: str | None) -> bool:
    return source_field is not None and source_field.startswith(("tool_calls[", "function_call"))


class PlanContext:
    """Per-render facts a format may need (kept tiny: built once per render)."""

    __slots__ = ("has_function_tools",)

    def __init__(self, has_function_tools: bool = False) -> None:
        self.has_function_tools = has_function_tools


def attrs(pairs: Sequence[tuple[str, str | None]]) -> str:
    return "".join(f" {k}={v}" for k, v in pairs if v is not None)
