"""Reasoning in formats without a reasoning channel (ChatML): the ``reasoning=`` policy.

OpenAI / HF chat data carries the model's reasoning in ``reasoning_content`` / ``thinking``
(an ``analysis`` message once read).  ChatML has no channel for it, so the caller chooses:

- ``error`` (default): ``E-INPUT-REASONING``.  Silently dropping or inlining the reasoning
  would train a different model than the data describes, so neither is the default.
- ``drop``: the reasoning is left out; the answer renders as if there had been none.
- ``think``: the reasoning is written before the answer, in the same assistant frame, as
  ``<think>\\nREASONING\\n</think>\\n\\nANSWER`` — the layout of the Qwen3 ChatML templates
  (trl ``chat_templates/qwen3.jinja``, llama.cpp ``models/templates/Qwen-Qwen3-0.6B.jinja``:
  ``'<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n')``),
  which DeepSeek-R1-style reasoning models share (the answer follows ``</think>``).  The
  think block is part of what the model generates, so it is trained with the answer.
  Which turns keep their reasoning is the CoT policy (``cot=``, applied before the frames
  are built): the default drops the reasoning of turns that ended before the last user
  message, as Qwen3's template does (``last_query_index``).
"""

from __future__ import annotations

from enum import Enum

from ocml.vocab.errors import as_enum


class Reasoning(str, Enum):
    ERROR = "error"
    DROP = "drop"
    THINK = "think"


CHOICES: tuple[str, ...] = tuple(r.value for r in Reasoning)


def parse_reasoning(value: Reasoning | str | None) -> Reasoning:
    if value is None:
        return Reasoning.ERROR
    return as_enum(value, Reasoning, "reasoning", "reasoning policy")


def think_block(reasoning: str, answer: str) -> str:
    """Qwen3's think layout: the reasoning between ``<think>`` lines, then the answer."""
    return "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + answer.lstrip("\n")
