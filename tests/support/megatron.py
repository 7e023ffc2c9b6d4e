"""megatron-core, imported the way the tests need it (skips only when megatron-core or torch is missing)."""

from __future__ import annotations

import pytest


def mcore():
    """megatron-core's indexed_dataset module, or skip (it needs torch; optional test extra)."""
    try:
        from megatron.core.datasets import indexed_dataset
    except Exception as exc:  # ImportError, or torch failing to load
        pytest.skip(f"megatron-core does not import here: {exc}")
    return indexed_dataset
