"""JSON Schema -> TypeScript, exactly as openai-harmony 0.0.8 writes it.

Harmony shows function tools to the model as TypeScript type aliases
(``type f = (_: {...}) => any;``).  The conversion is small but full of quirks
that change the rendered bytes, so this module reproduces them on purpose:

* top-level properties are not indented; a nested object indents its
  properties by 4 more spaces *and* its closing brace (``    },``);
* a property line is ``key?: T,`` (``?`` unless listed in ``required``) with
  `` // default: X`` appended when a default exists.  String defaults are
  written raw inside double quotes (no escaping), except for enum properties
  where they are written raw without quotes; any other default is compact
  JSON as serde_json prints it (``1.0``, ``1e16``, ``0.00001``...) after
  reading Python's ``json.dumps`` text with its inexact default float
  parser (some floats and all integers beyond u64/i64 change value);
* ``title`` (``// T`` then ``//``), ``description`` and string ``examples``
  become comment lines above the property; an object's own ``description``
  is written as ``// desc`` just before its ``{``;
* ``oneOf`` uses a multi-line `` | variant // comment`` form, closed by a
  line holding only ``,`` (property level), with description de-duplication
  against the first variant;
* string ``enum`` -> ``"a" | "b"``; ``integer``/``number`` -> ``number``;
  ``array`` -> ``T[]`` or ``Array<any>``; a ``type`` list is joined with
  `` | `` (``integer`` mapped to ``number``); ``nullable: true`` adds
  `` | null`` unless the type text already contains ``null`` (a substring
  test, as in harmony).

Gaps kept as harmony has them (the output is ``any`` or the keyword is
ignored): ``$ref``/``$defs``/``definitions``, ``anyOf``, ``allOf``, ``not``,
``const``, ``format``, ``pattern``, bounds, ``additionalProperties``,
non-string ``enum`` members (an ``integer`` enum is just ``number``; an enum
without ``type`` is ``any``), non-string ``examples`` (skipped, but the
``// Examples:`` header is still written), and ``type: "null"`` alone (``any``).
A ``oneOf`` that is not a list is ignored for the type but still suppresses
the property's description and default comments.

The input is a JSON value as openai-harmony would receive it after
``json.dumps``: dicts, lists (tuples are treated as lists), strings, numbers,
booleans and None.  Anything that is not a dict is an empty schema (``any``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ocml.vocab.errors import InputError

__all__ = [
    "json_schema_to_typescript",
    "json_value_text",
    "rust_lines",
]

_U64_MAX = 2**64 - 1


# ---------------------------------------------------------------------------
# serde_json-compatible value printing
# ---------------------------------------------------------------------------


def _float_text(value: float) -> str:
    """Format a finite float the way ryu (serde_json's float printer) does.

    Python's ``repr`` gives the same shortest round-trip digits; only the
    layout differs (ryu: ``1e16``, ``1e-6``, ``0.00001``, ``1.0``).
    """
    text = repr(value)
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    if not digits:  # +/- zero
        return sign + "0.0"
    # value == int(digits) * 10**k
    k = (int(exp_text) if exp_text else 0) - len(frac_part)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    kk = length + k  # decimal point position relative to the first digit
    if 0 <= k and kk <= 16:
        return sign + digits + "0" * k + ".0"
    if 0 < kk <= 16:
        return sign + digits[:kk] + "." + digits[kk:]
    if -5 < kk <= 0:
        return sign + "0." + "0" * (-kk) + digits
    exp10 = kk - 1
    if length == 1:
        return f"{sign}{digits}e{exp10}"
    return f"{sign}{digits[0]}.{digits[1:]}e{exp10}"


def _string_text(value: str) -> str:
    # serde_json escapes '"', '\\' and control characters only (lower-case
    # hex), which is exactly json.dumps(ensure_ascii=False).
    return json.dumps(value, ensure_ascii=False)


def _overflows(significand: int, digit: int) -> bool:
    # serde_json's ``overflow!(a * 10 + b, u64::MAX)``
    return significand >= _U64_MAX // 10 and (
        significand > _U64_MAX // 10 or digit > _U64_MAX % 10
    )


def _out_of_range(text: str) -> InputError:
    return InputError(
        f"number {text} is out of range for openai-harmony's JSON parser",
        field="parameters",
        hint="use a number whose magnitude is below about 1e308",
    )


def _serde_from_parts(text: str, positive: bool, significand: int, exponent: int) -> float:
    """serde_json's ``f64_from_parts`` without ``float_roundtrip``.

    Not correctly rounded: ``significand as f64`` times/divided by a power of
    ten, one rounding each, so e.g. ``2.4404385679433794e+26`` reads back as
    ``2.440438567943379e26``.
    """
    f = float(significand)
    while True:
        magnitude = abs(exponent)
        if magnitude <= 308:
            power = float(f"1e{magnitude}")
            if exponent >= 0:
                f *= power
                if math.isinf(f):
                    raise _out_of_range(text)
            else:
                f /= power
            break
        if f == 0.0:
            break
        if exponent >= 0:
            raise _out_of_range(text)
        f /= 1e308
        exponent += 308
    return f if positive else -f


def _serde_number(text: str) -> int | float:
    """The number serde_json 1.0.140 (default features) reads from ``text``.

    ``text`` is what Python's ``json.dumps`` writes for an int or float.
    Integers that fit u64 (or i64 when negative) stay integers; anything else
    becomes an ``f64`` through serde_json's fast, inexact path.
    """
    i, n = 0, len(text)
    positive = True
    if text.startswith("-"):
        positive, i = False, 1

    def exponent_part(i: int, significand: int, starting: int) -> float:
        i += 1  # 'e' / 'E'
        positive_exp = True
        if i < n and text[i] in "+-":
            positive_exp = text[i] == "+"
            i += 1
        exp = 0
        while i < n and text[i].isdigit():
            exp = exp * 10 + int(text[i])
            if exp > 2**31 - 1:  # parse_exponent_overflow
                if significand != 0 and positive_exp:
                    raise _out_of_range(text)
                return 0.0 if positive else -0.0
            i += 1
        final = starting + exp if positive_exp else starting - exp
        final = max(-(2**31), min(2**31 - 1, final))  # saturating i32
        return _serde_from_parts(text, positive, significand, final)

    def decimal_part(i: int, significand: int, before: int) -> float:
        i += 1  # '.'
        after = 0
        while i < n and text[i].isdigit():
            digit = int(text[i])
            if _overflows(significand, digit):  # parse_decimal_overflow
                while i < n and text[i].isdigit():
                    i += 1
                break
            significand = significand * 10 + digit
            after -= 1
            i += 1
        if i < n and text[i] in "eE":
            return exponent_part(i, significand, before + after)
        return _serde_from_parts(text, positive, significand, before + after)

    significand = int(text[i])
    i += 1
    if significand != 0:
        while i < n and text[i].isdigit():
            digit = int(text[i])
            if _overflows(significand, digit):  # parse_long_integer
                exponent = 0
                while i < n and text[i].isdigit():
                    i += 1
                    exponent += 1
                if i < n and text[i] == ".":
                    return decimal_part(i, significand, exponent)
                if i < n and text[i] in "eE":
                    return exponent_part(i, significand, exponent)
                return _serde_from_parts(text, positive, significand, exponent)
            significand = significand * 10 + digit
            i += 1
    if i < n and text[i] == ".":
        return decimal_part(i, significand, 0)
    if i < n and text[i] in "eE":
        return exponent_part(i, significand, 0)
    if positive:
        return significand
    if significand == 0:
        return -0.0
    if significand <= 2**63:
        return -significand
    return -float(significand)


def json_value_text(value: Any) -> str:
    """Compact JSON as openai-harmony prints a default value.

    The value travels Python ``json.dumps`` -> serde_json ``Value`` -> its
    ``Display``: integers outside u64/i64 and all floats go through serde_json's
    inexact float parser (see :func:`_serde_number`) and are printed in ryu's
    layout; object keys keep their insertion order (``preserve_order``);
    strings are escaped like ``json.dumps(ensure_ascii=False)``.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            # json.dumps would write NaN/Infinity, which serde_json rejects.
            raise InputError(
                f"non-finite number {value!r} in a tool schema",
                field="parameters",
                hint="JSON has no NaN/Infinity; use a finite number or a string",
            )
        text = float.__repr__(value) if isinstance(value, float) else int.__repr__(value)
        number = _serde_number(text)
        if isinstance(number, int):
            return str(number)
        return _float_text(number)
    if isinstance(value, str):
        return _string_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                _string_text(_key_text(k)) + ":" + json_value_text(v)
                for k, v in value.items()
            )
            + "}"
        )
    # Anything else is not JSON; mirror json.dumps' refusal.
    raise InputError(
        f"value of type {type(value).__name__} is not JSON",
        field="parameters",
        hint="tool schemas must contain only dict/list/str/int/float/bool/None",
    )


