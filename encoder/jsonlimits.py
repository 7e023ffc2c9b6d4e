"""Limits on the values ocml walks: nesting depth and the numbers JSON cannot carry.

One record's pathology is that record's typed error, never a crash: Python raises
``RecursionError`` on JSON text or values nested ~1,000 deep and ``ValueError`` on an integer
of more than 4,300 digits (``sys.get_int_max_str_digits``) read from or written as text; here
they become ``E-INPUT-DEPTH`` / ``E-INPUT-NUMBER`` (``pathology``), the same in the API and
in ``ocml pack`` (where the record goes to ``errors.jsonl`` and counts against
``--max-bad-fraction``).

- ``MAX_DEPTH`` (128 levels of objects / arrays, serde_json's default recursion limit) bounds
  what ocml walks or writes as JSON: tool-call arguments, tool schemas (``parameters``; a tool list
  that passed is remembered by content, ``check_tools``) and bodies constrained to JSON
  (``check_value``); deeper is ``E-INPUT-DEPTH``.  Other JSON text (a record line, a
  ``messages`` column) is only parsed: nested deeper than ``MAX_TEXT_DEPTH`` (512) it is
  ``E-INPUT-DEPTH`` whatever the interpreter's recursion limit (which libraries raise), and the
  entry points (``Encoder.render`` / ``render_batch`` /
  ``prepare``, ``to_conversation``) turn any ``RecursionError`` left into the same code (``reraise``).
- Numbers: tool-call arguments, tool schemas and JSON bodies hold no NaN / Infinity (JSON has
  none; ``json.dumps`` would write ``NaN``, which no JSON parser reads) and no integer over
  4,300 digits: ``E-INPUT-NUMBER``.
- ``tree_excess``: bounds on a whole tree (values with shared references counted at each use,
  depth, string length) for inputs that are small by nature (recipes).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, NoReturn

from .errors import InputError, OcmlError
from .section_cache import content_key

_orjson: ModuleType | None
try:  # a dependency (pyproject); without it every line is read by json.loads, to the same values
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

MAX_DEPTH = 128
#: JSON text nested deeper than this is refused before parsing (the same verdict whatever
#: ``sys.getrecursionlimit()`` says: torch, for one, raises it)
MAX_TEXT_DEPTH = 512
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
#: bytes -> b"0" for a digit, b" " otherwise: ``_DIGIT_RUN in data.translate(_DIGITS)`` finds a run of
#: 19 digits (an integer orjson may not keep exact) ~10x faster than a regular expression
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * 19
#: ``loads_line``'s answer for a line only ``loads_record`` may read
SLOW: Any = object()
#: Python's limit on int <-> str conversion (0: none); an int of more bits may exceed it
_INT_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
_SAFE_BITS = int(_INT_DIGITS * 3.32) if _INT_DIGITS else 0  # below this many bits, str() always works
#: tool lists that passed ``check_value``, by content (``check_tools``; cleared when full)
_CHECKED: dict[Any, None] = {}
_CHECKED_MAX = 256
DEPTH_HINT = f"ocml reads at most {MAX_DEPTH} levels of nested objects / arrays here; flatten the value"
NUMBER_HINT = ("JSON numbers are finite (no NaN / Infinity) and ocml writes integers of at most "
               f"{_INT_DIGITS:,} digits; give the value as a string")


def depth_error(what: str, *, field: str | None, index: int | None, limit: int | None = MAX_DEPTH) -> InputError:
    deeper = f"more than {limit} levels deep" if limit else "too deep for Python's parser (about 1,000 levels)"
    return InputError(f"objects / arrays nested {deeper} in {what}", code="E-INPUT-DEPTH", field=field, index=index,
                      hint=DEPTH_HINT if limit else "flatten the value; no conversation nests this deep")


def number_error(what: str, detail: str, *, field: str | None, index: int | None) -> InputError:
    return InputError(f"{detail} in {what}", code="E-INPUT-NUMBER", field=field, index=index, hint=NUMBER_HINT)


def pathology(exc: BaseException, what: str = "the value", *, field: str | None = None,
              index: int | None = None) -> OcmlError | None:
    """The typed error for an exception Python raises on a pathological value, or None when
    ``exc`` is something else (to be re-raised as it is)."""
    if isinstance(exc, OcmlError):
        return None
    if isinstance(exc, RecursionError):
        return depth_error(what, field=field, index=index, limit=None)
    if type(exc) is ValueError and "integer string conversion" in str(exc):
        return number_error(what, f"an integer of more than {_INT_DIGITS:,} digits", field=field, index=index)
    return None


def reraise(exc: BaseException, what: str = "the value", *, field: str | None = None,
            index: int | None = None) -> NoReturn:
    """Raise the typed error for ``exc`` (``pathology``), or ``exc`` itself when it is no pathology.
    For ``except (RecursionError, ValueError) as exc: reraise(exc, ...)`` at an entry point."""
    typed = pathology(exc, what, field=field, index=index)
    if typed is None:
        raise exc
    raise typed from None


def check_text_depth(text: str | bytes | bytearray, what: str, *, field: str | None, index: int | None) -> None:
    """``E-INPUT-DEPTH`` for JSON text nested deeper than ``MAX_TEXT_DEPTH``; a text with fewer
    brackets than that is passed at the cost of two ``count`` calls."""
    s = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    if s.count("[") + s.count("{") <= MAX_TEXT_DEPTH:
        return
    depth = 0
    for m in _TOKENS.finditer(s):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_TEXT_DEPTH:
                raise depth_error(what, field=field, index=index, limit=MAX_TEXT_DEPTH)
        elif c in "]}":
            depth -= 1


def loads_record(text: str | bytes | bytearray, what: str = "the JSON text", *, field: str | None = None,
                 index: int | None = None) -> Any:
    """``json.loads`` with its pathologies typed (``json.JSONDecodeError`` passes through, for
    the caller's own message)."""
    check_text_depth(text, what, field=field, index=index)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        reraise(exc, what, field=field, index=index)


def loads_line(data: bytes) -> Any:
    """A JSON Lines line read by orjson when that is sure to give what ``loads_record`` gives,
    else ``SLOW`` (the caller reads it with ``loads_record``, which names what is wrong).

    orjson is 1.5-3x faster than ``json.loads`` on a record line (issue 30); it reads the
    same values except where it refuses (NaN / Infinity, lone surrogates, overflowing floats,
    a BOM, bad UTF-8: ``SLOW``) and integers beyond 64 bits, which it turns into floats: a line
    with a run of 19 digits anywhere goes to ``SLOW``, as does one with more brackets than
    ``MAX_TEXT_DEPTH`` (whose depth ``loads_record`` checks)."""
    if _orjson is None or data.count(b"[") + data.count(b"{") > MAX_TEXT_DEPTH or \
            _DIGIT_RUN in data.translate(_DIGITS):
        return SLOW
    try:
        return _orjson.loads(data)
    except _orjson.JSONDecodeError:
        return SLOW


def _constant(name: str) -> Any:
    raise _NonFinite(name)


class _NonFinite(ValueError):
    pass


#: ``json.loads(text, parse_constant=_constant)`` builds this decoder on every call; one is enough
_STRICT = json.JSONDecoder(parse_constant=_constant)


def loads_strict(text: str, what: str, *, field: str | None, index: int | None) -> Any:
    """JSON text that ocml writes as JSON (arguments, bodies): parsed, then held to ``check_value``
    (``json.JSONDecodeError`` passes through)."""
    check_text_depth(text, what, field=field, index=index)
    try:
        # json.loads' own checks (a str, no BOM) first: its errors, word for word
        value = _STRICT.decode(text) if type(text) is str and not text.startswith("\ufeff") \
            else json.loads(text, parse_constant=_constant)
    except _NonFinite as exc:
        raise number_error(what, f"{exc} (not a JSON number)", field=field, index=index) from None
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        reraise(exc, what, field=field, index=index)
    check_value(value, what, field=field, index=index)
    return value


def check_value(value: Any, what: str, *, field: str | None, index: int | None) -> None:
    """``value`` (to be walked or written as JSON) nests at most ``MAX_DEPTH`` levels and holds
    only finite numbers of at most ``sys.get_int_max_str_digits()`` digits.  Iterative (the check
    never recurses: a self-referencing value fails the depth check); containers are stacked,
    leaves checked in line (about as fast as ``json.dumps`` of the value)."""
    t = type(value)
    if t is not dict and t is not list:
        if _container(value):
            t = list
        else:
            _leaf(value, what, field, index)
            return
    stack: list[tuple[Any, int]] = [(value, 0)]
    push, pop = stack.append, stack.pop
    while stack:
        c, depth = pop()
        if depth >= MAX_DEPTH:
            raise depth_error(what, field=field, index=index)
        t = type(c)
        for v in c.values() if t is dict or (t is not list and isinstance(c, Mapping)) else c:
            t = type(v)
            if t is str:
                continue
            if t is dict or t is list:
                push((v, depth + 1))
            elif t is int:
                if _SAFE_BITS and v.bit_length() > _SAFE_BITS:
                    _leaf(v, what, field, index)
            elif t is float:
                if v - v != 0.0:  # NaN or +-Infinity
                    _leaf(v, what, field, index)
            elif v is None or t is bool:
                continue
            elif _container(v):
                push((v, depth + 1))
            else:
                _leaf(v, what, field, index)


def check_tools(tools: tuple[dict[str, Any], ...], field: str) -> None:
    """``check_value`` for every tool's ``parameters``, remembered by content: agentic data repeats
    one tool set in every record, and a repeat costs one ``marshal`` key (``sections.content_key``,
    about a third of a walk) and a dict lookup."""
    try:
        key: Any = content_key(tools)
    except (RecursionError, ValueError):
        key = None
    if key is not None and key in _CHECKED:
        return
    for i, tool in enumerate(tools):
        if tool.get("parameters"):
            check_value(tool["parameters"], f"tool {i}'s parameters", field=f"{field}[{i}].parameters", index=None)
    if key is not None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = None


def _container(v: Any) -> bool:
    return isinstance(v, (Mapping, Sequence)) and not isinstance(v, (str, bytes, bytearray))


def _leaf(v: Any, what: str, field: str | None, index: int | None) -> None:
    """A number JSON cannot carry (NaN, +-Infinity, an int past Python's digit limit) -> ``E-INPUT-NUMBER``."""
    if isinstance(v, float) and not math.isfinite(v):
        raise number_error(what, f"{float(v)!r} (not a JSON number)", field=field, index=index)
    if isinstance(v, int) and not isinstance(v, bool) and _SAFE_BITS and v.bit_length() > _SAFE_BITS:
        try:
            str(v)
        except ValueError:
            raise number_error(what, f"an integer of more than {_INT_DIGITS:,} digits", field=field,
                               index=index) from None


def tree_excess(value: Any, *, max_nodes: int, max_depth: int, max_string: int) -> str | None:
    """What first exceeds the bounds in ``value`` (values, keys included, counted at each use, so
    shared references such as YAML aliases count as often as they appear), or None.  Iterative,
    and it stops at the first excess: a bomb of billions of values costs ``max_nodes`` steps."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    nodes = 0
    while stack:
        v, depth, where = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            return f"more than {max_nodes:,} values"
        if isinstance(v, str) and len(v) > max_string:
            return f"{where or 'a value'} is a string of {len(v):,} characters, over the limit of {max_string:,}"
        items: Any = v.items() if isinstance(v, Mapping) else enumerate(v) if isinstance(v, list) else ()
        if items and depth >= max_depth:
            return f"values nested more than {max_depth} levels deep"
        for k, child in items:
            name = (k if len(k) <= 40 else k[:37] + "...") if isinstance(k, str) else f"<{type(k).__name__}>"
            stack.append((child, depth + 1, f"{where}.{name}" if where else name))
            if isinstance(v, Mapping):
                stack.append((k, depth + 1, where))
    return None
