"""OpenChatML 2.x's response-template fields: a header's attributes, channel and constrain.

The header's regex pieces and ``channel_fields`` are Harmony's (``harmony.response``); the field
shapes and the anchor are ``ocml.encoder.template.response``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...template.response import header_anchor
from ..harmony.response import (CHANNEL, CHANNEL_ANY, CHANNEL_OTHER, CONSTRAIN, MESSAGE, TO, TO_ALL, WORD, WORD_END,
                                channel_fields)

if TYPE_CHECKING:
    from ..base import Format


def fields(fmt: Format) -> dict[str, Any]:
    _A = header_anchor(fmt)
    attr = r"\s+(?!to=|intent=)[A-Za-z_][\w-]*=[^\s<]*"          # call_id=, name=, content_type=...
    intent = r"\s+intent=" + WORD
    pre = r"\s+intent=preamble" + WORD_END
    other_intent = r"\s+intent=(?!preamble" + WORD_END + r")" + WORD
    any_attrs = r"(?:" + attr + r"|" + intent + r"|" + TO_ALL + r")*"
    plain = r"(?:" + attr + r"|" + TO_ALL + r")*"
    call = _A + any_attrs + TO + any_attrs + r"(?:" + CHANNEL_ANY + r")?" + CONSTRAIN + MESSAGE
    content = (_A + r"(?:" + any_attrs + r"(?:" + CHANNEL + r"final" + WORD_END + r")?|" + plain + r"(?:" + pre + plain
               + r")?" + CHANNEL + r"commentary" + WORD_END + r")" + CONSTRAIN + MESSAGE)
    reasoning = (_A + r"(?:" + any_attrs + CHANNEL_OTHER + r"|" + plain + other_intent + plain + CHANNEL + r"commentary"
                 + WORD_END + r")" + CONSTRAIN + MESSAGE)
    return channel_fields(fmt, call, content, reasoning)
