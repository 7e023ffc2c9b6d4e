"""ocml encoder: conversations -> token ids + loss masks, and ids -> messages.

    import encoder
    enc = encoder.Encoder("harmony")
    r = enc.render(conversation, mode="train")   # r.ids, r.mask, r.message_index
"""

from __future__ import annotations

from .adapters import to_conversation
from .encoder import Batch, Encoder
from .errors import OcmlError
from .interchange import to_interchange
from .masks import MaskPolicy
from .messages import Conversation, CotPolicy, Message, Mode, Options
from .openai_message import ChatChoice
from .pack import Packed, Packer, PackReport, pack
from .render import RenderResult

__all__ = [
    "Batch", "ChatChoice", "Conversation", "CotPolicy", "Encoder", "MaskPolicy", "Message", "Mode", "OcmlError", "Options",
    "PackReport", "Packed", "Packer", "RenderResult", "pack", "to_conversation", "to_interchange",
]

# ``import encoder; encoder.stops.stop_ids(...)`` works without importing the submodule first.
_SUBMODULES = frozenset({"adapters", "cot", "errors", "events", "formats", "frames", "headers", "interchange", "masks",
                         "messages", "pack", "parse", "pieces", "render", "stops", "stream", "textenc", "transcript",
                         "cli", "pipeline", "integrations", "template"})


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
