"""Where the tests find things, whatever folder a test module sits in and however ocml is installed.

``ROOT`` is the repository checkout the tests belong to (the parent of ``tests/``), found from this
file, never from the installed package: tests that read the source tree (README, docs, scripts,
``encoder/`` folders) read it here, tests of the package import ``ocml`` (editable or not).

Shared reference data (``../shared`` beside the repository, as CI lays it out): tests that need a
file call ``shared("refdata/...")``; a missing file fails the test with the path it expected, it
never skips (CI must not pass by not running them)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
SHARED = ROOT.parent / "shared"


def shared(relative: str) -> Path:
    path = SHARED / relative
    assert path.exists(), f"required shared data is missing: {path} (../shared beside the repository)"
    return path