def _key_text(key: Any) -> str:
    # json.dumps turns non-string keys into strings; mirror the common cases.
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return repr(key)
    return str(key)


# ---------------------------------------------------------------------------
# small helpers mirroring serde_json accessors
# ---------------------------------------------------------------------------


def rust_lines(text: str) -> list[str]:
    """Split like Rust's ``str::lines``.

    Lines end at ``\\n``; a ``\\r`` directly before that ``\\n`` is dropped;
    a final line ending adds no empty line; a bare ``\\r`` is kept; other
    Unicode separators (``\\u2028``, ``\\x0b``...) do not split.
    """
    if not text:
        return []
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
        return [p[:-1] if p.endswith("\r") else p for p in parts]
    head = [p[:-1] if p.endswith("\r") else p for p in parts[:-1]]
    return head + [parts[-1]]


def _get(schema: Any, key: str) -> Any:
    """``Value::get``: only objects have members."""
    if isinstance(schema, dict):
        return schema.get(key, _MISSING)
    return _MISSING


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "<missing>"


_MISSING: Any = _Missing()


def _as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _as_list(value: Any) -> list[Any] | None:
    return list(value) if isinstance(value, (list, tuple)) else None


def _is_enum(schema: Any) -> bool:
    values = _as_list(_get(schema, "enum"))
    return bool(values)


