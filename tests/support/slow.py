"""``tests/SLOW``: the tests marked ``slow`` (conftest.py marks them at collection), as measured data."""

from __future__ import annotations

from support.paths import TESTS

SLOW = TESTS / "SLOW"


def slow_tests(text: str | None = None) -> set[str]:
    """``module.py::test`` or ``module.py::test[id]`` per line (``#`` starts a comment)."""
    text = SLOW.read_text("utf-8") if text is None else text
    return {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}


def listed(slow: set[str], module: str, function: str, name: str) -> bool:
    """Is the test ``name`` (``function`` with its parameter id) of ``module`` in ``slow``?"""
    return f"{module}::{function}" in slow or f"{module}::{name}" in slow
