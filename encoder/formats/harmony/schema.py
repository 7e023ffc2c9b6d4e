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

from typing import Any

from .rust_text import json_value_text, key_text

__all__ = ["json_schema_to_typescript"]


# ---------------------------------------------------------------------------
# small helpers mirroring serde_json accessors
# ---------------------------------------------------------------------------


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
            key = key_text(raw_key)
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
