"""Harmony's response-template fields: a message header matched whole (``response_template``).

The generic pieces (header regexes, field shapes, the anchor) are ``ocml.encoder.template.response``'s;
its docstring says how each format's fields read a completion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...template.response import CHANNEL_ANSWER, CHANNEL_ANY, CHANNEL_OTHER, CONSTRAIN, MESSAGE, TO, TO_ALL, channel_fields, header_anchor

if TYPE_CHECKING:
    from ..base import Format


def fields(fmt: Format) -> dict[str, Any]:
    _A = header_anchor(fmt)
    call = _A + r"(?:" + TO + r"\s*" + CHANNEL_ANY + r"|" + CHANNEL_ANY + TO + r")" + CONSTRAIN + MESSAGE
    content = _A + r"(?:" + TO_ALL + r")?(?:" + CHANNEL_ANSWER + r"(?:" + TO_ALL + r")?)?" + CONSTRAIN + MESSAGE
    reasoning = _A + r"(?:" + TO_ALL + r")?" + CHANNEL_OTHER + r"(?:" + TO_ALL + r")?" + CONSTRAIN + MESSAGE
    return channel_fields(fmt, call, content, reasoning)
