"""transformers response templates: ``tokenizer.parse_response(ids, prefix=prompt)`` reads ocml formats.

transformers >= 5.13 parses generated text with a declarative ``response_template`` stored
in ``tokenizer_config.json`` (``transformers.utils.chat_parsing``): regions (message
fields) opened and closed by literal or regex delimiters over the *decoded* text, each
region's text parsed (``text``, ``json``...) and optionally reshaped by a ``transform``.
``response_template(enc)`` builds one per format so that ``parse_response`` returns
``enc.to_openai(ids).message`` in the HF chat-template convention (tests:
``tests/template/test_response_template.py``); ``save_pretrained`` writes it.

The HF convention, as the official gpt-oss folder reads its output back (TRL's and
transformers' gpt-oss response templates): the reasoning field is ``thinking`` (what
``apply_chat_template`` reads back; ``to_openai`` says ``reasoning_content``) and tool-call
``arguments`` are the parsed JSON (text when they are not JSON).

The rules of the engines that serve a checkpoint's response template (vLLM's and SGLang's
``--reasoning-parser`` / ``--tool-call-parser`` response-template adapters refuse anything
else at start-up; ``tests/template/test_response_template.py`` encodes them): only the fields
``thinking``, ``content`` and ``tool_calls``; ``defaults`` holding only ``role``;
``thinking`` and ``content`` plain ``text`` with no ``join`` and no ``transform``; the tool
field closed by a delimiter (a call without its closer is dropped).  So there are no helper
fields that swallow markup: text outside every region goes nowhere unless a field has no
opener (the implicit field), and a field that occurs twice in one completion keeps its last
region (``to_openai`` joins them with ``"\\n"``; the engines stream both).

How each format is expressed:

* Harmony, OpenChatML 2.x: every message header is matched whole, from right after
  ``<|start|>assistant`` (or the start of the completion: the prompt's generation prompt
  is cut by ``start_anchor``), so exactly one of three fields opens: ``tool_calls`` (a
  recipient other than ``all``: ``function.name`` is the recipient without ``functions.``,
  ``function.arguments`` the body parsed as JSON), ``content`` (``final``, no channel, or a
  ``commentary`` preamble) or ``thinking`` (the rest) - ``ocml.encoder.openai_message.kind``'s
  rule.  A message ends at ``<|end|>``, ``<|return|>``, ``<|call|>`` or the next ``<|start|>``;
  text between messages and messages of other roles go nowhere, as in ``to_openai``.
* ChatML: a turn as ``to_openai`` reads it (``ocml.encoder.formats.chatml_turns``):
  ``thinking`` is a leading ``<think>`` block (``reasoning="think"`` only), each
  ``<tool_call>`` JSON object a call, ``content`` the rest (one region: text on both sides of
  the calls keeps its last part, the engines' rule).  The calls come parsed (``function.arguments`` a dict, as in transformers' own Qwen template;
  ``to_openai`` gives their JSON text).  Not expressed: a call that cannot be read (the
  parser raises; ``to_openai`` keeps its text as content and reports it), and a completion
  whose prompt prefilled ``<think>\\n`` is read right only with that prompt as ``prefix=``.
* Apertus: ``thinking`` is the thoughts (from ``<|inner_prefix|>`` to ``<|inner_suffix|>``, a
  call list or the turn's end), ``content`` the response text (the rest: the implicit field,
  closed by ``<|assistant_end|>`` or by a call list that never ends, which it swallows: a list
  cut short is dropped, as ``to_openai`` drops it), ``tool_calls`` each ``{"NAME": ARGS}`` of a
  complete call list.  Not expressed: a call whose ARGS holds ``}, {"NAME": `` (it reads as the
  next call), tool outputs after ``<|tools_suffix|>`` (a completion stops there: ``to_openai``
  reports outputs as errors, the template would read them as content).

What a response template cannot express (docs/serving.md): generated tool call ids
(``to_openai``'s ``call_`` + hash: there is no ``id`` in the parsed calls; OpenChatML 2.2's
``call_id=`` header is not read either, a transform cannot make a field optional),
``finish_reason`` (a template parses text, it does not know why generation stopped), an
empty reasoning message (``to_openai`` gives ``""``, the parser drops empty fields),
control-token *text* inside a message (the template reads decoded text, where the
ordinary-token spelling ``<|end|>`` and the control id look the same; ocml's decoder tells
them apart), OpenChatML 2.2 literal blocks (their body may hold control text), and the
lenient report (``to_openai``'s ``errors``).  Fallback mode has no saved folder (no chat
template either), so no response template.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import UnrepresentableError
from ..formats.apertus_blocks import END_TOOLS, INNER, OUTER, TOOLS
from ..formats.chatml_turns import CALL_CLOSE, CALL_OPEN, THINK_CLOSE, THINK_OPEN
from ..reasoning import Reasoning

if TYPE_CHECKING:
    from ..codec import Codec, Renders
    from ..formats.base import Format

__all__ = ["response_template"]

_W = r"[^\s<]*"                                         # a header word
_END = r"(?![^\s<])"                                    # ... ends here
_TO = r"\s*to=(?!all" + _END + r")(?:functions\.(?=[^\s<]))?(?P<name>[^\s<]+)"
_TO_ALL = r"\s*to=all" + _END
_CT = r"(?:\s*<\|constrain\|>" + _W + r"|\s+(?!to=)[^\s<]+)*"   # <|constrain|>TYPE / content type words
_MSG = r"\s*<\|message\|>"
_CH = r"<\|channel\|>"
_CH_ANSWER = _CH + r"(?:final|commentary)" + _END
_CH_OTHER = _CH + r"(?!(?:final|commentary)" + _END + r")" + _W
_CH_ANY = _CH + _W
_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
_TEXT = {"strip": False}
#: tool-call arguments: parsed as JSON (the HF convention), verbatim text when they are not JSON
_ARGS = {"allow_non_json": True, "strip": False}
#: the field names the serving engines route (vLLM, SGLang: ``thinking``, ``content``, ``tool_calls``)
THINKING, CONTENT, TOOL_CALLS = "thinking", "content", "tool_calls"


def _calls(**anchors: Any) -> dict[str, Any]:
    """The ``tool_calls`` field: ``{"type": "function", "function": {"name", "arguments"}}`` per call."""
    return {**anchors, "content": "json", "content_args": _ARGS, "repeats": True, "transform": _CALL}


def _text(**anchors: Any) -> dict[str, Any]:
    """A ``thinking`` / ``content`` field: plain text, one region (the engines' rule)."""
    return {**anchors, "content_args": _TEXT}


def _channel_fields(fmt: Format, call: str, content: str, reasoning: str) -> dict[str, Any]:
    # a message ends at any of the format's terminators (the token data's) or the next frame's start
    close = [*fmt.terminators.reasons, fmt.generation_prompt()[0][1]]
    # A call opens once its end is in the text, or once the text ends after its arguments' closing
    # ``}`` (an engine that strips the stop token: transformers' own gpt-oss case).  A call cut by
    # max_tokens is then no call, and the engine says ``length`` rather than ``tool_calls``.
    ends = r"(?=[\s\S]*?(?:" + "|".join(re.escape(c) for c in close) + r")|[\s\S]*\}\s*\Z)"
    return {TOOL_CALLS: _calls(open_pattern=call + ends, close=close),
            CONTENT: _text(open_pattern=content, close=close),
            THINKING: _text(open_pattern=reasoning, close=close)}


def _anchor(fmt: Format) -> str:
    """Where a header starts: the completion's start, or right after the generation prompt's role."""
    return r"(?:^|(?<=" + re.escape(_prompt(fmt)) + r"))"


def _prompt(fmt: Format) -> str:
    return "".join(text for _, text in fmt.generation_prompt())


def _harmony(fmt: Format) -> dict[str, Any]:
    _A = _anchor(fmt)
    call = _A + r"(?:" + _TO + r"\s*" + _CH_ANY + r"|" + _CH_ANY + _TO + r")" + _CT + _MSG
    content = _A + r"(?:" + _TO_ALL + r")?(?:" + _CH_ANSWER + r"(?:" + _TO_ALL + r")?)?" + _CT + _MSG
    reasoning = _A + r"(?:" + _TO_ALL + r")?" + _CH_OTHER + r"(?:" + _TO_ALL + r")?" + _CT + _MSG
    return _channel_fields(fmt, call, content, reasoning)


def _openchatml(fmt: Format) -> dict[str, Any]:
    _A = _anchor(fmt)
    attr = r"\s+(?!to=|intent=)[A-Za-z_][\w-]*=[^\s<]*"          # call_id=, name=, content_type=...
    intent = r"\s+intent=" + _W
    pre = r"\s+intent=preamble" + _END
    other_intent = r"\s+intent=(?!preamble" + _END + r")" + _W
    any_attrs = r"(?:" + attr + r"|" + intent + r"|" + _TO_ALL + r")*"
    plain = r"(?:" + attr + r"|" + _TO_ALL + r")*"
    call = _A + any_attrs + _TO + any_attrs + r"(?:" + _CH_ANY + r")?" + _CT + _MSG
    content = (_A + r"(?:" + any_attrs + r"(?:" + _CH + r"final" + _END + r")?|" + plain + r"(?:" + pre + plain
               + r")?" + _CH + r"commentary" + _END + r")" + _CT + _MSG)
    reasoning = (_A + r"(?:" + any_attrs + _CH_OTHER + r"|" + plain + other_intent + plain + _CH + r"commentary"
                 + _END + r")" + _CT + _MSG)
    return _channel_fields(fmt, call, content, reasoning)


def _chatml(fmt: Format) -> dict[str, Any]:
    # A turn as ``chatml_turns`` reads it: a leading <think> block (reasoning="think") whose
    # newlines inside and after it are layout; each <tool_call> JSON object a call (one "\n"
    # before it is layout, and so is whitespace between calls and after the last one); the
    # rest content (one region: the engines refuse ``join``).  Calls come parsed, as in transformers' own Qwen
    # template (arguments a dict; ``to_openai`` gives their text).
    end = re.escape(_turn_end(fmt))
    t_open, t_close = re.escape(CALL_OPEN), re.escape(CALL_CLOSE)
    fields: dict[str, Any] = {CONTENT: _text(close=_turn_end(fmt))}
    if fmt.reasoning is Reasoning.THINK:  # type: ignore[attr-defined]
        fields[THINKING] = {
            "open_pattern": "^" + re.escape(THINK_OPEN) + r"\n*",
            "close_pattern": r"\n*" + re.escape(THINK_CLOSE) + r"\n*|\n*(?=" + end + ")",
            "content_args": _TEXT}
    # a call opens only once its </tool_call> has come (the lookahead holds the stream until
    # then): a call cut short stays content, as to_openai keeps it
    complete = r"(?=(?:(?!" + t_close + r").)*" + t_close + r")"
    fields[TOOL_CALLS] = {
        "open_pattern": r"(?:(?<=" + t_close + r")\s*|\n?)" + t_open + complete,
        "close_pattern": t_close + r"(?:\s*(?=" + end + r"|\Z|" + t_open + r"))?",
        "content": "json", "repeats": True,
        "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}}
    return fields


def _apertus(fmt: Format) -> dict[str, Any]:
    # A call list ``<|tools_prefix|>[{"NAME": ARGS}, ...]<|tools_suffix|>``: each call is a region
    # opened by its ``{"NAME": `` (the first right after ``[``, the next after ``}, `` inside the
    # same list) and closed by the ``}`` that ends its object (followed by ``, {"NAME": `` or
    # ``]<|tools_suffix|>``), so ARGS is the body verbatim.  A call opens only once its list's
    # ``<|tools_suffix|>`` has come (the lookahead holds the stream until then): a list cut short
    # (max tokens) is dropped whole, as ``to_openai`` drops it: the content (the implicit field)
    # closes on a call list that has no end, taking it along.
    t, e = re.escape(TOOLS), re.escape(END_TOOLS)
    name = r'"(?P<name>' + _APERTUS_NAME + r')": '
    complete = r"(?=(?:(?!" + e + r").)*" + e + r")"
    first = t + r"\[\{" + name + complete
    later = r"(?<=" + t + r"(?:(?!" + e + r").)*\}), \{" + name + complete
    call_end = r"\}(?:\]" + e + r"|(?=, \{\"" + _APERTUS_NAME + r'": ))'
    # thoughts end at <|inner_suffix|> (the response follows), or where a call list or the turn's
    # end begins (left for those fields to open on)
    thoughts_end = re.escape(OUTER) + r"|(?=" + t + r"|" + re.escape(_turn_end(fmt)) + r")"
    content_end = re.escape(_turn_end(fmt)) + r"|" + t + r"(?:(?!" + e + r").)*\Z"
    return {CONTENT: _text(close_pattern=content_end),
            THINKING: _text(open=INNER, close_pattern=thoughts_end),
            TOOL_CALLS: _calls(open_pattern=first + "|" + later, close_pattern=call_end)}


#: a tool name in an Apertus call list (``apertus_blocks.check_call``'s rule)
_APERTUS_NAME = r"[A-Za-z0-9_.\-]+"


def _turn_end(fmt: Format) -> str:
    """The control that ends the assistant's turn: the first of its stream stops (the token data's)."""
    return next(iter(fmt.stop_reasons("assistant")))


def response_template(enc: Codec | Renders) -> dict[str, Any]:
    """The ``response_template`` dict of ``enc``'s format (see the module docstring)."""
    if enc.fallback_controls:
        raise UnrepresentableError("no response template in fallback mode: the controls are text",
                                   field="tokenizer", hint="register the controls (vocab.load(NAME, register=FORMAT))")
    name = enc.format_name
    row = _FIELDS.get(name)
    if row is None:
        raise UnrepresentableError(f"no response template for {name!r}", field="format")
    # the prompt's generation prompt is cut by the anchor: the format's own
    return {"version": 1, "start_anchor": _prompt(enc.format), "defaults": {"role": "assistant"},
            "fields": row(enc.format)}


#: per format: its fields
_FIELDS: dict[str, Callable[[Format], dict[str, Any]]] = {
    "harmony": _harmony,
    "openchatml-2.2": _openchatml,
    "openchatml-2.0": _openchatml,
    "chatml": _chatml,
    "apertus": _apertus,
}
