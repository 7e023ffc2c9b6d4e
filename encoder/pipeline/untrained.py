"""Documents with nothing to train: told apart from bad records, skipped by default.

A record that renders but yields no trained token (``messages: []``, a conversation
without an assistant message, or one the mask policy trains none of) is not wrong, but
packed it is dead weight: it fills rows the model learns nothing from.  ``ocml pack``
skips it (``--keep-untrained`` keeps it), counts it by reason in the report, and lists it
by file and line in ``untrained.jsonl``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

UNTRAINED = "untrained.jsonl"


class Untrained(str, Enum):
    NO_MESSAGES = "no messages"
    NO_ASSISTANT = "no assistant message"
    MASKED = "the mask policy trains none of it"


def untrained_reason(conversation: Any, result: Any) -> Untrained | None:
    """Why ``result`` (the render of ``conversation``) has nothing to train; None if it has."""
    if result.mask.any():
        return None
    messages = conversation.get("messages") if isinstance(conversation, dict) else None
    if not messages:
        return Untrained.NO_MESSAGES
    rendered = getattr(getattr(result, "conversation", None), "messages", ()) or ()
    if not any(getattr(m, "role", None) == "assistant" for m in rendered):
        return Untrained.NO_ASSISTANT
    return Untrained.MASKED
