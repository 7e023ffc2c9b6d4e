"""TRL's prompt/completion records, standard (strings) and conversational (message lists)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError, article
from .common import missing, options, present, same_kind, side
from .examples import PromptCompletion
from .shapes import Fields

SHAPE = "prompt-completion"


def read_prompt_completion(record: Mapping[str, Any], fields: Fields) -> PromptCompletion:
    p, c = fields.prompt, fields.completion
    if not present(record, p):
        raise missing(SHAPE, p, f"a prompt/completion record needs {p!r} next to {c!r}")
    if not present(record, c):
        raise missing(SHAPE, c, f"a prompt/completion record needs {c!r} (what is trained); "
                                "a record with only a prompt cannot be trained on")
    prompt, completion = side(record, p, SHAPE), side(record, c, SHAPE)
    same_kind(SHAPE, **{p: prompt, c: completion})
    if not isinstance(completion, str):
        check_completion(completion, c)
    return PromptCompletion(prompt, completion, options(record))


def check_completion(messages: list[Any], key: str) -> None:
    """A conversational completion is what the model generates after the generation prompt:
    it starts with an assistant message."""
    role = messages[0].get("role")
    if role != "assistant":
        raise InputError(f"{key!r} starts with {article(repr(role))} message, not the assistant's", code="E-SHAPE-COMPLETION",
                         field=f"{key}[0].role", hint="the completion is what the model generates after the prompt: "
                                                      "move earlier turns into the prompt")
