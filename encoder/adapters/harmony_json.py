"""Fast path for openai-harmony's ``to_json()`` messages (every header key, null when unset;
content one text item): exactly the general path's message, or None to take that path."""

from __future__ import annotations

from typing import Any

from ..messages import Message, new_message
from .content import TEXT_PARTS
from .style import ChatStyle

CONSTRAIN_PREFIX = "<|constrain|>"
KEYS = frozenset({"role", "name", "content", "channel", "recipient", "content_type"})


def harmony_message(raw: dict[str, Any], index: int, style: ChatStyle | None) -> Message | None:
    role = raw.get("role")
    if type(role) is not str or not role or role in ("tool", "function"):
        return None  # tool replies are paired with their calls by the general path
    content = raw.get("content")
    if type(content) is not str:
        if not (type(content) is list and len(content) == 1 and type(content[0]) is dict
                and content[0].keys() <= {"type", "text"}
                and content[0].get("type", "text") in TEXT_PARTS and type(content[0].get("text")) is str):
            return None
        content = content[0]["text"]
    name, channel, recipient, ctype = raw.get("name"), raw.get("channel"), raw.get("recipient"), raw.get("content_type")
    for v in (name, channel, recipient, ctype):
        if v is not None and type(v) is not str:
            return None
    constrain = None
    if ctype is not None and ctype.startswith(CONSTRAIN_PREFIX):
        constrain, ctype = ctype[len(CONSTRAIN_PREFIX):], None
    channel = channel or None
    if channel is None and style is not None and role == "assistant":
        channel = style.answer_channel
    return new_message(role, content, channel, recipient or None, None, name, None, ctype, constrain, None, None,
                       None, index, "content")
