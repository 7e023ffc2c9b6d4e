"""The input-encoding policy: text ocml writes must be valid Unicode scalar values.

A lone surrogate (``"\\ud83d"``, what a JSON reader makes of half an emoji escape) has no
UTF-8 form: tokenizers silently replace it with U+FFFD (render) or fail with an untyped
``UnicodeEncodeError`` (a transcript written to bytes).  ocml's one policy is a typed
``E-INPUT-ENCODING`` at the input, naming the message and the field, in ``render``,
``to_text`` and ``parse_text`` alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import InputError

_SURROGATE = re.compile("[\ud800-\udfff]")
CODE = "E-INPUT-ENCODING"
HINT = ("lone surrogates (half of a UTF-16 pair, e.g. from a bad \\ud83d JSON escape) have no UTF-8 form: "
        "repair the text, e.g. s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')")


def surrogate_at(text: str) -> int:
    """The offset of the first lone surrogate in ``text``, or -1 (ASCII text: O(1))."""
    if text.isascii():
        return -1
    m = _SURROGATE.search(text)
    return -1 if m is None else m.start()


def encoding_error(text: str, at: int, *, index: int | None, field: str) -> InputError:
    return InputError(f"{field} has a lone surrogate {text[at]!r} at character {at}: it cannot be encoded as UTF-8",
                      code=CODE, index=index, field=field, hint=HINT)


def check_text(text: str, *, index: int | None, field: str) -> None:
    """Raise ``E-INPUT-ENCODING`` when ``text`` has a lone surrogate."""
    if text.isascii():
        return
    m = _SURROGATE.search(text)  # surrogate_at's search without its call: every non-ASCII message pays it
    if m is not None:
        raise encoding_error(text, m.start(), index=index, field=field)


def surrogate_path(value: Any, path: str) -> str | None:
    """The path of the first string with a lone surrogate inside JSON-like ``value``
    (keys included), or None.  For error reports: where in a tool schema it is."""
    if isinstance(value, str):
        return path if surrogate_at(value) >= 0 else None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and surrogate_at(k) >= 0:
                return f"{path}.{k}" if path else k
            hit = surrogate_path(v, f"{path}.{k}" if path else str(k))
            if hit is not None:
                return hit
        return None
    if isinstance(value, (list, tuple)):
        for k, v in enumerate(value):
            hit = surrogate_path(v, f"{path}[{k}]")
            if hit is not None:
                return hit
        return None
    if hasattr(value, "__dataclass_fields__"):  # a section object (SystemContent, ToolNamespace...)
        for name in value.__dataclass_fields__:
            hit = surrogate_path(getattr(value, name), f"{path}.{name}" if path else name)
            if hit is not None:
                return hit
    return None


def check_value(value: Any, *, index: int | None, field: str) -> None:
    """``check_text`` over every string inside JSON-like ``value`` (a tool list, a schema)."""
    where = surrogate_path(value, field)
    if where is not None:
        raise InputError(f"{where} has a lone surrogate: it cannot be encoded as UTF-8", code=CODE, index=index,
                         field=where, hint=HINT)
