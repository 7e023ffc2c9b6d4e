"""The header grammar: one home for reading a header (``parse``, ``parse_text``, the stream
decoder) and for checking, at render, that what is written reads back as the same fields.

A header arrives as text with its inner controls spelled out, e.g.
``assistant to=functions.f<|channel|>commentary <|constrain|>json``.  Accepted:
attributes in any order and in either position (start header or after the channel
tag, HIP-1), Harmony's ``role:name`` and tool-name-as-role (the role words:
``ocml.encoder.grammar.roles``), Harmony's bare content-type word (``analysis code``),
whitespace around controls.

Render side (``check_header``): every header value is one word (no whitespace, ``<``,
``>``, ``|``, no lone surrogate), the role is one of the format's (``roles``), and the header
text the format writes is read back with the format's own reader and must give the
message's fields again (an empty tool name, a name ``:.``, a Harmony content type that
would read as a recipient: a typed ``E-PARSE-HEADER`` naming the field, never a header
that parses as something else).
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields, make_dataclass
from typing import Any

from ..errors import HeaderError
from .roles import BASE_ROLES, RoleGrammar
from .text import check_text

_ATTR_KEYS = {"to": "recipient", "call_id": "call_id", "name": "name", "intent": "intent", "content_type": "content_type"}
_SPLIT = re.compile(r"(<\|channel\|>|<\|constrain\|>)")
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


@dataclass(frozen=True, eq=False)
class HeaderStyle:
    """How a format writes and reads a header: the strategy each format declares
    (``Format.header_style``), which the readers (``parse_header``, the frame machine), the
    render-time round trip and the chat templates take their rules from.  Compared and hashed by
    identity: one object per format class (``parse_header_cached`` keys on it)."""

    #: what the role word may be and what it reads as (``ocml.encoder.grammar.roles``)
    roles: RoleGrammar = RoleGrammar(BASE_ROLES)
    #: the channel words a header may carry (None: any word, or none)
    channels: tuple[str, ...] | None = None
    #: a lone bare word that is no known content type is the recipient, except on the final
    #: channel (openai-harmony's reading; see ``parse_header``); else it is the content type
    bare_recipient: bool = False
    #: (message field, attribute) pairs written as `` attribute=value``, in order (OpenChatML §6)
    attributes: tuple[tuple[str, str], ...] = ()
    #: a message's ``constrain`` is written as ``<|constrain|>TYPE`` (OpenChatML 2.0 drops it)
    constrain: bool = True
    #: the answer is a message whose channel word is ``final`` (Harmony); else its effective channel
    #: is (no channel reads as ``final``: OpenChatML 1.x transcripts)
    answer_by_channel_word: bool = False


#: a header with the five roles and no format's own rules (frame machines that read no such header)
PLAIN = HeaderStyle()


#: Header's field names, in order (a draft's values become a Header without ``astuple``'s deep copy)
_FIELDS = tuple(f.name for f in fields(Header))
# The header while ``parse_header`` fills it in: Header's fields, mutable.
_Draft = make_dataclass("_Draft", [(f.name, f.type, f.default) if f.default is not MISSING else (f.name, f.type)
                                   for f in fields(Header)], slots=True)


def parse_header(text: str, *, style: HeaderStyle, role: str | None = None, position: int | None = None) -> Header:
    """Parse one header; ``role`` is given when the header follows a prefilled ``<|start|>ROLE``."""

    def bad(msg: str, field: str = "header") -> HeaderError:
        return HeaderError(f"{msg} in header {text!r}", field=field, position=position,
                           hint="a header is ROLE [key=value ...] [<|channel|>CHANNEL] [<|constrain|>TYPE]")

    segments = _SPLIT.split(text)
    head = segments[0].split()
    grammar = style.roles
    if role is not None:
        # After a prefill the role may be repeated (harmony) or absent; the prefilled role was
        # checked against the same grammar (``prefill.prefill_role``).
        if head and head[0] == role:
            head = head[1:]
        words = head
        read = grammar.read(role) or (role, None)
    else:
        if not head:
            raise bad("missing role", "role")
        role, words = head[0], head[1:]
        known = grammar.read(role)
        if known is None:
            raise bad(f"unknown role {role!r}", "role")
        read = known
    h = _Draft(role=read[0], name=read[1])
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
        # Harmony: a bare word is the content type (" code"); alone and unknown it is a recipient
        # (openai-harmony's reading), except on the final channel: the answer is addressed to the
        # user, a recipient is written "to=NAME" (Harmony spec), and vLLM's gpt-oss path reads
        # a final message as content whatever follows the channel.  So "final answer" is the
        # answer (content type "answer"), never a call ended by <|return|>.
        if style.bare_recipient and h.recipient is None and word not in _KNOWN_CTYPES and h.content_type is None \
                and len(bare) == 1 and h.channel != "final":
            h.recipient = word
        elif h.content_type is None:
            h.content_type = word
        else:
            raise bad(f"unexpected word {word!r}")
    return Header(*[getattr(h, f) for f in _FIELDS])  # str / None values: nothing to copy


def _attrs(words: list[str], h: Any, bare: list[str], bad) -> None:
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


_CACHE: dict[tuple[str, HeaderStyle, str | None], Header] = {}
_CACHE_MAX = 4096
_CACHE_TEXT_MAX = 256


def parse_header_cached(text: str, style: HeaderStyle, role: str | None = None, position: int | None = None) -> Header:
    """``parse_header`` memoised on (text, style, role): headers repeat across messages.

    The returned ``Header`` is shared (it is frozen).  Errors are not cached (they carry
    the position).
    """
    key = (text, style, role)
    h = _CACHE.get(key)
    if h is None:
        h = parse_header(text, style=style, role=role, position=position)
        if len(text) <= _CACHE_TEXT_MAX:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.clear()
            _CACHE[key] = h
    return h


# -- render side ---------------------------------------------------------------------------

#: the message fields a header carries (``Message`` attribute names, ``Header`` field names)
HEADER_FIELDS = ("role", "channel", "recipient", "call_id", "name", "intent", "content_type", "constrain")
# A header value ends at whitespace or "<" (HIP-1 parsers cut there), so neither may occur inside.
_BAD_VALUE = re.compile(r"[\s<>|]")


def check_value(field: str, value: str, index: int | None) -> None:
    """One header value: a single word (``E-PARSE-HEADER``), valid Unicode (``E-INPUT-ENCODING``)."""
    if value == "" or _BAD_VALUE.search(value):
        raise HeaderError(f"{field} {value!r} is empty or contains whitespace, '<', '>' or '|'", index=index,
                          field=field, hint="header values are single words; put free text in the content")
    check_text(value, index=index, field=field)


def check_round_trip(written: str, want: Header, got: Header | HeaderError, index: int | None,
                     role_field: str = "role") -> None:
    """``written`` (a header's text) must read back (``got``) as the fields it was written from;
    ``role_field``: the message field the role word was written from (Harmony tool: ``name``)."""
    if isinstance(got, HeaderError):
        field = got.field if got.field in HEADER_FIELDS else "role"
        if field == "role":
            field = role_field
        raise HeaderError(f"the header would be written as {written!r}, which does not read back "
                          f"({got.message})", index=index, field=field,
                          hint="header values are names: letters, digits, '_', '-', '.'; a tool name is "
                               "namespaced (functions.NAME)")
    differ = [f for f in HEADER_FIELDS if getattr(want, f) != getattr(got, f)]
    if not differ:
        return
    # name a field the caller set (content_type 'foo' read back as a recipient: content_type)
    f = next((f for f in differ if getattr(want, f) is not None), differ[0])
    raise HeaderError(f"{f} {getattr(want, f)!r} would be written as {written!r}, which reads back as "
                      + ", ".join(f"{g}={getattr(got, g)!r}" for g in differ), index=index, field=f,
                      hint="header values are names: letters, digits, '_', '-', '.'; in Harmony a content type "
                           "without a recipient must be a known type (" + ", ".join(sorted(_KNOWN_CTYPES)) + ")")
