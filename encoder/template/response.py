"""transformers response templates: ``tokenizer.parse_response(ids, prefix=prompt)`` reads ocml formats.

transformers >= 5.13 parses generated text with a declarative ``response_template`` stored
in ``tokenizer_config.json`` (``transformers.utils.chat_parsing``): regions (message
fields) opened and closed by literal or regex delimiters over the *decoded* text, each
region's text parsed (``text``, ``json``...) and optionally reshaped by a ``transform``.
``response_template(enc)`` builds one per format so that ``parse_response`` returns what
``enc.to_openai(ids).message`` returns on generated completions (tests:
``tests/test_response_template.py``); ``save_pretrained`` writes it.

How each format is expressed:

* Harmony, OpenChatML 2.x: every message header is matched whole, from right after
  ``<|start|>assistant`` (or the start of the completion: the prompt's generation prompt
  is cut by ``start_anchor``), so exactly one of three fields opens: ``tool_calls`` (a
  recipient other than ``all``: ``function.name`` is the recipient without ``functions.``,
  ``function.arguments`` the body verbatim), ``content`` (``final``, no channel, or a
  ``commentary`` preamble; several joined with ``"\\n"``) or ``reasoning_content`` (the
  rest; joined with ``"\\n"``) - ``ocml.encoder.openai_message.kind``'s rule.  A message ends at
  ``<|end|>``, ``<|return|>``, ``<|call|>`` or the next ``<|start|>``; text between messages
  and messages of other roles go nowhere, as in ``to_openai``.
* ChatML: a turn as ``to_openai`` reads it (``ocml.encoder.formats.chatml_turns``):
  ``reasoning_content`` is a leading ``<think>`` block (``reasoning="think"`` only), each
  ``<tool_call>`` JSON object a call, ``content`` the rest (parts joined with ``"\\n"``).  The
  calls come parsed (``function.arguments`` a dict, as in transformers' own Qwen template;
  ``to_openai`` gives their JSON text).  Not expressed: a call that cannot be read (the
  parser raises; ``to_openai`` keeps its text as content and reports it), and a completion
  whose prompt prefilled ``<think>\\n`` is read right only with that prompt as ``prefix=``.
* Apertus: ``reasoning_content`` is the thoughts (from ``<|inner_prefix|>`` to
  ``<|inner_suffix|>``, a call list or the turn's end), ``content`` the response text (the
  rest), ``tool_calls`` each ``{"NAME": ARGS}`` of a complete call list (ARGS verbatim, as
  ``to_openai``); several of a field are joined with ``"\\n"``, as ``to_openai`` joins a
  turn's blocks (``Turn.openai_parts``).  A call list cut short is dropped.  Not expressed:
  a call whose ARGS holds ``}, {"NAME": `` (it reads as the next call), tool outputs after
  ``<|tools_suffix|>`` (a completion stops there: ``to_openai`` reports outputs as errors,
  the template would read them as content), empty blocks between two blocks of one kind
  (``to_openai`` merges those blocks, the template joins them with ``"\\n"``).

What a response template cannot express (README, "Serving"): generated tool call ids
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
    from ..codec import Codec
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


def _channel_fields(fmt: Format, call: str, content: str, reasoning: str) -> dict[str, Any]:
    # a message ends at any of the format's terminators (the token data's) or the next frame's start
    close = [*fmt.terminators.reasons, fmt.generation_prompt()[0][1]]
    return {
        "tool_calls": {"open_pattern": call, "close": close, "content_args": _TEXT, "repeats": True,
                       "transform": _CALL},
        "content": {"open_pattern": content, "close": close, "content_args": _TEXT, "repeats": True, "join": "\n"},
        "reasoning_content": {"open_pattern": reasoning, "close": close, "content_args": _TEXT, "repeats": True,
                              "join": "\n"},
    }


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
    # rest content, parts joined with "\n".  Calls come parsed, as in transformers' own Qwen
    # template (arguments a dict; ``to_openai`` gives their text).
    end = re.escape(_turn_end(fmt))
    t_open, t_close = re.escape(CALL_OPEN), re.escape(CALL_CLOSE)
    fields: dict[str, Any] = {"content": {"content_args": _TEXT, "repeats": True, "join": "\n"}}
    if fmt.reasoning is Reasoning.THINK:  # type: ignore[attr-defined]
        fields["reasoning_content"] = {
            "open_pattern": "^" + re.escape(THINK_OPEN) + r"\n*",
            "close_pattern": r"\n*" + re.escape(THINK_CLOSE) + r"\n*|\n*(?=" + end + ")",
            "content_args": _TEXT}
    # a call opens only once its </tool_call> has come (the lookahead holds the stream until
    # then): a call cut short stays content, as to_openai keeps it
    complete = r"(?=(?:(?!" + t_close + r").)*" + t_close + r")"
    fields["tool_calls"] = {
        "open_pattern": r"(?:(?<=" + t_close + r")\s*|\n?)" + t_open + complete,
        "close_pattern": t_close + r"(?:\s*(?=" + end + r"|\Z|" + t_open + r"))?",
        "content": "json", "repeats": True,
        "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}}
    fields["end"] = _dropped(_turn_end(fmt))
    return fields


def _apertus(fmt: Format) -> dict[str, Any]:
    # A call list ``<|tools_prefix|>[{"NAME": ARGS}, ...]<|tools_suffix|>``: each call is a region
    # opened by its ``{"NAME": `` (the first right after ``[``, the next after ``}, `` inside the
    # same list) and closed by the ``}`` that ends its object (followed by ``, {"NAME": `` or
    # ``]<|tools_suffix|>``), so ARGS is the body verbatim.  A call opens only once its list's
    # ``<|tools_suffix|>`` has come (the lookahead holds the stream until then): a list cut short
    # (max tokens) is dropped whole, as ``to_openai`` drops it.
    t, e = re.escape(TOOLS), re.escape(END_TOOLS)
    name = r'"(?P<name>' + _APERTUS_NAME + r')": '
    complete = r"(?=(?:(?!" + e + r").)*" + e + r")"
    first = t + r"\[\{" + name + complete
    later = r"(?<=" + t + r"(?:(?!" + e + r").)*\}), \{" + name + complete
    call_end = r"\}(?:\]" + e + r"|(?=, \{\"" + _APERTUS_NAME + r'": ))'
    # thoughts end at <|inner_suffix|> (the response follows), or where a call list or the turn's
    # end begins (left for those fields to open on)
    thoughts_end = re.escape(OUTER) + r"|(?=" + t + r"|" + re.escape(_turn_end(fmt)) + r")"
    return {"content": {"content_args": _TEXT, "repeats": True, "join": "\n"},
            "reasoning_content": {"open": INNER, "close_pattern": thoughts_end, "content_args": _TEXT,
                                  "repeats": True, "join": "\n"},
            "tool_calls": {"open_pattern": first + "|" + later, "close_pattern": call_end, "content_args": _TEXT,
                           "repeats": True, "transform": _CALL},
            "tool_sections": _dropped(TOOLS, END_TOOLS),
            "end": _dropped(_turn_end(fmt))}


#: a tool name in an Apertus call list (``apertus_blocks.check_call``'s rule)
_APERTUS_NAME = r"[A-Za-z0-9_.\-]+"


def _turn_end(fmt: Format) -> str:
    """The control that ends the assistant's turn: the first of its stream stops (the token data's)."""
    return next(iter(fmt.stop_reasons("assistant")))


def _dropped(open_: str, close: str | None = None) -> dict[str, Any]:
    f: dict[str, Any] = {"open": open_, "transform": ""}
    if close is not None:
        f["close"] = close
    return f


def response_template(enc: Codec) -> dict[str, Any]:
    """The ``response_template`` dict of ``enc``'s format (see the module docstring)."""
    if enc.fallback_controls:
        raise UnrepresentableError("no response template in fallback mode: the controls are text",
                                   field="tokenizer", hint="register the controls (vocab.load(NAME, register=FORMAT))")
    name = enc.format_name
    row = _FIELDS.get(name)
    if row is None:
        raise UnrepresentableError(f"no response template for {name!r}", field="format")
    fields, content = row
    # the prompt's generation prompt is cut by the anchor: the format's own
    return {"version": 1, "start_anchor": _prompt(enc.format), "defaults": {"role": "assistant", "content": content},
            "fields": fields(enc.format)}


#: per format: its fields, and the content of a message that has none (None: channel formats)
_FIELDS: dict[str, tuple[Callable[[Format], dict[str, Any]], str | None]] = {
    "harmony": (_harmony, None),
    "openchatml-2.2": (_openchatml, None),
    "openchatml-2.0": (_openchatml, None),
    "chatml": (_chatml, None),
    "apertus": (_apertus, None),
}
