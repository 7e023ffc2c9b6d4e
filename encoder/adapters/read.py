"""``to_conversation``: the entry point from whatever the user has to a ``Conversation``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..jsonlimits import loads_record, reraise
from ..messages import Conversation, Message, Options
from .chat import Calls, message
from .options import read_options
from .shape import is_native, reading
from .style import DEFAULT_STYLE, ChatStyle, Shape
from .values import decoded


def to_conversation(obj: Any, style: ChatStyle = DEFAULT_STYLE, shape: Shape = "auto") -> Conversation:
    """Read ``obj`` as a conversation.  ``shape``: ``"auto"`` decides per conversation
    (``ocml.encoder.adapters.shape``); ``"chat"`` / ``"native"`` force a reading — use ``"native"``
    when you render prefixes of conversations written in a format's own terms (a prefix such
    as ``[system, user]`` carries no sign of it and would otherwise read as chat data).

    A value too deep or with too long a number is ``E-INPUT-DEPTH`` / ``E-INPUT-NUMBER``
    (``ocml.encoder.jsonlimits``), never ``RecursionError`` / ``ValueError``."""
    try:
        return _read(obj, style, shape)
    except (RecursionError, ValueError) as exc:
        reraise(exc, "the conversation")


def _read(obj: Any, style: ChatStyle, shape: Shape) -> Conversation:
    if isinstance(obj, Conversation):
        return obj
    if isinstance(obj, (str, bytes, bytearray)):
        try:
            if not isinstance(obj, str):
                obj = bytes(obj).decode("utf-8")  # JSON text is UTF-8 (RFC 8259); no guessing
            obj = loads_record(obj, "the conversation", field="conversation")
        except UnicodeDecodeError as exc:
            raise InputError(f"conversation bytes are not UTF-8 ({exc.reason} at byte {exc.start})",
                             code="E-INPUT-ENCODING", field="conversation",
                             hint="decode the file with its real encoding, or re-save it as UTF-8") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"conversation is a string but not JSON: {exc.msg}", field="conversation",
                             hint="pass a list of message dicts or a dict with 'messages'") from None
    # openai-harmony Conversation / Message (a dict skips the failing attribute lookup)
    if type(obj) is not dict and hasattr(obj, "to_dict") and not isinstance(obj, Mapping):
        obj = obj.to_dict()
    options = Options()
    if type(obj) is dict or isinstance(obj, Mapping):  # dicts skip the ABC checks
        if "messages" not in obj:
            if "role" in obj:
                obj = [obj]
            else:
                raise InputError("a conversation dict needs a 'messages' list", field="messages",
                                 hint="use {'messages': [...], ...options} or a plain list of messages")
        else:
            options = read_options(obj)
            obj = decoded(obj["messages"], "messages")  # JSON text, as `ocml pack` reads a column
    elif hasattr(obj, "tolist") and not isinstance(obj, Sequence):
        obj = obj.tolist()  # a numpy object array of messages
    if type(obj) is not list and (not isinstance(obj, Sequence) or isinstance(obj, (str, bytes))):
        raise InputError(f"messages must be a list, got {type(obj).__name__}", field="messages")
    raws: list[Any] = []
    native = False
    for index, raw in enumerate(obj):
        if type(raw) is not dict:  # the common case (plain dicts) skips the ABC checks
            if isinstance(raw, Message):
                native = True
                raws.append(raw)
                continue
            if hasattr(raw, "to_dict") and not isinstance(raw, Mapping):
                raw = raw.to_dict()
                native = True  # an openai-harmony Message object
            if isinstance(raw, (str, bytes)):
                raw = decoded(raw, f"messages[{index}]")
            if not isinstance(raw, Mapping):
                raise InputError(f"a message must be a dict, got {type(raw).__name__}", index=index,
                                 hint="a message is {'role': ..., 'content': ...}")
        native = native or is_native(raw)
        raws.append(raw)
    out: list[Message] = []
    calls = Calls()
    chat = reading(native, shape)
    for index, raw in enumerate(raws):
        if isinstance(raw, Message):
            out.append(raw if raw.source is not None else raw.with_(source=index))
        else:
            out.extend(message(raw, index, calls, style if chat else None))
    return Conversation(tuple(out), options, chat=chat)
