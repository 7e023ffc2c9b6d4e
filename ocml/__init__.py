"""ocml: chat formats -> token ids + loss masks, packed training data, HF templates, and back.

The documented entry point::

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation)      # r.ids, r.mask, r.labels
    tok = ocml.load("o200k_base")

``ocml`` is the one import name: the repository's ``encoder/`` and ``vocab/`` folders are
installed as ``ocml.encoder`` and ``ocml.vocab`` (setup.py maps them).  The names below are the
public face, listed one by one so a type checker sees each (``py.typed`` ships with the package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import encoder, vocab
from .encoder import (
    DEFAULT_FORMAT,
    Batch,
    ChatChoice,
    Conversation,
    CotName,
    CotPolicy,
    Encoder,
    MaskName,
    MaskPolicy,
    Message,
    Mode,
    ModeName,
    OcmlError,
    Options,
    Packed,
    Packer,
    PackReport,
    ParseResult,
    RenderResult,
    pack,
    to_conversation,
    to_interchange,
)
from .vocab import Tokenizer, from_hf, load


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ocml")
    except Exception:  # metadata missing (a broken installation)
        return "0+unknown"


__version__ = _version()

__all__ = [
    "DEFAULT_FORMAT", "Batch", "ChatChoice", "Conversation", "CotName", "CotPolicy", "Encoder", "MaskName",
    "MaskPolicy", "Message", "Mode", "ModeName", "OcmlError", "Options", "PackReport", "Packed", "Packer",
    "ParseResult", "RenderResult", "Tokenizer", "__version__", "encoder", "from_hf", "load", "pack", "stops",
    "to_conversation", "to_interchange", "vocab",
]

if TYPE_CHECKING:
    # ``ocml.stops`` (the documented serving helpers) without importing it first; type checkers see
    # the module, the runtime loads it on first use (``__getattr__`` below)
    from .encoder import stops as stops
else:
    def __getattr__(name: str) -> object:
        # ocml.stops, ocml.stream, ... : the encoder's submodules under the one import name.  Hidden
        # from type checkers, so a misspelt ``ocml.Encodr`` is an error there, not ``Any``.
        return getattr(encoder, name)
