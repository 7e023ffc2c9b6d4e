"""ChatML / OpenChatML v0.1 (format ``chatml``): ``<|im_start|>ROLE[ name=X]\\nCONTENT<|im_end|>\\n``.

Where ChatML frames are built: ``ChatML.plan``; read back by ``chatml.frames.ChatMLMachine``;
fill-in-the-middle documents: ``chatml.fim``.

Layouts (``layout=``):
- ``"deployed"`` (default): standard ChatML as deployed (OpenAI ``chatml.md``, the HF
  one-liner, Qwen2.5): ``<|im_start|>role\\ncontent<|im_end|>\\n``, generation prompt
  ``<|im_start|>assistant\\n``.
- ``"v0.1-literal"``: the spec's own ``<|im_start|>role\\ncontent\\n<|im_end|>\\n`` (its
  README has both spellings; the newline before ``<|im_end|>`` is layout: parse drops it).
``bos_eos=True`` frames the conversation in ``<s>`` ... ``</s>`` as the spec shows (``<s>\\n``
in the literal layout); deployed ChatML has no BOS.  Roles: system, tool, user, assistant;
``name`` has no whitespace (``E-PARSE-HEADER``-class ``HeaderError``).

Ids: the whole-run rule (``TextLayout.whole_runs``): each run of text between two
registered controls (``assistant\\n`` + the content) is encoded in one call, as the
models saw the template's text.  Mask (default): an assistant frame's content and its
``<|im_end|>``; the header line ``<|im_start|>assistant[ name=X]\\n`` is the runtime's
prompt and the ``\\n`` after ``<|im_end|>`` is layout (never trained).  A token that
straddles the header/content boundary (content starting with ``\\n``) is trained
(``ocml.encoder.whole_runs``).

OpenAI / HF chat data with tools renders as Qwen2.5's template (the ChatML of deployed
tool use): the tool list in the system frame (``# Tools`` ... ``<tools>`` one JSON line per
tool ``</tools>`` ...), each call ``<tool_call>\\n{"name": N, "arguments": A}\\n</tool_call>``
in the assistant frame (after its text, ``\\n``-separated), consecutive tool results in
one ``user`` frame of ``<tool_response>\\nR\\n</tool_response>`` items.  Those frames are
the normalised messages, so parse gives them back as text (``tool_calls_of`` reads the
calls); the OpenAI view (``to_openai``, the stream decoder, the chunker, the response
template) reads an assistant frame as a turn (``turn_of``, ``chatml.turns``): ``<think>``
into reasoning (``reasoning="think"``), ``<tool_call>`` blocks into ``tool_calls``.  Differences from ``trl/chat_templates/qwen2_5.jinja``, all deliberate:
- no system frame is invented unless asked: Qwen always writes "You are Qwen, created by
  Alibaba Cloud..." (pass ``default_system=QWEN_SYSTEM`` for byte parity); with tools and
  no system text the frame starts at ``# Tools``;
- ``name=`` is rendered (the spec); Qwen drops names;
- call arguments given as a JSON string are written as that JSON (Qwen's ``tojson``
  double-encodes strings; dict arguments agree); arguments that are not JSON are
  ``E-BODY-CONSTRAINT-VIOLATION``, the one rule of every format (``ocml.encoder.arguments``);
  tools are written in the OpenAI wrapped form ``{"type": "function", "function": {name,
  description, parameters}}`` whatever form they came in (Qwen dumps each as given);
- reasoning (``analysis``) follows ``reasoning=`` (``ocml.encoder.reasoning``): ``error`` (default,
  ChatML has no channel for it), ``drop``, or ``think`` (Qwen3's ``<think>`` block before the
  answer, in the same frame); the CoT policy picks which reasoning is kept, before frames are built;
- content is always text: ``<|im_end|>`` inside content never becomes the control
  (with a Jinja template on HF tokenizers it does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from ...arguments import check_json
from ...errors import CallSchemaError, InputError, UnknownNameError
from ...grammar.headers import Header
from ...grammar.headers import HeaderStyle
from ...grammar.roles import RoleGrammar
from ...messages import Conversation, Message
from ...messages import CotPolicy
from ...reasoning import Reasoning, parse_reasoning, think_block
from ...plan import CTL, TXT, MessagePlan, Piece
from ..base import Format, PlanContext
from ..strategies import TextLayout, TranscriptStyle, TurnShape
from . import QWEN_SYSTEM
from .fim import FIM_ROLE
from .turns import CALL_CLOSE, CALL_OPEN, ChatMLTurn, read_call, read_turn

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer

    from ...read.frames import FrameMachine
    from ...masks import Flags, MaskPolicy

_TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
_TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments "
               "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
               "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")


class Layout(str, Enum):
    DEPLOYED = "deployed"
    LITERAL = "v0.1-literal"


class ChatML(Format):
    name: ClassVar[str] = "chatml"
    #: ``<|im_start|>ROLE[ name=NAME]\n``: four roles (read by ``frames.parse_chatml_header``)
    header_style: ClassVar[HeaderStyle] = HeaderStyle(RoleGrammar(("system", "tool", "user", "assistant")))
    text_layout: ClassVar[TextLayout] = TextLayout(whole_runs=True, after_message=((TXT, "\n"),))
    transcript: ClassVar[TranscriptStyle] = TranscriptStyle(joiner="")
    #: the OpenAI view reads an assistant frame as a turn (``turn_of``: think block, answer, calls)
    #: an assistant frame is one turn of blocks; reasoning is written inside it: the CoT policy
    #: applies first (``Encoder.prepare``), ``reasoning=`` decides what the rest becomes
    turns: ClassVar[TurnShape] = TurnShape(blocks=True, inline_reasoning=True)

    def __init__(self, tokenizer: Tokenizer, *, validate_bodies: bool = True, layout: str = "deployed",
                 bos_eos: bool = False, default_system: str | None = None, reasoning: str = "error") -> None:
        super().__init__(tokenizer, validate_bodies=validate_bodies)
        try:
            self.layout = Layout(layout)
        except ValueError:
            raise UnknownNameError(f"unknown chatml layout {layout!r}", field="layout",
                                   hint="'deployed' (<|im_start|>role\\ncontent<|im_end|>) or 'v0.1-literal' "
                                        "(the spec's content\\n<|im_end|>)") from None
        if type(bos_eos) is not bool:
            raise InputError(f"bos_eos must be True or False, got {bos_eos!r}", field="bos_eos")
        if default_system is not None and not isinstance(default_system, str):
            raise InputError("default_system must be a string or None", field="default_system",
                             hint="e.g. encoder.formats.chatml.QWEN_SYSTEM")
        self.bos_eos = bos_eos
        self.default_system = default_system
        self.reasoning = parse_reasoning(reasoning)
        self._tail = "\n" if self.layout is Layout.LITERAL else ""

    def init_options(self) -> dict[str, Any]:
        return {"layout": self.layout.value, "bos_eos": self.bos_eos, "default_system": self.default_system,
                "reasoning": self.reasoning.value}

    def mask_unsupported(self, policy: MaskPolicy) -> str | None:
        if policy.channels is not None or not policy.tool_call_bodies:
            return "a ChatML assistant frame holds its answer, tool calls and reasoning together: masks by channel or tool-call body cannot apply (roles and last_turn_only can)"
        return None

    def cot_policies(self) -> tuple[CotPolicy, ...]:
        if self.reasoning is Reasoning.DROP:  # keeping reasoning contradicts dropping it
            return (CotPolicy.DEFAULT, CotPolicy.DROP_ALL)
        return tuple(CotPolicy)

    # -- conversation level ------------------------------------------------------
    def normalize(self, conv: Conversation) -> Conversation:
        """One message per ChatML frame (the Qwen2.5 tool layout for OpenAI / HF chat data)."""
        msgs = conv.messages
        out: list[Message] = []
        tools = conv.options.tools
        start = 0
        first_system = bool(msgs) and msgs[0].role == "system"
        if tools:
            src = msgs[0] if first_system else None
            text = src.content if src is not None else self.default_system
            out.append(Message(role="system", content=(text + "\n\n" if text is not None else "") + tools_block(tools),
                               name=src.name if src else None, train=src.train if src else None,
                               source=src.source if src else None, source_field=src.source_field if src else None))
            start = 1 if first_system else 0
        elif not first_system and self.default_system is not None:
            out.append(Message(role="system", content=self.default_system))
        i = start
        n = len(msgs)
        while i < n:
            m = msgs[i]
            if m.role == "assistant":
                think = None
                if m.channel == "analysis":
                    think, i = self._reasoning(msgs, i)
                    if i >= n or msgs[i].role != "assistant" or msgs[i].source != m.source \
                            or msgs[i].channel == "analysis":
                        if think is not None:  # reasoning with no answer in its message: a frame of its own
                            out.append(_frame(m, think_block(think, "")))
                        continue
                    m = msgs[i]
                j = i + 1 if m.recipient is None else i
                parts = [m.content] if (m.recipient is None and m.content) else []
                while j < n and msgs[j].role == "assistant" and msgs[j].recipient is not None \
                        and msgs[j].source == m.source:
                    parts.append(self._tool_call(msgs[j], j))
                    j += 1
                body = "\n".join(parts) if j > i + 1 or m.recipient is not None else m.content
                out.append(_frame(m, body if think is None else think_block(think, body)))
                i = max(j, i + 1)
            elif m.role == "tool" and (conv.chat or m.recipient is not None or m.call_id is not None):
                j = i
                while j < n and msgs[j].role == "tool":
                    j += 1
                body = "\n".join(f"<tool_response>\n{r.content}\n</tool_response>" for r in msgs[i:j])
                out.append(Message(role="user", content=body, train=m.train, source=m.source,
                                   source_field=m.source_field))
                i = j
            else:
                out.append(_frame(m, m.content))
                i += 1
        return Conversation(tuple(out), conv.options, chat=conv.chat)

    def _reasoning(self, msgs: Sequence[Message], i: int) -> tuple[str | None, int]:
        """The ``reasoning=`` policy on the analysis message(s) at ``i`` (``ocml.encoder.reasoning``):
        the reasoning text to write (None: nothing) and the index after them."""
        m = msgs[i]
        if self.reasoning is Reasoning.ERROR:
            raise InputError("chatml has no reasoning channel", code="E-INPUT-REASONING", index=i,
                             field="content",
                             hint="choose what to do with reasoning_content / thinking: Encoder('chatml', "
                                  "reasoning='think') writes it as <think>...</think> before the answer (Qwen3), "
                                  "reasoning='drop' leaves it out (CLI: --reasoning think|drop)")
        texts = []
        while i < len(msgs) and msgs[i].channel == "analysis" and msgs[i].role == "assistant" \
                and msgs[i].source == m.source:
            texts.append(msgs[i].content)
            i += 1
        return ("\n\n".join(texts) if self.reasoning is Reasoning.THINK else None), i

    def _tool_call(self, m: Message, i: int) -> str:
        name = m.recipient or ""
        if name.startswith("functions."):
            name = name[len("functions."):]
        if not name:  # reads back as no call (chatml.turns needs a name)
            raise CallSchemaError(f"tool call {m.recipient!r} has no function name", index=i, field="name",
                                  hint="name the function the call is for, e.g. 'get_weather'")
        if json.dumps(name, ensure_ascii=False)[1:-1] != name:
            # Qwen's layout puts the name inside a JSON string as it is: a quote, a backslash or a
            # control character would write a call that reads back as no call (chatml.turns)
            raise CallSchemaError(f"tool name {name!r} cannot be written in a <tool_call>: JSON would need to "
                                  "escape it", index=i, field="name",
                                  hint="use a tool name of letters, digits, '_', '-' or '.' (OpenAI's rule)")
        args = m.content
        if self.validate_bodies:
            check_json(args, index=i, what="tool-call arguments")  # the one argument rule (encoder.arguments)
        return '<tool_call>\n{"name": "' + name + '", "arguments": ' + args + "}\n</tool_call>"

    def message_flags(self, messages: Sequence[Message], policy: MaskPolicy) -> list[Flags]:
        # The header line is always the runtime's prompt: the model stops at <|im_end|> and
        # never writes the next <|im_start|>assistant\n, even inside an assistant turn.
        return [(False, False, b, e) for _, _, b, e in super().message_flags(messages, policy)]

    def frame_pieces(self, conv: Conversation) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
        if not self.bos_eos:
            return (), ()
        head: tuple[Piece, ...] = ((CTL, "<s>"),) + (((TXT, "\n"),) if self._tail else ())
        return head, ((CTL, "</s>"),)

    def read_header(self, text: str) -> Header:
        from .frames import parse_chatml_header

        return parse_chatml_header(text.split("\n", 1)[0], self.roles)

    def check_role(self, role: str, i: int | None) -> None:
        if role == FIM_ROLE and i is None:  # decoder(role="fim"): a middle after <|fim_middle|>
            return
        super().check_role(role, i)

    # -- message level ---------------------------------------------------------------
    def plain_body(self, m: Message) -> str | None:
        body = super().plain_body(m)
        return body + self._tail if body is not None and self._tail else body

    def plan(self, m: Message, end: str, ctx: PlanContext) -> MessagePlan:
        header = ((TXT, (f" name={m.name}" if m.name else "") + "\n"),)
        body = self.body_pieces(m, m.content + self._tail, end, -1)
        return MessagePlan(((CTL, "<|im_start|>"), (TXT, m.role)), header, body, ((CTL, end),) if end else ())

    def generation_prompt(self) -> tuple[Piece, ...]:
        return ((CTL, "<|im_start|>"), (TXT, "assistant\n"))

    def end_token(self, m: Message, last_of_train: bool) -> str:
        return "<|im_end|>"

    # -- reading back -------------------------------------------------------------
    def frame_machine(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None = None,
                      markers: frozenset[str] = frozenset()) -> FrameMachine:
        from .frames import ChatMLMachine

        return ChatMLMachine(strict=strict, role=role, emit=emit, roles=self.roles,
                             literal=self.layout is Layout.LITERAL, terminators=self.stop_reasons(role),
                             think=self.reasoning is Reasoning.THINK)

    def turn_of(self, m: Message, end: str, role: str | None) -> Message:
        """An assistant frame with its turn read (``chatml.turns``): reasoning, answer and calls as
        ``structured`` parts for the OpenAI view; a fill-in-the-middle middle is all answer."""
        if m.role != "assistant":
            return m
        if role == FIM_ROLE:
            parts = (m.with_(channel=None),) if m.content else ()
            return m.with_(structured=ChatMLTurn(parts))
        return m.with_(structured=read_turn(m.content, think=self.reasoning is Reasoning.THINK, end=end))

    def fim_pieces(self, **kw: Any) -> list[tuple[Piece, bool, int]]:
        from .fim import fim_pieces

        return fim_pieces(self, **kw)


def _frame(m: Message, content: str) -> Message:
    return Message(role=m.role, content=content, name=m.name, train=m.train, source=m.source,
                   source_field=m.source_field)


def tools_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """Qwen2.5's tool section: one JSON line per tool (OpenAI wrapped form)."""
    lines = []
    for t in tools:
        fn: dict[str, Any] = {"name": t["name"], "description": t.get("description") or ""}
        if t.get("parameters") is not None:
            fn["parameters"] = t["parameters"]
        lines.append("\n" + json.dumps({"type": "function", "function": fn}, ensure_ascii=False))
    return _TOOLS_HEAD + "".join(lines) + _TOOLS_TAIL


def tool_calls_of(message: Message | str) -> list[dict[str, Any]]:
    """The ``<tool_call>`` JSON objects of an assistant frame (Qwen2.5 layout), in order, as
    ``{"name", "arguments"}`` (arguments parsed); a call that cannot be read is skipped
    (``chatml.turns.read_call``'s rule; ``to_openai`` reports it)."""
    text = message if isinstance(message, str) else message.content
    out: list[dict[str, Any]] = []
    pos = 0
    while True:
        a = text.find(CALL_OPEN, pos)
        b = text.find(CALL_CLOSE, a + len(CALL_OPEN)) if a >= 0 else -1
        if b < 0:
            return out
        got = read_call(text[a + len(CALL_OPEN):b])
        if not isinstance(got, str):
            out.append({"name": got[0], "arguments": json.loads(got[1])})
        pos = b + len(CALL_CLOSE)
