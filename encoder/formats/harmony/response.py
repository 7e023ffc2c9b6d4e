"""Harmony's response-template fields: a message header matched whole (``response_template``).

The header's pieces (words, ``to=``, ``<|channel|>``, ``<|constrain|>``, ``<|message|>``) and the
three fields a channel message opens are Harmony's and OpenChatML 2.x's (which imports them); the
field shapes and the anchor are ``ocml.encoder.template.response``'s, whose docstring says how each
format's fields read a completion.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...template.response import CONTENT, THINKING, TOOL_CALLS, calls_field, header_anchor, text_field

if TYPE_CHECKING:
    from ..base import Format

WORD = r"[^\s<]*"                                         # a header word
WORD_END = r"(?![^\s<])"                                    # ... ends here
TO = r"\s*to=(?!all" + WORD_END + r")(?:functions\.(?=[^\s<]))?(?P<name>[^\s<]+)"
TO_ALL = r"\s*to=all" + WORD_END
CONSTRAIN = r"(?:\s*<\|constrain\|>" + WORD + r"|\s+(?!to=)[^\s<]+)*"   # <|constrain|>TYPE / content type words
MESSAGE = r"\s*<\|message\|>"
CHANNEL = r"<\|channel\|>"
CHANNEL_ANSWER = CHANNEL + r"(?:final|commentary)" + WORD_END
CHANNEL_OTHER = CHANNEL + r"(?!(?:final|commentary)" + WORD_END + r")" + WORD
CHANNEL_ANY = CHANNEL + WORD



def channel_fields(fmt: Format, call: str, content: str, reasoning: str) -> dict[str, Any]:
    # a message ends at any of the format's terminators (the token data's) or the next frame's start
    close = [*fmt.terminators.reasons, fmt.generation_prompt()[0][1]]
    # A call opens once its end is in the text, or once the text ends after its arguments' closing
    # ``}`` (an engine that strips the stop token: transformers' own gpt-oss case).  A call cut by
    # max_tokens is then no call, and the engine says ``length`` rather than ``tool_calls``.
    ends = r"(?=[\s\S]*?(?:" + "|".join(re.escape(c) for c in close) + r")|[\s\S]*\}\s*\Z)"
    return {TOOL_CALLS: calls_field(open_pattern=call + ends, close=close),
            CONTENT: text_field(open_pattern=content, close=close),
            THINKING: text_field(open_pattern=reasoning, close=close)}


def fields(fmt: Format) -> dict[str, Any]:
    _A = header_anchor(fmt)
    call = _A + r"(?:" + TO + r"\s*" + CHANNEL_ANY + r"|" + CHANNEL_ANY + TO + r")" + CONSTRAIN + MESSAGE
    content = _A + r"(?:" + TO_ALL + r")?(?:" + CHANNEL_ANSWER + r"(?:" + TO_ALL + r")?)?" + CONSTRAIN + MESSAGE
    reasoning = _A + r"(?:" + TO_ALL + r")?" + CHANNEL_OTHER + r"(?:" + TO_ALL + r")?" + CONSTRAIN + MESSAGE
    return channel_fields(fmt, call, content, reasoning)
