"""Plain-text records (``{"text": ...}``) for continued pretraining, and the end-of-text id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocml.vocab import Tokenizer

from ..errors import InputError
from .common import text_field
from .examples import TextExample
from .shapes import Fields

SHAPE = "text"
END_OF_TEXT = "<|endoftext|>"


def read_text(record: Mapping[str, Any], fields: Fields) -> TextExample:
    text = text_field(record, fields.text, SHAPE)
    if not text:
        raise InputError("text record is empty", code="E-SHAPE-EMPTY", field=fields.text,
                         hint="drop empty documents: an end-of-text token alone teaches nothing")
    return TextExample(text)


def end_of_text_id(tokenizer: Tokenizer) -> int:
    """The id appended after plain text / a string completion (TRL appends ``eos_token``):
    an HF tokenizer's ``eos_token``, else ``<|endoftext|>`` where the vocabulary has it."""
    roles = getattr(tokenizer, "_roles", None) or {}
    for name in (roles.get("eos_token"), END_OF_TEXT):
        if name is not None:
            cid = tokenizer.control_id(name)
            if cid is not None:
                return cid
    raise InputError(f"{tokenizer.name} has no end-of-text token (no eos_token, no {END_OF_TEXT})",
                     code="E-SHAPE-EOT", field="tokenizer",
                     hint="use a tokenizer with an eos token; text and string completions end with it")
