"""The lexical classes of one (format, tokenizer): which ids and spellings are what.

Both readers of ids build their tables from this one derivation (``Encoder.parse`` its
kind table and ``TextSplitter``, the stream decoder its ``ScannerTables``), so they cannot
disagree on what a control is:

* ``control_ids``: registered ids of the format's controls and markers
  (``encoder/formats/<pkg>/<format>.tokens.json``: ``controls``, ``markers``) -> name;
* ``special_ids``: every other registered special id (``<|endoftext|>``, reserved ids...):
  never text, never structure (``ocml.encoder.stream.route``);
* ``text_controls``: the format's controls the tokenizer has no id for (fallback mode):
  recognised in the decoded bytes, ``"<" + control`` being the escape;
* ``literal``: the literal block controls (OpenChatML 2.2 §16.4) if the format has them;
* ``run_prefix``: bytes the tokenizer puts before every text run (SentencePiece), not content;
* ``partial_control(data)``: how many bytes at the end of ``data`` could still become a text
  control or its escape (``Answer<|ret`` -> 5): what a stream cut by its length leaves out of
  the message (``E-STREAM-TRUNCATED``'s text), in parse and in the stream alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .route import LITERAL_CLOSE, LITERAL_OPEN

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer

    from ..formats.base import Format

__all__ = ["Lexicon", "build_lexicon"]


@dataclass(frozen=True)
class Lexicon:
    control_ids: dict[int, str]
    special_ids: dict[int, str]
    text_controls: tuple[str, ...]
    literal: tuple[str, str] | None
    run_prefix: bytes
    n_vocab: int

    def partial_control(self, data: bytes) -> int:
        """Length of the longest suffix of ``data`` that is a proper prefix of a text control's
        spelling or of its escape (``"<" + control``); 0 without text controls."""
        prefixes = _prefixes(self.text_controls)
        for k in range(min(len(data), _longest(self.text_controls)), 0, -1):
            if data[-k:] in prefixes:
                return k
        return 0

    @property
    def names(self) -> frozenset[str]:
        """The format's control and marker names that are ids in this tokenizer."""
        return frozenset(self.control_ids.values())


@lru_cache(maxsize=64)
def _prefixes(text_controls: tuple[str, ...]) -> frozenset[bytes]:
    pats = [c.encode() for c in text_controls] + [b"<" + c.encode() for c in text_controls]
    return frozenset(p[:k] for p in pats for k in range(1, len(p)))


def _longest(text_controls: tuple[str, ...]) -> int:
    return max((len(c.encode()) for c in text_controls), default=0)


def build_lexicon(format: Format, tokenizer: Tokenizer) -> Lexicon:
    """The lexicon of ``format`` on ``tokenizer`` (``Codec.lexicon`` builds it once per codec)."""
    tok = tokenizer
    table = format.table
    text_controls = tuple(format.text_controls)
    known = (set(table.controls) | set(table.markers)) - set(text_controls)
    n = tok.n_vocab
    controls: dict[int, str] = {}
    specials: dict[int, str] = {}
    for name, i in tok.specials.items():
        if 0 <= i < n:
            (controls if name in known else specials)[i] = name
    every = set(table.controls)
    literal = (LITERAL_OPEN, LITERAL_CLOSE) if {LITERAL_OPEN, LITERAL_CLOSE} <= every else None
    return Lexicon(controls, specials, text_controls, literal, tok.run_prefix, n)
