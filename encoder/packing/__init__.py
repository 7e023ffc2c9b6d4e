"""Sequence packing (the implementation behind ``ocml.encoder.pack``).

``packed``: result types; ``docs``: inputs -> one ragged document set; ``overlong``:
drop / truncate / split; ``bfd``: best-fit-decreasing over lengths; ``rows``: segment
table -> dense rows; ``packer``: the streaming ``Packer``.
"""

from __future__ import annotations

from .packed import IGNORE, PAD_DOC, Overlong, OverlongRecord, Packed, PackReport, concat_packed
from .packer import DEFAULT_WINDOW, Packer

__all__ = ["DEFAULT_WINDOW", "IGNORE", "Overlong", "OverlongRecord", "PAD_DOC", "PackReport", "Packed", "Packer",
           "concat_packed"]
