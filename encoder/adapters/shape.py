"""Shape detection: is a conversation written in a format's own terms (native) or chat data?

The entry point for new input shapes: ``to_conversation`` asks ``reading`` once per
conversation.  Record-level shapes (prompt / completion, Alpaca, plain text, preference
pairs) are turned into messages before this point (``ocml.encoder.pipeline.records``); a new
*message*-level sign of a native conversation goes in ``is_native``.

- **native**: some message is already in a format's own terms (a ``channel``,
  ``recipient``/``to``, ``constrain``, ``content_type``, ``call_id`` or ``intent``; Harmony
  system/developer content; openai-harmony's ``to_json()`` message: exactly its keys
  with ``"name": null`` and typed content items; a tool author named ``functions.x``
  without ``tool_call_id``).  Rendered exactly as written.  Null values count as absent
  (Arrow / ``datasets`` rows carry every key of the schema, mostly null).
- **chat** (OpenAI / HF chat data): everything else, including content given as a list of
  parts (the OpenAI API allows it for every role).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .content import HARMONY_PARTS

# Any of these (non-null) on a message means it is written in a format's own terms.
NATIVE_KEYS = frozenset({"channel", "recipient", "to", "constrain", "content_type", "call_id", "intent", "parts"})
#: every key of openai-harmony's ``Message.to_dict()`` (``name`` always, null when unset)
HARMONY_KEYS = frozenset({"role", "name", "content", "channel", "recipient", "content_type"})


def is_native(raw: Mapping[str, Any]) -> bool:
    """Is this message written in a format's own terms (see the module docstring)?"""
    if not NATIVE_KEYS.isdisjoint(raw):  # no set built on the common path (none of them)
        for k in NATIVE_KEYS.intersection(raw):
            if raw[k] is not None:
                return True
    content = raw.get("content")
    if isinstance(content, list) and content:
        if any(isinstance(c, Mapping) and c.get("type") in HARMONY_PARTS for c in content):
            return True
        # openai-harmony's to_json(): its own keys only, "name": null on every message.  A null
        # name among other keys says nothing (Arrow rows fill every missing key with null), and
        # OpenAI parts carry no "name" key at all.
        if "name" in raw and raw["name"] is None and raw.keys() <= HARMONY_KEYS:
            return True
    if raw.get("role") == "tool" and raw.get("tool_call_id") is None and "." in str(raw.get("name") or ""):
        return True  # a Harmony tool author (functions.x) rather than an OpenAI tool reply
    return False


def reading(native_seen: bool, shape: str) -> bool:
    """Is the conversation read as chat data?  ``shape`` forces a reading (``Encoder(shape=...)``)."""
    return shape == "chat" or (shape == "auto" and not native_seen)
