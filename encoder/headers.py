"""Header grammar, shared by ``parse``, ``parse_text`` and the stream decoder.

A header arrives as text with its inner controls spelled out, e.g.
``assistant to=functions.f<|channel|>commentary <|constrain|>json``.  Accepted:
attributes in any order and in either position (start header or after the channel
tag, HIP-1), Harmony's ``role:name`` and tool-name-as-role, Harmony's bare
content-type word (``analysis code``), whitespace around controls.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, astuple, dataclass, fields, make_dataclass
from typing import Any

from .errors import HeaderError

_ATTR_KEYS = {"to": "recipient", "call_id": "call_id", "name": "name", "intent": "intent", "content_type": "content_type"}
_ROLES = ("system", "developer", "user", "assistant", "tool")
_ROLE_RE = re.compile(r"^(system|developer|user|assistant|tool|functions\.[A-Za-z0-9_.\-]+|[A-Za-z0-9_\-]+\.[A-Za-z0-9_.\-]+)$")
_SPLIT = re.compile(r"(<\|channel\|>|<\|constrain\|>)")
# Harmony names a built-in tool's reply by the tool alone ("<|start|>python to=assistant...").
_HARMONY_TOOL_ROLES = frozenset({"python", "browser", "container"})
_KNOWN_CTYPES = {"code", "json", "text", "markdown", "html", "yaml", "xml"}


@dataclass(frozen=True, slots=True)
class Header:
    """A parsed header (frozen: ``parse_header_cached`` shares instances)."""

    role: str
    channel: str | None = None
    recipient: str | None = None
    call_id: str | None = None
    name: str | None = None
    intent: str | None = None
    content_type: str | None = None
    constrain: str | None = None


# The header while ``parse_header`` fills it in: Header's fields, mutable.
_Draft = make_dataclass("_Draft", [(f.name, f.type, f.default) if f.default is not MISSING else (f.name, f.type)
                                   for f in fields(Header)], slots=True)


def parse_header(text: str, *, harmony: bool, role: str | None = None, position: int | None = None) -> Header:
    """Parse one header; ``role`` is given when the header follows a prefilled ``<|start|>ROLE``."""

    def bad(msg: str, field: str = "header") -> HeaderError:
        return HeaderError(f"{msg} in header {text!r}", field=field, position=position,
                           hint="a header is ROLE [key=value ...] [<|channel|>CHANNEL] [<|constrain|>TYPE]")

    segments = _SPLIT.split(text)
    head = segments[0].split()
    if role is not None:
        # After a prefill the role may be repeated (harmony) or absent.
        if head and head[0] == role:
            head = head[1:]
        words = head
    else:
        if not head:
            raise bad("missing role", "role")
        role, words = head[0], head[1:]
    h = _Draft(role=role)
    if harmony and ":" in role and not role.startswith("functions"):
        h.role, h.name = role.split(":", 1)
    elif harmony and role in _HARMONY_TOOL_ROLES:
        h.role, h.name = "tool", role
    elif role not in _ROLES:
        if not _ROLE_RE.match(role):
            raise bad(f"unknown role {role!r}", "role")
        if harmony:
            h.role, h.name = "tool", role
    bare: list[str] = []
    _attrs(words, h, bare, bad)
    k = 1
    while k < len(segments):
        marker, value = segments[k], segments[k + 1] if k + 1 < len(segments) else ""
        k += 2
        parts = value.split()
        if marker == "<|channel|>":
            if not parts or "=" in parts[0]:
                raise bad("channel marker without a channel", "channel")
            if h.channel is not None:
                raise bad("two channel tags", "channel")
            h.channel = parts[0]
            _attrs(parts[1:], h, bare, bad)
        else:
            if h.constrain is not None:
                raise bad("two constrain tags", "constrain")
            if not parts:
                h.constrain = ""
            else:
                h.constrain = parts[0]
                _attrs(parts[1:], h, bare, bad)
    for word in bare:
        # Harmony: a bare word is the content type (" code"); alone and unknown it is a recipient.
        if harmony and h.recipient is None and word not in _KNOWN_CTYPES and h.content_type is None and len(bare) == 1:
            h.recipient = word
        elif h.content_type is None:
            h.content_type = word
        else:
            raise bad(f"unexpected word {word!r}")
    return Header(*astuple(h))


def _attrs(words: list[str], h: Any, bare: list[str], bad) -> None:  # type: ignore[no-untyped-def]
    for w in words:
        key, eq, val = w.partition("=")
        if not eq:
            bare.append(w)
            continue
        field = _ATTR_KEYS.get(key)
        if field is None:
            raise bad(f"unknown attribute {key!r}", key)
        if not val:
            raise bad(f"empty {key}=", field)
        if getattr(h, field) is not None and getattr(h, field) != val:
            raise bad(f"{key}= given twice", field)
        setattr(h, field, val)


_CACHE: dict[tuple[str, bool, str | None], Header] = {}
_CACHE_MAX = 4096
_CACHE_TEXT_MAX = 256


def parse_header_cached(text: str, harmony: bool, role: str | None = None, position: int | None = None) -> Header:
    """``parse_header`` memoised on (text, harmony, role): headers repeat across messages.

    The returned ``Header`` is shared (it is frozen).  Errors are not cached (they carry
    the position).
    """
    key = (text, harmony, role)
    h = _CACHE.get(key)
    if h is None:
        h = parse_header(text, harmony=harmony, role=role, position=position)
        if len(text) <= _CACHE_TEXT_MAX:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.clear()
            _CACHE[key] = h
    return h
