"""Plain-text transcripts: ``to_text`` / ``parse_text``.

A 2.x transcript starts with the YAML document header (§2): ``version`` (required
when writing), then optional ``model`` / ``generation_settings``; it is file
metadata and never tokenized.  It ends at the first line that starts with ``<|``
(or at a ``---`` / ``...`` line).  Frames are written one per line; whitespace
between frames is layout.  Every control is spelled as text, so content is escaped
(``<<|start|>``, ``ocml.encoder.grammar.escape``), whatever the tokenizer registers.  Harmony
transcripts have no YAML header.

Limitation: text that ends in ``<`` right before a control (``a<`` + ``<|end|>``) has no
escape in a transcript (it would read as the escaped text ``a<|end|>``).  OpenChatML 2.2
writes that ``<`` run in a literal block; Harmony, OpenChatML 2.0, ChatML and Apertus raise
``E-UNREPRESENTABLE`` naming the field (``render`` with registered controls writes it
fine).  Lone surrogates are refused with ``E-INPUT-ENCODING`` by ``to_text`` (at the
message and field) and ``parse_text`` (field ``text``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from ocml.vocab.errors import as_strings

from .errors import InputError, ParseError
from .grammar.text import check_text
from .messages import Conversation, CotPolicy, Mode, Options
from .parse import TextSplitter

if TYPE_CHECKING:
    from .codec import Codec, Renders
    from .formats.base import Format


class _TextOnly:
    """A tokenizer view with no registered controls: every control is spelled as text."""

    def control_id(self, token: str) -> None:
        return None


def _build_text_format(enc: Codec) -> Format:
    return type(enc.format)(_TextOnly(), validate_bodies=False, **enc.format.init_options())  # type: ignore[arg-type]


def _text_format(enc: Codec | Renders) -> Format:
    """The format on a tokenizer view with no controls (every control spelled as text): built once per codec."""
    return enc.table(_build_text_format)


def _build_text_reader(enc: Codec) -> tuple[TextSplitter, frozenset[str]]:
    return TextSplitter(_text_format(enc).text_controls), frozenset(enc.format.table.markers)


def _text_reader(enc: Codec) -> tuple[TextSplitter, frozenset[str]]:
    """The splitter for text where every control is spelled out, and the format's markers:
    built once per codec (parse_text is called per transcript)."""
    return enc.table(_build_text_reader)


def to_text(enc: Renders, conversation: Any, *, mode: Mode, cot: CotPolicy | str | None, header: bool) -> str:
    conv, keep = enc.prepare(conversation, cot)
    fmt = _text_format(enc)
    ctx = enc.format.context(conv)
    msgs = [conv.messages[i] for i in keep]
    frames = []
    # the same layout as the renderer's: framing, terminators, pieces after each message,
    # a last message the model continues in prompt mode (see ``Renderer.layout``)
    cont = mode is Mode.CONTINUE or (mode is Mode.PROMPT and bool(msgs) and fmt.prompt_continues(msgs[-1]))
    after = "".join(v for _, v in fmt.text_layout.after_message)
    prefix, suffix = fmt.frame_pieces(conv)
    for j, m in enumerate(msgs):
        last = j == len(msgs) - 1
        end = "" if cont and last else fmt.end_token(m, mode in (Mode.TRAIN, Mode.CONTINUE) and last)
        plan = fmt.plan(m, end, ctx)
        frames.append("".join(v for _, v in (*plan.prompt, *plan.header, *plan.body, *plan.end))
                      + ("" if cont and last else after))
    if mode is Mode.PROMPT and not cont:
        frames.append("".join(v for _, v in fmt.generation_prompt()))
    body = fmt.transcript.joiner.join(frames)
    bare = mode in (Mode.PROMPT, Mode.CONTINUE)  # the model writes next: no closing framing
    if prefix or (suffix and not bare):
        body = "".join(v for _, v in prefix) + body + ("" if bare else "".join(v for _, v in suffix))
    if not header or enc.format.transcript.version is None:
        return body
    meta: dict[str, Any] = {"version": enc.format.transcript.version}
    settings: dict[str, Any] = {}
    if conv.options.reasoning_effort:
        settings["reasoning_effort"] = conv.options.reasoning_effort
    if conv.options.builtin_tools:
        settings["builtin_tools"] = list(conv.options.builtin_tools)
    if settings:
        meta["generation_settings"] = settings
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return head + body


def _split_header(text: str) -> tuple[dict[str, Any], str]:
    stripped = text.lstrip()
    if stripped.startswith("<|") or not stripped:
        return {}, text
    lines = stripped.split("\n")
    start = 1 if lines[0].strip() == "---" else 0
    end = start
    while end < len(lines) and not lines[end].lstrip().startswith("<|") and lines[end].strip() not in ("---", "..."):
        end += 1
    rest_from = end + 1 if end < len(lines) and lines[end].strip() in ("---", "...") else end
    try:
        meta = yaml.safe_load("\n".join(lines[start:end])) or {}
    except yaml.YAMLError as exc:
        raise ParseError(f"the YAML document header does not parse: {exc}", code="E-PARSE-DOCUMENT-HEADER",
                         hint="start the transcript with 'version: 2.2' lines, then the frames") from None
    if not isinstance(meta, dict):
        raise ParseError("the document header is not a YAML mapping", code="E-PARSE-DOCUMENT-HEADER")
    return meta, "\n".join(lines[rest_from:])


def parse_text(enc: Codec, text: str, *, strict: bool = False) -> Conversation:
    if not isinstance(text, str):
        raise InputError("parse_text() takes a str", field="text")
    check_text(text, index=None, field="text")  # the input policy: lone surrogates are refused, typed
    meta, body = _split_header(text) if enc.format.transcript.version is not None else ({}, text)
    version = str(meta.get("version", "")) if meta else ""
    if version and not (version.startswith("2") or version.startswith("1")):
        raise ParseError(f"transcript version {version} is not 1.x or 2.x", code="E-PARSE-DOCUMENT-HEADER",
                         field="version")
    splitter, markers = _text_reader(enc)
    fm = enc.format.frame_machine(strict=strict, role=None, markers=markers)
    splitter.feed(body.encode("utf-8"), fm, 0, False)
    fm.finish(0)
    gs = meta.get("generation_settings") or {}
    options = Options(
        reasoning_effort=gs.get("reasoning_effort") if isinstance(gs, dict) else None,
        builtin_tools=(as_strings(gs["builtin_tools"], "generation_settings.builtin_tools")
                       if isinstance(gs, dict) and gs.get("builtin_tools") else None),
        extra={k: v for k, v in meta.items() if k not in ("version", "generation_settings")},
    )
    return Conversation(tuple(fm.messages), options)


__all__ = ["parse_text", "to_text"]
