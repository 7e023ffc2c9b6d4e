"""What each lexical atom means to the frame machine: the one rule for ``parse`` and the stream.

Both readers of ids lex them differently (``Encoder.parse``: numpy passes and one regex
over the decoded bytes; the stream decoder: the incremental byte scanner), but every atom
they find goes through ``AtomRouter``, so literal blocks, stray specials and invalid ids
mean the same thing to both:

* ``<|literal|>`` (id or text) opens a literal block and ``<|endliteral|>`` closes it;
  neither is a frame event.  A ``<|endliteral|>`` with no block open is a stray control.
* Inside a literal block a control id **of the format** is content: its name as text
  (OpenChatML 2.2 §3: the body is opaque; §16.4 puts controls inside a block).  The block
  does not nest.
* An id that is not part of the format (``<|endoftext|>``, reserved ids...) is never text,
  inside a literal block or not: ``E-PARSE-STRAY-CONTROL`` (decoding note §3.5: non-structural
  special ids are events).  The literal block stays open.
* An id outside the vocabulary is ``E-VOCAB-ID``, wherever it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .frames import FrameMachine

LITERAL_OPEN, LITERAL_CLOSE = "<|literal|>", "<|endliteral|>"

__all__ = ["AtomRouter", "LITERAL_CLOSE", "LITERAL_OPEN"]


class AtomRouter:
    """Routes non-text atoms to a ``FrameMachine``; ``text`` receives text atoms made of controls.

    ``literal`` is True inside a literal block (as the atoms go by).
    """

    __slots__ = ("fm", "text", "literal")

    def __init__(self, fm: FrameMachine, text: Callable[[str, int], None]) -> None:
        self.fm = fm
        self.text = text
        self.literal = False

    def control(self, name: str, position: int) -> bool:
        """A control of the format (id or spelled as text).  True when the frame machine saw it."""
        if self.literal:
            if name == LITERAL_CLOSE:
                self.literal = False
            else:
                self.text(name, position)  # a control id inside a literal block is its text
            return False
        if name == LITERAL_OPEN:
            self.literal = True
            return False
        self.fm.control(name, position)
        return True

    def special(self, name: str, position: int) -> None:
        """An id that is not part of the format: never text."""
        self.fm.special(name, position)

    def invalid(self, token_id: int, position: int) -> None:
        self.fm.error("E-VOCAB-ID", f"id {token_id} is not in the vocabulary", position)