def _is_nullable(schema: Any) -> bool:
    return _get(schema, "nullable") is True


def _with_nullable(schema: Any, type_text: str) -> str:
    if _is_nullable(schema) and "null" not in type_text:
        return type_text + " | null"
    return type_text


def _default_comment(schema: Any, default: Any, *, enum_raw: bool) -> str:
    """``default: X`` text.

    Non-enum string defaults are quoted without escaping.  Enum string
    defaults are raw when ``enum_raw`` (property level) and JSON-quoted
    otherwise (top-level ``oneOf`` variants).  Everything else is JSON.
    """
    if isinstance(default, str):
        if not _is_enum(schema):
            return f'default: "{default}"'
        if enum_raw:
            return f"default: {default}"
    return f"default: {json_value_text(default)}"


# ---------------------------------------------------------------------------
# the converter
# ---------------------------------------------------------------------------


def json_schema_to_typescript(schema: Any, indent: str = "") -> str:
    """Convert a JSON Schema (dict) to harmony's TypeScript text.

    ``indent`` is the prefix used for property lines of an object at this
    level; the top-level call uses ``""`` (harmony's tool rendering does).
    """
    # oneOf at this level (checked before "type")
    one_of = _as_list(_get(schema, "oneOf"))
    if one_of is not None:
        return _one_of_inline(one_of, indent)

    type_value = _get(schema, "type")
    type_list = _as_list(type_value)
    if type_list is not None:
        names = [
            "number" if t == "integer" else t for t in type_list if isinstance(t, str)
        ]
        if names:
            return " | ".join(names)

    if isinstance(type_value, str):
        if type_value == "object":
            return _object(schema, indent)
        if type_value == "string":
            members = _as_list(_get(schema, "enum"))
            if members is not None:
                quoted = [f'"{m}"' for m in members if isinstance(m, str)]
                if quoted:
                    return " | ".join(quoted)
            return "string"
        if type_value in ("number", "integer"):
            return "number"
        if type_value == "boolean":
            return "boolean"
        if type_value == "array":
            items = _get(schema, "items")
            if items is not _MISSING:
                return json_schema_to_typescript(items, indent) + "[]"
            return "Array<any>"
        return "any"
    # A oneOf that is not a list was skipped above; harmony ends with "any".
    return "any"


