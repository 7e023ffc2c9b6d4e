"""What a format declares about reading OpenAI / HF chat data (the adapters apply it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ChatStyle:
    """How a format reads OpenAI / HF chat dicts (data a format declares; the adapter applies it)."""

    #: channel of an assistant's ``content`` (its answer)
    answer_channel: str = "final"
    #: where assistant ``content`` next to ``tool_calls`` goes when there is no ``thinking``:
    #: ``"preamble"`` = ``commentary`` with ``intent=preamble`` (OpenChatML 2.2 §9);
    #: ``"analysis"`` = the official gpt-oss template's choice
    content_with_calls: Literal["preamble", "analysis"] = "preamble"


DEFAULT_STYLE = ChatStyle()

Shape = Literal["auto", "chat", "native"]
SHAPES: tuple[str, ...] = ("auto", "chat", "native")
