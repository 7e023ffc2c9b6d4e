"""What a record of each shape reads as (before rendering): small frozen dataclasses.

``Messages`` below is a list of message dicts in any shape ``ocml.encoder.adapters`` reads;
``options`` are the record's conversation options (``tools``, ``reasoning_effort``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

Messages = list[Any]
Side = Union[str, Messages]  # a standard (string) or conversational (messages) prompt / completion


@dataclass(frozen=True)
class TextExample:
    """Plain text (continued pretraining): every token trained, then the end-of-text token."""

    text: str


@dataclass(frozen=True)
class PromptCompletion:
    """TRL's prompt/completion: both strings (standard) or both message lists (conversational)."""

    prompt: Side
    completion: Side
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def conversational(self) -> bool:
        return not isinstance(self.prompt, str)


@dataclass(frozen=True)
class PreferencePair:
    """A DPO / ORPO pair: one prompt, two completions (``implicit``: the prompt was extracted
    from whole ``chosen`` / ``rejected`` conversations, as TRL's ``maybe_extract_prompt``)."""

    prompt: Side
    chosen: Side
    rejected: Side
    options: dict[str, Any] = field(default_factory=dict)
    implicit: bool = False

    @property
    def conversational(self) -> bool:
        return not isinstance(self.chosen, str)


@dataclass(frozen=True)
class KtoExample:
    """KTO's unpaired form: a prompt, one completion and whether it is desirable."""

    prompt: Side
    completion: Side
    label: bool
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def conversational(self) -> bool:
        return not isinstance(self.completion, str)


Example = Union[TextExample, PromptCompletion, PreferencePair, KtoExample]
EXAMPLE_TYPES = (TextExample, PromptCompletion, PreferencePair, KtoExample)
