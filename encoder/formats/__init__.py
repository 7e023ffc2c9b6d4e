"""Format registry: one module per format; ``format_class(name)`` gives its class."""

from __future__ import annotations

from importlib import import_module

from ocml.vocab import canonical_format

from ..errors import UnknownNameError
from .base import Format

# name -> (module, class): imported on first use
_CLASSES: dict[str, tuple[str, str]] = {
    "openchatml-2.2": ("openchatml", "OpenChatML22"),
    "openchatml-2.0": ("openchatml", "OpenChatML20"),
    "harmony": ("harmony", "HarmonyFormat"),
    "chatml": ("chatml", "ChatML"),
    "apertus": ("apertus", "Apertus"),
    "llama3": ("llama3", "Llama3"),
}

RENDERABLE = tuple(_CLASSES)


def format_class(name: str) -> type[Format]:
    key = canonical_format(name)
    entry = _CLASSES.get(key)
    if entry is None:
        raise UnknownNameError(
            f"format {key!r} has control-token tables but no renderer yet",
            code="E-FORMAT-UNAVAILABLE",
            field="format",
            hint="renderable formats: " + ", ".join(RENDERABLE),
        )
    module, cls = entry
    return getattr(import_module(f"{__name__}.{module}"), cls)
