"""A message's ``content`` -> text: strings, and lists of parts as the OpenAI API allows.

Text parts (``text``, ``input_text``, ``output_text``; a string item; ``{"text": ...}``
without a type) are joined with nothing between them, as the templates that accept parts
do (Qwen3.6's ``render_content``, Qwen2-VL, the Apertus reference template's user
``parts``; the gpt-oss and Qwen2.5 templates take strings only).  An assistant's
``refusal`` part is what the model said: it is text too.  Keys of a part that only steer an
API (``cache_control``, ``annotations``, ``logprobs``, ``id``) are ignored; a part ocml
cannot render (``image_url``, ``input_audio``, ``file``, ...) or an unknown key on a part is
an error naming the message and the part: no format here carries images or audio, and
dropping them would train on a conversation the user never had.

openai-harmony's own JSON is read here too: its ``system_content`` / ``developer_content``
items are structured sections, and in a native conversation several text items stay
separate (openai-harmony encodes each on its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError

TEXT_PARTS = ("text", "input_text", "output_text")
HARMONY_PARTS = ("system_content", "developer_content")
#: part keys that steer an API and carry nothing a model reads
IGNORED_PART_KEYS = frozenset({"cache_control", "annotations", "logprobs", "id"})
#: parts people send that no ocml format can carry (the error names them; any other type is "unknown")
MEDIA_PARTS = ("image_url", "image", "input_image", "input_audio", "audio", "file", "input_file", "video",
               "video_url")
_PART_HINT = "content parts are {'type': 'text', 'text': ...} (or input_text / output_text, refusal on assistant)"


class Content:
    """Read content: the joined text, the separate text items (native openai-harmony JSON with
    several items), and a structured Harmony section."""

    __slots__ = ("text", "parts", "structured")

    def __init__(self, text: str, parts: tuple[str, ...] | None = None, structured: Any = None) -> None:
        self.text = text
        self.parts = parts
        self.structured = structured


def read_content(value: Any, index: int, field: str, role: str, native: bool) -> Content:
    """``value`` (not None: the caller decides what missing content means)."""
    if isinstance(value, str):
        return Content(value if type(value) is str else str.__str__(value))
    if type(value) is list:
        pass  # the common case, without the ABC checks below
    elif isinstance(value, Mapping):
        if "type" not in value and "text" not in value:
            raise InputError(f"content is a dict with keys {sorted(value)[:5]}, not text", index=index, field=field,
                             hint="content must be a string or a list of {'type': 'text', 'text': ...} items; "
                                  "json.dumps(...) structured data first")
        value = [value]
    elif hasattr(value, "tolist") and not isinstance(value, Sequence):
        value = value.tolist()  # a numpy object array of parts (pandas / Arrow rows)
    if type(value) is not list and (not isinstance(value, Sequence) or isinstance(value, (bytes, bytearray))):
        raise InputError(f"content must be a string or a list of items, got {type(value).__name__}",
                         index=index, field=field, hint="convert it to text, e.g. json.dumps(...) for structured data")
    texts: list[str] = []
    structured = None
    for k, item in enumerate(value):
        where = f"{field}[{k}]"
        if isinstance(item, str):
            texts.append(item if type(item) is str else str.__str__(item))
            continue
        if not isinstance(item, Mapping):
            raise InputError(f"content part {k} is a {type(item).__name__}", index=index, field=where,
                             hint=_PART_HINT)
        kind = item.get("type", "text")
        if kind in HARMONY_PARTS:
            from ..formats.harmony.content import interned_content

            structured = interned_content(kind, item)  # read once per content (encoder.sections)
            continue
        if kind in TEXT_PARTS or kind == "refusal":
            key = "refusal" if kind == "refusal" else "text"
            if kind == "refusal" and role != "assistant":
                raise InputError(f"content part {k} is a refusal on a {role} message", index=index, field=where,
                                 hint="only the assistant refuses; a refusal part belongs on an assistant message")
            text = item.get(key)
            if not isinstance(text, str):
                raise InputError(f"content part {k} of type {kind!r} has no {key!r} string", index=index,
                                 field=f"{where}.{key}", hint=_PART_HINT)
            extra = [x for x in item if x not in ("type", key) and x not in IGNORED_PART_KEYS and item[x] is not None]
            if extra:
                raise InputError(f"content part {k} has unknown key {extra[0]!r}", index=index,
                                 field=f"{where}.{extra[0]}", hint=_PART_HINT)
            texts.append(text if type(text) is str else str.__str__(text))
            continue
        what = f"a {kind!r} part" if kind in MEDIA_PARTS else f"of unsupported type {kind!r}"
        raise InputError(f"content part {k} of the {role} message is {what}: no ocml format renders it",
                         code="E-INPUT-CONTENT-PART", index=index, field=f"{where}.type",
                         hint="ocml renders text: remove the part, or describe it in a text part; "
                              + _PART_HINT)
    joined = "".join(texts)
    # Native openai-harmony JSON keeps its items apart (each is encoded on its own); chat data
    # is one string, as the templates render it.
    return Content(joined, tuple(texts) if native and len(texts) > 1 else None, structured)
