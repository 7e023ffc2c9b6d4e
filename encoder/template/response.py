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
* ChatML: a turn as ``to_openai`` reads it (``ocml.encoder.formats.chatml.turns``):
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
from typing import TYPE_CHECKING, Any

from ..errors import UnrepresentableError

if TYPE_CHECKING:
    from ..codec import Codec, Renders
    from ..formats.base import Format

__all__ = ["response_template"]

_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
TEXT_ARGS = {"strip": False}
#: tool-call arguments: parsed as JSON (the HF convention), verbatim text when they are not JSON
_ARGS = {"allow_non_json": True, "strip": False}
#: the field names the serving engines route (vLLM, SGLang: ``thinking``, ``content``, ``tool_calls``)
THINKING, CONTENT, TOOL_CALLS = "thinking", "content", "tool_calls"


def calls_field(**anchors: Any) -> dict[str, Any]:
    """The ``tool_calls`` field: ``{"type": "function", "function": {"name", "arguments"}}`` per call."""
    return {**anchors, "content": "json", "content_args": _ARGS, "repeats": True, "transform": _CALL}


def text_field(**anchors: Any) -> dict[str, Any]:
    """A ``thinking`` / ``content`` field: plain text, one region (the engines' rule)."""
    return {**anchors, "content_args": TEXT_ARGS}


def header_anchor(fmt: Format) -> str:
    """Where a header starts: the completion's start, or right after the generation prompt's role."""
    return r"(?:^|(?<=" + re.escape(generation_text(fmt)) + r"))"


def generation_text(fmt: Format) -> str:
    return "".join(text for _, text in fmt.generation_prompt())


def turn_end(fmt: Format) -> str:
    """The control that ends the assistant's turn: the first of its stream stops (the token data's)."""
    return next(iter(fmt.stop_reasons("assistant")))


def response_template(enc: Codec | Renders) -> dict[str, Any]:
    """The ``response_template`` dict of ``enc``'s format (see the module docstring)."""
    if enc.fallback_controls:
        raise UnrepresentableError("no response template in fallback mode: the controls are text",
                                   field="tokenizer", hint="register the controls (vocab.load(NAME, register=FORMAT))")
    from ..formats import response_fields

    name = enc.format_name
    row = response_fields(name)
    if row is None:
        raise UnrepresentableError(f"no response template for {name!r}", field="format")
    # the prompt's generation prompt is cut by the anchor: the format's own
    return {"version": 1, "start_anchor": generation_text(enc.format), "defaults": {"role": "assistant"},
            "fields": row(enc.format)}
