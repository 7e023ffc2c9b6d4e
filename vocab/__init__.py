"""ocml vocabularies: control-token tables and tokenizer backends.

    from ocml import vocab
    tok = vocab.load("o200k_harmony")          # Harmony tokens at the gpt-oss ids
    tok = vocab.load("cl100k_base", register="openchatml-2.2")
    tok = vocab.from_hf("path/to/tokenizer_dir", register="openchatml-2.2")
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .errors import OcmlError, UnknownNameError, VocabError, expect
from .discovery import catalog
from .hf_backend import HFTokenizer, from_hf
from .tables import DEFAULT_FORMAT, FORMAT_NAMES, ControlTable, canonical_format, canonical_formats, control_table
from .tiktoken_backend import TiktokenTokenizer, get_tiktoken
from .tokenizer import Tokenizer

# Named encodings that are a base vocabulary plus a format's fixed tokens.
COMPOSITES: dict[str, tuple[str, tuple[str, ...]]] = {
    enc: (base, (d.name,)) for d in catalog().formats for enc, base in d.encodings.items()}


def encoding_names() -> list[str]:
    from .base import encodings_table

    return [*COMPOSITES, *encodings_table()]


def load(name: str, register: str | Sequence[str] | None = None) -> TiktokenTokenizer:
    """Load a tiktoken vocabulary offline (cached per process).

    ``name``: ``o200k_harmony``, ``o200k_base``, ``cl100k_base`` or a path to a
    ``.tiktoken`` file.  ``register``: a format name (or several) whose control
    tokens are added (at the format's fixed ids where it has them, else appended).
    """
    expect(name, (str, os.PathLike), "name", "an encoding name or a path to a .tiktoken file")
    formats = canonical_formats(register)
    base, extra = COMPOSITES.get(name, (name, ()))
    formats = tuple(dict.fromkeys(extra + formats))
    return get_tiktoken(base, formats, name if name in COMPOSITES and formats == extra else None)


__all__ = [
    "COMPOSITES", "DEFAULT_FORMAT", "FORMAT_NAMES", "ControlTable", "HFTokenizer", "OcmlError", "TiktokenTokenizer",
    "Tokenizer", "UnknownNameError", "VocabError", "canonical_format", "canonical_formats", "control_table",
    "encoding_names", "from_hf", "load",
]
