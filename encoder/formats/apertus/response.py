"""Apertus' response-template fields: thoughts, response text and call lists.

The field shapes are ``ocml.encoder.template.response``'s, whose docstring says how each format's
fields read a completion.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...template.response import CONTENT, THINKING, TOOL_CALLS, calls_field, text_field, turn_end
from .blocks import END_TOOLS, INNER, OUTER, TOOLS

#: a tool name in an Apertus call list (``apertus.blocks.check_call``'s rule)
_APERTUS_NAME = r"[A-Za-z0-9_.\-]+"

if TYPE_CHECKING:
    from ..base import Format


def fields(fmt: Format) -> dict[str, Any]:
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
    thoughts_end = re.escape(OUTER) + r"|(?=" + t + r"|" + re.escape(turn_end(fmt)) + r")"
    content_end = re.escape(turn_end(fmt)) + r"|" + t + r"(?:(?!" + e + r").)*\Z"
    return {CONTENT: text_field(close_pattern=content_end),
            THINKING: text_field(open=INNER, close_pattern=thoughts_end),
            TOOL_CALLS: calls_field(open_pattern=first + "|" + later, close_pattern=call_end)}


#: a tool name in an Apertus call list (``apertus.blocks.check_call``'s rule)
_APERTUS_NAME = r"[A-Za-z0-9_.\-]+"
