"""Field access shared by the shape readers: typed errors naming the record's field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..adapters.options import RECORD_OPTIONS
from ..errors import InputError, OcmlError
from ..jsonlimits import loads_record

# Record keys that are conversation options (passed on to the adapters), as in chat records.
OPTION_KEYS = ("tools", *RECORD_OPTIONS)


def missing(shape: str, key: str, hint: str) -> InputError:
    return InputError(f"{shape} record has no {key!r}", code="E-SHAPE-MISSING", field=key, hint=hint)


def present(record: Mapping[str, Any], key: str) -> bool:
    return record.get(key) is not None  # Arrow rows carry every column, null where absent


def decoded(value: Any, key: str) -> Any:
    """A column value; message lists stored as JSON text (common in Parquet) are decoded."""
    if isinstance(value, str) and value[:1] == "[" and value.rstrip()[-1:] == "]":
        try:
            parsed = loads_record(value, f"{key!r}", field=key)
        except OcmlError:
            raise
        except ValueError:
            return value
        if isinstance(parsed, list) and parsed and all(isinstance(m, Mapping) and "role" in m for m in parsed):
            return parsed
        return value
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy object arrays from pandas
    if isinstance(value, tuple):
        value = list(value)
    return value


def side(record: Mapping[str, Any], key: str, shape: str) -> str | list[Any]:
    """A prompt / completion value: a string or a non-empty list of message dicts."""
    value = decoded(record[key], key)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if not value:
            raise InputError(f"{shape} {key!r} is an empty message list", code="E-SHAPE-EMPTY", field=key,
                             hint="give at least one message, or a string")
        for i, m in enumerate(value):
            if not isinstance(m, Mapping) or "role" not in m:
                raise InputError(f"{shape} {key!r} item {i} is not a message dict", code="E-SHAPE-TYPE",
                                 field=f"{key}[{i}]", hint="a message is {'role': ..., 'content': ...}")
        return value
    raise InputError(f"{shape} {key!r} must be a string or a list of messages, got {type(value).__name__}",
                     code="E-SHAPE-TYPE", field=key)


def text_field(record: Mapping[str, Any], key: str, shape: str, required: bool = True) -> str:
    value = record.get(key)
    if value is None:
        if required:
            article = "an" if shape[:1] in "aeiou" else "a"
            raise missing(shape, key, f"{article} {shape} record needs {key!r} (rename a column with --field {key}=COLUMN)")
        return ""
    if not isinstance(value, str):
        raise InputError(f"{shape} {key!r} must be a string, got {type(value).__name__}", code="E-SHAPE-TYPE",
                         field=key)
    return value


def options(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's conversation options (``tools`` as JSON text decoded)."""
    out: dict[str, Any] = {}
    for k in OPTION_KEYS:
        v = record.get(k)
        if v is None:
            continue
        if k in ("tools", "builtin_tools") and isinstance(v, str):
            if not v.strip():
                continue  # an empty column (LLaMA-Factory's "tools": "") is no tools
            try:
                v = loads_record(v, f"{k!r}", field=k)
            except OcmlError:
                raise
            except ValueError:
                raise InputError(f"{k!r} is a string but not JSON", field=k) from None
        if k == "tools" and not v:
            continue
        out[k] = v
    return out


def same_kind(shape: str, **sides: Any) -> None:
    """Both sides strings (standard) or both message lists (conversational), as TRL requires."""
    kinds = {k: isinstance(v, str) for k, v in sides.items()}
    if len(set(kinds.values())) > 1:
        text = [k for k, s in kinds.items() if s]
        conv = [k for k, s in kinds.items() if not s]
        raise InputError(f"{shape} record mixes strings ({', '.join(text)}) and message lists ({', '.join(conv)})",
                         code="E-SHAPE-MIXED", field=conv[0],
                         hint="use strings for all (standard form) or message lists for all (conversational form)")
