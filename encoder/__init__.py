"""ocml encoder: conversations -> token ids + loss masks, and ids -> messages.

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation, mode="train")   # r.ids, r.mask, r.message_index

The map of the source (every folder and top-level module with its job) is ``docs/architecture.md``;
``tests/house/test_layout_map.py`` checks that it names every folder and module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocml.vocab import DEFAULT_FORMAT

from .adapters import to_conversation
from .batch import Batch
from .facade import Encoder
from .errors import OcmlError
from .interchange import to_interchange
from .masks import MaskName, MaskPolicy
from .messages import Conversation, CotName, CotPolicy, Message, Mode, ModeName, Options
from .openai_message import ChatChoice
from .pack import Packed, Packer, PackReport, pack
from .parse import ParseResult
from .render import RenderResult

__all__ = [
    "DEFAULT_FORMAT", "Batch", "ChatChoice", "Conversation", "CotName", "CotPolicy", "Encoder", "MaskName", "MaskPolicy",
    "Message", "Mode", "ModeName", "OcmlError", "Options", "PackReport", "Packed", "Packer", "ParseResult",
    "RenderResult", "pack", "to_conversation", "to_interchange",
]

if not TYPE_CHECKING:
    # ``ocml.encoder.stops.stop_ids(...)`` works without importing the submodule first (any submodule:
    # derived from the package, not a list to keep in step).  Hidden from type checkers: there an
    # unknown name is an error, not ``Any`` (``import ocml.encoder.stops`` for the type-checked spelling).
    def __getattr__(name: str) -> object:
        import importlib
        import importlib.util

        if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
