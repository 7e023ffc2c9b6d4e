"""One exception hierarchy for ocml.

Every error carries a ``code`` (OpenChatML codes where one fits, ``E-...``), an
optional location (message ``index``, ``field``, token ``position``) and a
``hint`` saying what to do.  ``ocml.encoder.errors`` re-exports these names; the
hierarchy lives here because ``vocab`` is the lowest layer and must not import
``encoder``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar


class OcmlError(Exception):
    """Root of every error ocml raises on purpose."""

    code: str = "E-OCML"
    #: set when ``index`` was moved to the user's input message (``encoder.adapters.relocate``): the
    #: index in the expanded message list it was raised at
    expanded_index: int | None = None
    relocated: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        index: int | None = None,
        field: str | None = None,
        position: int | None = None,
        hint: str | None = None,
    ) -> None:
        if code is not None:
            self.code = code
        self.message = message
        self.index = index
        self.field = field
        self.position = position
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"message {self.index}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        if self.position is not None:
            where.append(f"token {self.position}")
        text = f"[{self.code}] {self.message}"
        if where:
            text += f" (at {', '.join(where)})"
        if self.hint:
            text += f". Hint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "index": self.index,
            "field": self.field,
            "position": self.position,
            "hint": self.hint,
        }


class UnknownNameError(OcmlError, KeyError):
    """An unknown format, encoding, mode or policy name."""

    code = "E-UNKNOWN-NAME"

    def __str__(self) -> str:  # KeyError would quote the message
        return self._render()


class VocabError(OcmlError):
    """A vocabulary could not be loaded, failed its hash check, or clashes."""

    code = "E-VOCAB"


class DependencyError(OcmlError, ImportError):
    """An optional dependency is missing."""

    code = "E-MISSING-DEPENDENCY"


class InputError(OcmlError, ValueError):
    """A conversation or message does not have a shape ocml can read."""

    code = "E-INPUT"


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (still catchable as ``TypeError``)."""

    code = "E-INPUT-TYPE"


class InputIndexError(InputError, IndexError):
    """An index outside its range (still catchable as ``IndexError``)."""

    code = "E-INPUT-INDEX"


class HeaderError(InputError):
    """A header value (role, channel, recipient, attribute) is malformed."""

    code = "E-PARSE-HEADER"


class ChannelMissingError(InputError):
    code = "E-PARSE-CHANNEL-MISSING"


class BodyConstraintError(InputError):
    """A body failed its ``<|constrain|>`` / ``content_type`` type."""

    code = "E-BODY-CONSTRAINT-VIOLATION"


class CallSchemaError(InputError):
    """A tool call or reply is missing what it needs (recipient, call_id...)."""

    code = "E-CALL-SCHEMA"


class UnrepresentableError(InputError):
    """The content cannot be written in this format/tokenizer without ambiguity."""

    code = "E-UNREPRESENTABLE"


class ParseError(OcmlError, ValueError):
    """Ids or transcript text that do not follow the format."""

    code = "E-PARSE"


class StreamError(ParseError):
    """Raised by a strict stream decoder (lenient decoders emit error events)."""

    code = "E-STREAM"


def require(module: str, extra: str = "") -> Any:
    """Import a dependency or raise an instructive DependencyError.

    ``extra``: the ``ocml[extra]`` that installs ``module`` (tests/house/test_require_extras.py checks that it
    does); none for ocml's own dependencies, which only a broken environment lacks."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        pip = f"pip install 'ocml[{extra}]'" if extra else f"pip install {module}"
        raise DependencyError(
            f"{module} is required for this feature but is not installed",
            hint=pip,
        ) from exc


# -- argument checks for public entry points: a typed error naming the field, never a
# traceback from deep inside (or a bare string silently split into characters).

E = TypeVar("E", bound=Enum)


def as_strings(value: Any, field: str) -> tuple[str, ...]:
    """A list of strings (a bare ``str`` is refused: iterating it would give characters)."""
    if isinstance(value, str) or not _iterable(value) or not all(isinstance(v, str) for v in value):
        raise InputTypeError(f"{field} must be a list of strings, got {value!r}", field=field,
                             hint=f"e.g. {field}=[{value!r}]" if isinstance(value, str) else None)
    return tuple(value)


def as_ints(value: Any, field: str) -> tuple[int, ...]:
    """A list of integers (numpy integers accepted, floats and strings refused)."""
    import operator

    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        return tuple(operator.index(v) for v in value)
    except TypeError:
        raise InputTypeError(f"{field} must be a list of integers, got {value!r}", field=field) from None


def as_enum(value: Any, enum: type[E], field: str, what: str) -> E:
    """``enum(value)`` (a member or its value), else ``UnknownNameError`` listing the choices."""
    try:
        return enum(value)
    except ValueError:
        raise UnknownNameError(f"unknown {what} {value!r}", field=field,
                               hint="one of: " + ", ".join(str(m.value) for m in enum)) from None


def expect(value: Any, types: type | tuple[type, ...], field: str, what: str) -> None:
    """Raise ``InputTypeError`` unless ``value`` is an instance of ``types``."""
    if not isinstance(value, types):
        raise InputTypeError(f"{field} must be {what}, got {type(value).__name__}", field=field)


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


EXCERPT_CHARS = 80  # the most of a bad value an error message quotes


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A bounded ``repr`` of ``value`` for an error message: at most ``limit`` characters and a few
    items per level, whatever its size, depth or sharing (a YAML alias bomb, a 5,000-digit int)."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxother = 3, limit, limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = r.maxfrozenset = r.maxdeque = 4
    try:
        text = r.repr(value)
    except (ValueError, RecursionError):  # an int past Python's int-string limit, a pathological __repr__
        text = f"<{type(value).__name__}{f' of {value.bit_length():,} bits' if isinstance(value, int) else ''}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def article(word: str) -> str:
    """``word`` after its indefinite article, for a message that names a role: "an assistant", "a user",
    "an 'analysis'" (by the first letter; a quote is skipped)."""
    return ("an " if word.lstrip("'\"")[:1].lower() in ("a", "e", "i", "o") else "a ") + word
