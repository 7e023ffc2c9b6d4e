"""Shared reference data (``../shared`` beside the repository, as CI lays it out).

Tests that need a file call ``shared("refdata/...")``: a missing file fails the test with the
path it expected, it never skips (CI must not pass by not running them)."""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared(relative: str) -> Path:
    path = SHARED / relative
    assert path.exists(), f"required shared data is missing: {path} (../shared beside the repository)"
    return path
