"""ocml: chat formats -> token ids + loss masks, packed training data, HF templates, and back.

The documented entry point::

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation)      # r.ids, r.mask, r.labels
    tok = ocml.load("o200k_base")

``ocml`` is the one import name: the repository's ``encoder/`` and ``vocab/`` folders are
installed as ``ocml.encoder`` and ``ocml.vocab`` (setup.py maps them).
"""

from __future__ import annotations

from typing import Any

from . import encoder, vocab
from .encoder import *  # noqa: F401,F403
from .encoder import __all__ as _encoder_all
from .vocab import Tokenizer, from_hf, load


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ocml")
    except Exception:  # metadata missing (a broken installation)
        return "0+unknown"


__version__ = _version()

__all__ = [*_encoder_all, "Tokenizer", "__version__", "encoder", "from_hf", "load", "vocab"]


def __getattr__(name: str) -> Any:
    # ocml.stops, ocml.stream, ... : the encoder's submodules under the one import name
    return getattr(encoder, name)
