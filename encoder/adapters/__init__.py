"""Adapters: the input shapes people have -> ``Conversation``.

Accepted, per message dict (detected by keys, mixable in one conversation):
- canonical: ``role, content, channel, recipient``/``to``, ``call_id, name, intent,
  content_type, constrain, train``;
- OpenAI / HF chat: ``tool_calls`` (and the legacy ``function_call`` / ``role: "function"``),
  ``tool_call_id``, ``reasoning_content``/``thinking``/``reasoning``, ``refusal``, content as
  a list of parts (one assistant dict may expand into several messages: analysis, text,
  one per call);
- openai-harmony ``Message.to_dict()``/``Conversation.to_json()``: ``content`` as a list
  of typed items (``text``, ``system_content``, ``developer_content``) and
  ``content_type`` like ``<|constrain|>json``;
- the OpenChatML §10 JSON interchange object (``thinking``, ``tool_call``, ``intent``).
A conversation is a list of those, a dict ``{"messages": [...], **options}``, an
openai-harmony ``Conversation`` object, or a JSON string of any of these; ``messages`` and
``tools`` given as JSON text are parsed (``values``: the same rule ``ocml pack`` uses).

Two readings (``Conversation.chat``), decided by ``shape.is_native``: **native** (already in
a format's own terms: rendered exactly as written) and **chat** (OpenAI / HF chat data:
mapped the way the models were trained on it, ``chat``).

Every message remembers where it came from (``Message.source``: the input position, and
``Message.source_field``: the field its content came from), so errors raised later name
the user's message and field (``relocate``), not an index into the expanded list.

Modules, one job each: ``read`` (the entry point, ``to_conversation``), ``shape`` (native or
chat: the detection hook), ``chat`` (the OpenAI / HF message mapping), ``content`` (content
strings and parts), ``harmony_json`` (openai-harmony's JSON fast path), ``options``
(conversation options, tool definitions), ``values`` (wrong-type values that look right),
``relocate`` (errors back to input positions), ``suggest``, ``style`` (``ChatStyle``).
"""

from __future__ import annotations

from .chat import Calls, message
from .harmony_json import CONSTRAIN_PREFIX
from .read import to_conversation
from .relocate import relocate
from .style import DEFAULT_STYLE, SHAPES, ChatStyle, Shape
from .suggest import suggest

__all__ = ["CONSTRAIN_PREFIX", "Calls", "message", "DEFAULT_STYLE", "SHAPES", "ChatStyle", "Shape", "relocate", "suggest",
           "to_conversation"]
