"""What a format hands the renderer: a message as pieces.

A piece is ``(CTL, "<|start|>")`` (a control token) or ``(TXT, "assistant")``
(text, encoded on its own with special parsing off, so BPE never merges across
a piece boundary).  A message is four groups of pieces so the renderer can mask
them separately without re-tokenizing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

CTL = 0
TXT = 1
#: text that is never trained, even inside a trained group (Apertus tool outputs inside the
#: assistant turn); encoded like ``TXT``
OFF = 2

Piece = tuple[int, str]


@dataclass(frozen=True, slots=True)
class MessagePlan:
    #: the generation-prompt part of the header (``<|start|>assistant``); hashable -> cached
    prompt: tuple[Piece, ...]
    #: the rest of the header, through ``<|message|>``; cached together with ``prompt``
    header: tuple[Piece, ...]
    #: the content pieces
    body: tuple[Piece, ...]
    #: the terminator (``<|end|>``, ``<|call|>``, ``<|return|>``), maybe empty
    end: tuple[Piece, ...]
