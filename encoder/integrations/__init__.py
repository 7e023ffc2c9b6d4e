"""Plug ocml into the data engines people already run (nothing here schedules work itself).

- ``OcmlRender`` (``render_stage``): records -> ``input_ids`` / ``labels`` columns, Arrow in,
  Arrow out; the batched function for ``datasets.Dataset.map(batched=True, num_proc=N)`` and
  the callable class for Ray Data ``map_batches(..., batch_format="pyarrow")``.
- ``OcmlPack`` (``pack_stage``): rendered rows -> packed ``seq_len`` rows (per batch / block),
  and ``pack_stream`` for one ordered, windowed pass (global packing).
- ``hf_datasets`` / ``ray_data``: the calls wired up for each engine.
- ``megatron_lm``: ``MaskedGPTDataset``, Megatron-LM's ``GPTDataset`` over ``ocml pack --output
  megatron`` with ocml's loss mask (imports megatron-core and torch).

``datasets`` and ``ray`` are optional (``ocml[hf]``, ``ocml[ray]``); only the engine modules
import them.
"""

from __future__ import annotations

from .pack_stage import OcmlPack, pack_stream
from .render_stage import OcmlRender

__all__ = ["OcmlPack", "OcmlRender", "pack_stream"]
