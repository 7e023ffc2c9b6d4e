"""``did you mean ...?`` for a misspelt name (keys, options, roles, arguments)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


SUGGEST_CUTOFF = 0.75  # how close a word must be to be taken for a misspelling (difflib's ratio)


def suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=SUGGEST_CUTOFF)
    return f"did you mean {close[0]!r}? " if close else ""
