"""Text as openai-harmony's Rust code writes it: JSON values as serde_json prints them, lines as
``str::lines`` splits them.

A tool schema's ``default`` travels Python ``json.dumps`` -> serde_json ``Value`` -> its
``Display`` (:func:`json_value_text`): integers outside u64/i64 and all floats go through
serde_json's fast, inexact float parser and come out in ryu's layout (``1.0``, ``1e16``,
``0.00001``).  Descriptions are split into comment lines with Rust's ``str::lines``
(:func:`rust_lines`).  Used by the schema converter (``harmony.schema``) and the section text
(``harmony.sections``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ocml.vocab.errors import InputError

__all__ = [
    "json_value_text",
    "key_text",
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
                _string_text(key_text(k)) + ":" + json_value_text(v)
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


def key_text(key: Any) -> str:
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
# Rust's str::lines
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
