"""tiktoken's regex (fancy-regex / Rust regex syntax) translated for Oniguruma, the engine of
HF ``tokenizers``' ``Split`` pre-tokenizer: possessive intervals ``x{1,3}+`` become atomic
groups (Oniguruma reads ``{1,3}+`` as "repeat the interval"), and ``$``/``^`` become
``\\z``/``\\A`` (Oniguruma's ``$`` is end-of-*line*).  Used by ``hf_convert``."""

from __future__ import annotations

import re

from .errors import VocabError

__all__ = ["onig_pattern"]

_INTERVAL = re.compile(r"\{\d+(?:,\d*)?\}")


def _atom_start(pattern: str, end: int, atoms: list[tuple[int, int]]) -> int:
    """Start index of the atom ending at ``end`` (exclusive), from the scan."""
    for start, stop in reversed(atoms):
        if stop == end:
            return start
    raise VocabError(f"cannot translate pat_str: no atom before index {end}: {pattern!r}")


def onig_pattern(pat_str: str) -> str:
    """Translate a tiktoken (fancy-regex) pattern to Oniguruma, HF's engine.

    Only the constructs whose meaning differs are rewritten:

    * ``X{n,m}+`` (possessive interval) -> ``(?>X{n,m})``; Oniguruma would
      read it as ``(?:X{n,m})+``.
    * ``$`` -> ``\\z`` and ``^`` -> ``\\A`` outside classes: without the
      ``m`` flag Rust's anchors mean start/end of *text*; Oniguruma's mean
      start/end of *line*.

    ``?+``, ``*+``, ``++``, ``\\p{..}``, ``(?i:..)`` and ``\\s`` mean the same in
    both engines and are left alone.
    """
    out: list[str] = []
    # (start, stop) of each complete atom emitted into ``out`` (in out-index
    # space), so a quantifier can find what it applies to.
    atoms: list[tuple[int, int]] = []
    group_starts: list[int] = []
    pos_out = 0
    i = 0
    n = len(pat_str)

    def emit(text: str) -> int:
        nonlocal pos_out
        out.append(text)
        start = pos_out
        pos_out += len(text)
        return start

    while i < n:
        ch = pat_str[i]
        if ch == "\\":
            # Escape: \p{..} / \P{..} / \x{..} take a braced argument.
            j = i + 2
            if j <= n and pat_str[i + 1 : i + 2] in ("p", "P", "x") and pat_str[j : j + 1] == "{":
                close = pat_str.find("}", j)
                if close < 0:
                    raise VocabError(f"cannot translate pat_str: unterminated escape: {pat_str!r}")
                j = close + 1
            start = emit(pat_str[i:j])
            atoms.append((start, pos_out))
            i = j
        elif ch == "[":
            # Character class, possibly nested; copied verbatim ($ and ^ are
            # literal/negation inside).
            j = i + 1
            depth = 1
            if pat_str[j : j + 1] == "^":
                j += 1
            if pat_str[j : j + 1] == "]":
                j += 1
            while j < n and depth:
                c = pat_str[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    depth += 1
                elif c == "]":
                    depth -= 1
                j += 1
            if depth:
                raise VocabError(f"cannot translate pat_str: unterminated class: {pat_str!r}")
            start = emit(pat_str[i:j])
            atoms.append((start, pos_out))
            i = j
        elif ch == "(":
            group_starts.append(emit("("))
            i += 1
        elif ch == ")":
            emit(")")
            if not group_starts:
                raise VocabError(f"cannot translate pat_str: unbalanced ')': {pat_str!r}")
            atoms.append((group_starts.pop(), pos_out))
            i += 1
        elif ch == "$":
            emit("\\z")
            i += 1
        elif ch == "^":
            emit("\\A")
            i += 1
        elif ch == "{":
            m = _INTERVAL.match(pat_str, i)
            if m is None:  # a literal brace
                start = emit(ch)
                atoms.append((start, pos_out))
                i += 1
                continue
            interval = m.group(0)
            after = m.end()
            if pat_str[after : after + 1] == "+":
                # Possessive interval: wrap "atom{n,m}" into an atomic group.
                text = "".join(out)
                a = _atom_start(text, pos_out, atoms)
                body = text[a:] + interval
                out[:] = [text[:a]]
                pos_out = a
                start = emit("(?>" + body + ")")
                # Drop atoms inside the rewritten span; the group is one atom.
                atoms[:] = [t for t in atoms if t[1] <= a]
                atoms.append((start, pos_out))
                i = after + 1
            else:
                emit(interval)
                i = after
        else:
            start = emit(ch)
            if ch not in "|?*+":
                atoms.append((start, pos_out))
            i += 1
    if group_starts:
        raise VocabError(f"cannot translate pat_str: unbalanced '(': {pat_str!r}")
    return "".join(out)
