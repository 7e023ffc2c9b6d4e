"""Format registry: one module per format; ``get_format(name)`` gives its class."""

from __future__ import annotations

from vocab import canonical_format

from ..errors import UnknownNameError
from .base import Format


def format_class(name: str) -> type[Format]:
    key = canonical_format(name)
    if key == "harmony":
        from .harmony import HarmonyFormat

        return HarmonyFormat
    if key == "openchatml-2.2":
        from .openchatml import OpenChatML22

        return OpenChatML22
    if key == "openchatml-2.0":
        from .openchatml import OpenChatML20

        return OpenChatML20
    raise UnknownNameError(
        f"format {key!r} has control-token tables but no renderer yet",
        code="E-FORMAT-UNAVAILABLE",
        field="format",
        hint="renderable formats: harmony, openchatml-2.2, openchatml-2.0 (1.x transcripts via 2.x)",
    )


RENDERABLE = ("openchatml-2.2", "openchatml-2.0", "harmony")
