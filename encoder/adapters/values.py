"""One rule, for the API and the CLI alike, for values that look right but have another type.

- ``str`` subclasses are strings (``numpy.str_`` from pandas / Arrow, ``StrEnum`` members):
  read as the plain ``str`` they hold (``as_str``);
- a conversation's ``messages`` or ``tools`` given as JSON text is parsed (Parquet and HF
  datasets often store them so; ``decoded``);
- tuples and numpy object arrays (pandas / Arrow conversions) are lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..jsonlimits import loads_record


def as_str(value: Any) -> Any:
    """``value`` as a plain ``str`` if it is a string of any ``str`` subclass, else unchanged."""
    if type(value) is str or not isinstance(value, str):
        return value
    return str.__str__(value)


def decoded(value: Any, field: str) -> Any:
    """A column / argument value, JSON-decoded when it was given as text (str or bytes)."""
    if value is None or type(value) is list or type(value) is dict:
        return value  # the common case, without the ABC checks below
    if isinstance(value, (str, bytes, bytearray)):
        try:
            return loads_record(value, f"{field!r}", field=field)
        except UnicodeDecodeError as exc:
            raise InputError(f"{field!r} bytes are not UTF-8 ({exc.reason} at byte {exc.start})",
                             code="E-INPUT-ENCODING", field=field, hint="decode it with its real encoding") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{field!r} is a string but not JSON ({exc.msg} at char {exc.pos})", field=field,
                             hint="give a list, or valid JSON text of one") from None
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (Sequence, Mapping)):
        return value
    if hasattr(value, "tolist"):  # numpy arrays of objects from pandas / Arrow conversions
        return value.tolist()
    return value
