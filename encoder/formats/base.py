"""What every format shares: header validation, body constraints, text-mode escaping.

A format turns one message into a ``MessagePlan`` (pieces); it never encodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ocml.vocab import ControlTable, Tokenizer, control_table

from ..adapters import DEFAULT_STYLE, ChatStyle, to_conversation
from ..errors import CallSchemaError, HeaderError, UnknownNameError
from ..grammar.escape import Escaper
from ..grammar.headers import HEADER_FIELDS, PLAIN, Header, HeaderStyle, check_round_trip, parse_header
from ..grammar.headers import check_value as check_header_value
from ..grammar.roles import RoleGrammar
from ..grammar.terminators import Terminators, terminators_of
from ..grammar.text import check_text
from ..messages import Conversation, Message
from ..arguments import check_json
from ..messages import CotPolicy
from ..pieces import CTL, TXT, MessagePlan, Piece
from .strategies import MESSAGES, PIECES, PLAIN_TRANSCRIPT, TextLayout, TranscriptStyle, TurnShape

if TYPE_CHECKING:
    from ..frames import FrameMachine
    from ..masks import Flags, MaskPolicy


class Format:
    """Base class: subclasses set ``name`` and implement ``plan``/``generation_prompt``."""

    name: ClassVar[str]
    # What differs between formats is a strategy object each class picks, not a flag:
    #: how a header is written and read (``ocml.encoder.grammar.headers.HeaderStyle``): its role
    #: grammar (the one table render, parse, ``parse_text`` and the stream decoder read), its
    #: channel words, attributes, ``<|constrain|>``, Harmony's bare-word and answer rules
    header_style: ClassVar[HeaderStyle] = PLAIN
    #: how OpenAI / HF chat dicts map into this format (applied by ``ocml.encoder.adapters``)
    chat_style: ClassVar[ChatStyle] = DEFAULT_STYLE
    #: how a message's pieces become ids (``strategies.TextLayout``: per piece or whole runs)
    text_layout: ClassVar[TextLayout] = PIECES
    #: what an assistant turn is (``strategies.TurnShape``: messages per channel or one of blocks)
    turns: ClassVar[TurnShape] = MESSAGES
    #: how ``to_text`` writes a transcript (``strategies.TranscriptStyle``)
    transcript: ClassVar[TranscriptStyle] = PLAIN_TRANSCRIPT

    def __init__(self, tokenizer: Tokenizer, *, validate_bodies: bool = True) -> None:
        self.tokenizer = tokenizer
        #: the role grammar (``header_style.roles``) and the roles a message may have
        self.role_grammar: RoleGrammar = self.header_style.roles
        self.roles: tuple[str, ...] = self.role_grammar.roles
        self.table: ControlTable = control_table(self.name)
        self.validate_bodies = validate_bodies
        #: the stop and terminator tables, built from the token data (``ocml.encoder.grammar.terminators``)
        self.terminators: Terminators = terminators_of(self.name)
        #: the control that ends the last assistant ``final`` of a training render (None: the format has none)
        self.return_token: str | None = self.terminators.control_for("return")
        self._call_token = self.terminators.control_for("call")
        self._end_token = self.terminators.control_for("end")
        if type(self).end_token is Format.end_token and (self._call_token is None or self._end_token is None):
            # the generic end rule writes these two: a format without one control for each
            # overrides end_token (ChatML, Apertus), else its data is wrong
            raise ValueError(f"{self.name}.json: end_reasons name no single 'call' and 'end' control; "
                             f"{type(self).__name__} must override end_token")
        self._valid_headers: set[tuple[str | None, ...]] = set()
        #: controls with no id in this tokenizer: spelled as text, so every text written must escape them
        self.text_controls: tuple[str, ...] = tuple(c for c in self.table.controls if tokenizer.control_id(c) is None)
        #: the escape rule for this tokenizer (``ocml.encoder.grammar.escape``: its one home)
        self.escaper = Escaper(self.table.controls, self.text_controls)

    def init_options(self) -> dict[str, Any]:
        """The keyword options this instance was built with (a text-only twin for ``to_text`` gets them)."""
        return {}

    # -- conversation level -------------------------------------------------
    def read(self, obj: Any, shape: str = "auto") -> Conversation:
        """Input -> ``Conversation`` (``ocml.encoder.adapters``); a format with input shapes of its own
        (Apertus ``blocks``) maps them here first."""
        return to_conversation(obj, self.chat_style, shape)  # type: ignore[arg-type]

    def message_flags(self, messages: Sequence[Message], policy: MaskPolicy) -> list[Flags]:
        """Per message: (prompt, header, body, end) trained? (``ocml.encoder.masks``)."""
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
        raise NotImplementedError

    def turn_of(self, m: Message, end: str, role: str | None) -> Message:
        """``m`` (a parsed message that ended with ``end``, read as ``role``) as the OpenAI view
        reads it: a format whose turns are read from the text (ChatML) puts them in ``structured``."""
        return m

    def stop_reasons(self, role: str | None) -> Mapping[str, str]:
        """Controls after which a stream read as ``role`` stops, and the ``Stop.reason`` of each
        (the data's, ``ocml.encoder.grammar.terminators``); the first is the turn's end."""
        return self.terminators.stream_stops(role)

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
        valid, header_key = self._valid_headers, self.header_key
        for i, m in enumerate(conv.messages):
            if header_key(m) not in valid:  # headers repeat: validate_header's check, without its call
                self.validate_header(m, i)
            if not m.content.isascii():  # the input-encoding policy (``ocml.encoder.grammar.text``)
                check_text(m.content, index=i, field="content")
            if m.parts is not None:
                for k, part in enumerate(m.parts):
                    check_text(part, index=i, field=f"content[{k}]")
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
        """The header grammar at render (``ocml.encoder.grammar.headers``): the role, each value a
        single word, and the text this format writes reads back as the same fields."""
        self.check_role(m.role, i)
        for f in HEADER_FIELDS:
            val = getattr(m, f)
            if val is not None:
                check_header_value(f, val, i)
        channels = self.header_style.channels
        if channels is not None and m.channel is not None and m.channel not in channels:
            raise HeaderError(f"channel {m.channel!r} is not one of {', '.join(channels)}", index=i,
                              field="channel")
        written = self.header_text(m)
        if written is not None:
            try:
                got: Header | HeaderError = self.read_header(written)
            except HeaderError as exc:
                got = exc
            check_round_trip(written, self.written_fields(m), got, i, "name" if m.role == "tool" else "role")

    def check_role(self, role: str, i: int | None) -> None:
        """The role grammar (``ocml.encoder.grammar.roles``), the same table the readers use."""
        self.role_grammar.check(role, i, self.name)

    # -- the header as written and read back (render-time round trip) -----------------
    def header_text(self, m: Message) -> str | None:
        """The header text a reader sees for ``m`` (between the frame's start control and the
        body), or None when the format writes no header text."""
        plan = self.plan(m.with_(content="", parts=None, structured=None), self.end_token(m, False), PlanContext())
        pieces = (*plan.prompt[1:], *plan.header)
        if pieces and pieces[-1][0] == CTL:  # the control that opens the body (<|message|>)
            pieces = pieces[:-1]
        if not any(kind != CTL for kind, _ in pieces):
            return None  # the frame's controls say it all (Apertus)
        return "".join(v for _, v in pieces)

    def read_header(self, text: str) -> Header:
        """This format's header reader (the frame machine's): text -> fields."""
        return parse_header(text, style=self.header_style)

    def written_fields(self, m: Message) -> Header:
        """The fields ``m``'s header must read back as."""
        return Header(m.role, m.channel, m.recipient, m.call_id, m.name, m.intent, m.content_type, m.constrain)

    def validate_body(self, m: Message, i: int) -> None:
        ctype = m.constrain or m.content_type
        if m.constrain and m.content_type and m.constrain != m.content_type:
            raise HeaderError(f"constrain {m.constrain!r} and content_type {m.content_type!r} disagree",
                              index=i, field="constrain")
        # call bodies read from OpenAI tool_calls were checked where they were read (encoder.arguments)
        if ctype == "json" and m.structured is None and not _read_checked(m.source_field):
            check_json(m.content, index=i, what="tool-call arguments" if m.is_tool_call else "body")

    def is_tool_reply(self, m: Message) -> bool:
        """A tool's reply: role ``tool``, or a tool's name as the role (the role grammar)."""
        return m.role == "tool" or (m.role not in self.roles and self.role_grammar.is_tool_word(m.role))

    def context(self, conv: Conversation) -> PlanContext:
        """The per-render facts ``plan`` reads (``PlanContext``): none by default."""
        return PlanContext()

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
        """The pieces that open the model's turn in prompt mode."""
        raise NotImplementedError

    def is_final(self, m: Message) -> bool:
        """Does this assistant message close the answer (gets ``<|return|>`` when last in training)?"""
        channel = m.channel if self.header_style.answer_by_channel_word else m.effective_channel
        return channel == "final" and m.recipient is None

    def end_token(self, m: Message, last_of_train: bool) -> str:
        """``<|call|>`` for a tool call; ``return_token`` for the final answer that ends a
        training render (``last_of_train``: ``m`` is its last message); else ``<|end|>``."""
        if m.role == "assistant" and m.recipient is not None:
            return self._call_token  # type: ignore[return-value]
        if last_of_train and self.return_token and m.role == "assistant" and self.is_final(m):
            return self.return_token
        return self._end_token  # type: ignore[return-value]

    # -- text-mode escaping (the rule: ``ocml.encoder.grammar.escape``) ------------------
    def escape(self, text: str) -> str:
        """Double the ``<`` of every control spelled as text (OpenChatML 2.2 §3)."""
        return self.escaper.escape(text)

    def body_pieces(self, m: Message, text: str | Sequence[str], end: str, index: int | None,
                    field: str = "content") -> tuple[Piece, ...]:
        """Text (one piece, or several that read as one run: Harmony content items) written
        before the terminator ``end`` by the escape rule."""
        if isinstance(text, str):
            return self.escaper.text_before(text, end, field=field, index=index)
        pieces: tuple[Piece, ...] = tuple((TXT, t) for t in text)
        if not self.escaper:
            return pieces
        out = self.escaper.write(pieces + (((CTL, end),) if end else ()), field=field, index=index)
        return out[:-1] if end else out


def _read_checked(source_field: str | None) -> bool:
    return source_field is not None and source_field.startswith(("tool_calls[", "function_call"))


class PlanContext:
    """Per-render facts a format may need (kept tiny: built once per render)."""

    __slots__ = ("has_function_tools",)

    def __init__(self, has_function_tools: bool = False) -> None:
        self.has_function_tools = has_function_tools
