"""ocml encoder: conversations -> token ids + loss masks, and ids -> messages.

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation, mode="train")   # r.ids, r.mask, r.message_index
"""

from __future__ import annotations

# First: decides, for every submodule imported below, between its compiled build and its source.
from . import compiled as _compiled

_compiled.install()

from .adapters import to_conversation
from .encoder import Batch, Encoder
from .errors import OcmlError
from .interchange import to_interchange
from .masks import MaskPolicy
from .messages import Conversation, CotPolicy, Message, Mode, Options
from .openai_message import ChatChoice
from .pack import Packed, Packer, PackReport, pack
from .render import RenderResult

#: whether the hot modules run compiled (``ocml.encoder.compiled``; ``OCML_PURE_PYTHON=1`` runs the source)
COMPILED: bool = bool(_compiled.modules())

__all__ = [
    "Batch", "ChatChoice", "Conversation", "CotPolicy", "Encoder", "MaskPolicy", "Message", "Mode", "OcmlError", "Options",
    "PackReport", "Packed", "Packer", "RenderResult", "pack", "to_conversation", "to_interchange",
]


# ``ocml.encoder.stops.stop_ids(...)`` works without importing the submodule first
# (any submodule: derived from the package, not a list to keep in step).
def __getattr__(name: str):  # type: ignore[no-untyped-def]
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
