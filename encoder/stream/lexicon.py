"""The lexical classes of one (format, tokenizer): which ids and spellings are what.

Both readers of ids build their tables from this one derivation (``Encoder.parse`` its
kind table and ``TextSplitter``, the stream decoder its ``ScannerTables``), so they cannot
disagree on what a control is:

* ``control_ids``: registered ids of the format's controls and markers
  (``vocab/data/tokens/<format>.json``: ``controls``, ``markers``) -> name;
* ``special_ids``: every other registered special id (``<|endoftext|>``, reserved ids...):
  never text, never structure (``ocml.encoder.stream.route``);
* ``text_controls``: the format's controls the tokenizer has no id for (fallback mode):
  recognised in the decoded bytes, ``"<" + control`` being the escape;
* ``literal``: the literal block controls (OpenChatML 2.2 §16.4) if the format has them;
* ``run_prefix``: bytes the tokenizer puts before every text run (SentencePiece), not content.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @property
    def names(self) -> frozenset[str]:
        """The format's control and marker names that are ids in this tokenizer."""
        return frozenset(self.control_ids.values())


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
