"""Scanner atoms: what the byte scanner emits (see ``ocml.encoder.stream.scanner``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Union



@dataclass(frozen=True, slots=True)
class Text:
    """Decoded visible text; ``token_index`` = token of the run's first byte."""

    text: str
    token_index: int


@dataclass(frozen=True, slots=True)
class Control:
    """A control token, as a registered id or as ASCII text."""

    name: str
    token_index: int
    via_id: bool
    in_literal: bool = False
    #: a control spelled as text: the bytes of its last token after it (they are scanned
    #: on as usual; a decoder that stops at this control reads them as ``Encoder.parse``
    #: reads the ids up to this token)
    rest: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class Special:
    """A non-structural special id (``<|endoftext|>``, reserved...)."""

    token_id: int
    token_index: int


@dataclass(frozen=True, slots=True)
class StopString:
    """A user stop string, matched in the text (never part of any ``Text``)."""

    text: str
    token_index: int


@dataclass(frozen=True, slots=True)
class InvalidId:
    """An id outside the vocabulary (negative, too large, or without bytes)."""

    token_id: int
    token_index: int


Atom = Union[Text, Control, Special, StopString, InvalidId]

# Text atoms are created once per feed() call, which with token-by-token streaming is
# once per token: stored through the slots' descriptors, not the frozen ``__init__``'s
# ``object.__setattr__`` (see ``ocml.encoder.messages.new_message``; tests/render/test_plain_constructors.py).
_new = object.__new__
_s_text, _s_token_index = Text.__dict__["text"].__set__, Text.__dict__["token_index"].__set__


def _new_text(text: str, token_index: int) -> Text:
    """``Text(text, token_index)`` without the frozen dataclass ``__init__``."""
    t = _new(Text)
    _s_text(t, text)
    _s_token_index(t, token_index)
    return t


def coalesce(atoms: Iterable[Atom]) -> list[Atom]:
    """Merge adjacent ``Text`` atoms (keeping the first one's index).

    Chunk invariance is defined on this form: the scanner emits text per
    ``feed()`` call, so the split of a run into pieces depends on chunking.
    """
    out: list[Atom] = []
    for a in atoms:
        if type(a) is Text and out and type(out[-1]) is Text:
            prev = out[-1]
            out[-1] = Text(prev.text + a.text, prev.token_index)
        else:
            out.append(a)
    return out