def _one_of_inline(variants: list[Any], indent: str) -> str:
    out: list[str] = []
    for variant in variants:
        out.append(f"\n{indent} | ")
        out.append(_with_nullable(variant, json_schema_to_typescript(variant, indent + "   ")))
        comments: list[str] = []
        desc = _as_str(_get(variant, "description"))
        if desc is not None:
            comments.append(desc)
        default = _get(variant, "default")
        if default is not _MISSING:
            comments.append(_default_comment(variant, default, enum_raw=False))
        if comments:
            out.append(" // " + " ".join(comments))
    return "".join(out)


def _object(schema: dict[str, Any], indent: str) -> str:
    out: list[str] = []
    desc = _as_str(_get(schema, "description"))
    if desc is not None:
        out.append(f"{indent}// {desc}\n")
    out.append("{\n")

    props = _get(schema, "properties")
    if isinstance(props, dict):
        required: set[str] = set()
        req = _as_list(_get(schema, "required"))
        if req is not None:
            required = {r for r in req if isinstance(r, str)}
        for raw_key, val in props.items():
            key = _key_text(raw_key)
            mark = "" if key in required else "?"
            has_one_of = _get(val, "oneOf") is not _MISSING

            title = _as_str(_get(val, "title"))
            if title is not None:
                out.append(f"{indent}// {title}\n{indent}//\n")
            if not has_one_of:
                pdesc = _as_str(_get(val, "description"))
                if pdesc is not None:
                    out.append(f"{indent}// {pdesc}\n")
            examples = _as_list(_get(val, "examples"))
            if examples:
                out.append(f"{indent}// Examples:\n")
                for ex in examples:
                    if isinstance(ex, str):
                        out.append(f'{indent}// - "{ex}"\n')

            variants = _as_list(_get(val, "oneOf"))
            if variants is not None:
                out.append(_one_of_property(val, variants, key, mark, indent))
                continue

            type_text = _with_nullable(val, json_schema_to_typescript(val, indent + "    "))
            line = f"{indent}{key}{mark}: {type_text},"
            if not has_one_of:
                default = _get(val, "default")
                if default is not _MISSING:
                    line += " // " + _default_comment(val, default, enum_raw=True)
            out.append(line + "\n")
    out.append(f"{indent}}}")
    return "".join(out)


def _one_of_property(
    val: dict[str, Any], variants: list[Any], key: str, mark: str, indent: str
) -> str:
    out: list[str] = []
    prop_desc = _as_str(_get(val, "description"))
    first_desc = _as_str(_get(variants[0], "description")) if variants else None
    desc_above = False
    if prop_desc is not None and not (first_desc is not None and first_desc == prop_desc):
        out.append(f"{indent}// {prop_desc}\n")
        desc_above = True
    default = _get(val, "default")
    if default is not _MISSING:
        out.append(f"{indent}// {_default_comment(val, default, enum_raw=True)}\n")
    out.append(f"{indent}{key}{mark}:\n")
    for i, variant in enumerate(variants):
        text = _with_nullable(variant, json_schema_to_typescript(variant, indent + "   "))
        comments: list[str] = []
        if not (i == 0 and desc_above):
            vdesc = _as_str(_get(variant, "description"))
            if vdesc is not None and vdesc != prop_desc:
                comments.append(vdesc)
        vdefault = _get(variant, "default")
        if vdefault is not _MISSING:
            comments.append(_default_comment(variant, vdefault, enum_raw=True))
        line = f"{indent} | {text}"
        if comments:
            line += " // " + " ".join(comments)
        out.append(line + "\n")
    out.append(f"{indent},\n")
    return "".join(out)
