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
from .render import RenderResult

__all__ = [
    "Batch", "Conversation", "CotPolicy", "Encoder", "MaskPolicy", "Message", "Mode", "OcmlError", "Options",
    "RenderResult", "to_conversation", "to_interchange",
]

