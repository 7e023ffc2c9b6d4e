"""Harmony's frame: what HarmonyFormat and OpenChatML 2.x (built on it) share, and no other format.

A message is ``<|start|>HEADER<|message|>BODY`` and a terminator; the model's turn opens with
``<|start|>assistant``; the frame machine of ``ocml.encoder.frames`` reads it back with the
format's ``HeaderStyle``; system and developer messages may be sections (``sections``: their
text), and the system text gains the "Calls to these tools..." line when any developer message
declares function tools (``context``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...grammar.text import check_value, encoding_error, surrogate_at
from ...messages import Conversation
from ...pieces import CTL, TXT, Piece
from ..base import Format, PlanContext
from .sections import tail_field

if TYPE_CHECKING:
    from ...frames import FrameMachine


class HarmonyFrame(Format):
    """The Harmony family's frame (subclassed by ``HarmonyFormat`` and OpenChatML 2.x)."""

    def generation_prompt(self) -> tuple[Piece, ...]:
        return ((CTL, "<|start|>"), (TXT, "assistant"))

    def frame_machine(self, *, strict: bool, role: str | None, emit: Callable[[Any], None] | None = None,
                      markers: frozenset[str] = frozenset()) -> FrameMachine:
        from ...frames import FrameMachine

        return FrameMachine(header=self.header_style, strict=strict, role=role, emit=emit, markers=markers,
                            terminators=self.terminators.reasons)

    def context(self, conv: Conversation) -> PlanContext:
        # Harmony's rule: the system text gains the "Calls to these tools..." line when any
        # developer message declares function tools.
        return PlanContext(has_function_tools=any(getattr(m.structured, "has_function_tools", False)
                                                  for m in conv.messages if m.role == "developer"))

    def section_pieces(self, s: Any, text: str, end: str) -> tuple[Piece, ...]:
        """A system / developer section's text (``sections``: instructions, tool names,
        descriptions, TypeScript schemas, identity, dates) written by the same rule as content;
        an error names the section field the text ends with."""
        at = surrogate_at(text)
        if at >= 0:  # the input policy (``ocml.encoder.grammar.text``), naming the section field
            check_value(s, index=None, field="")
            raise encoding_error(text, at, index=None, field="content")
        return self.escaper.text_before(text, end, field=tail_field(s) if self.escaper else "content")
