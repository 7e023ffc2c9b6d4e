"""Tokens as text for people: trained vs untrained, control tokens and document boundaries.

Two renderings of the same token stream (``ocml inspect``, ``ocml render --color``):

- **ANSI** (a terminal): every token in its own background shade (two shades alternate,
  so token boundaries show), trained tokens on green, untrained on grey, control tokens
  bold magenta, a newline shown as ``↵`` before the line break; each document starts on
  a line of its own with a yellow header.
- **Plain** (stdout is not a terminal, or ``--color=never``): text with markers, all of
  the form ``[[...]]``:

  ``[[trained]]`` ... ``[[/trained]]``  around every run of trained tokens;
  ``[[<|start|>]]``                    a control token (a registered special id; the same
                                       characters typed in text appear without brackets);
  ``[[<|end|> x7]]``                   the same control token 7 times in a row (padding);
  ``[[doc 1 · tokens 12-40 · ...]]``    a document boundary, on a line of its own;
  ``[[row 3 · ...]]``                  a packed row, on a line of its own.

  Text between markers is the tokens' bytes decoded as UTF-8 (a character split over
  tokens is joined; invalid bytes become U+FFFD).  Token boundaries inside text are not
  marked in this form (``ocml render`` without ``--color`` lists tokens one per line).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

RESET = "\x1b[0m"
TRAINED_BG = ("\x1b[48;5;22m", "\x1b[48;5;28m")
UNTRAINED_BG = ("\x1b[48;5;236m", "\x1b[48;5;239m")
TRAINED_FG = "\x1b[38;5;231m"
UNTRAINED_FG = "\x1b[38;5;250m"
CONTROL_FG = "\x1b[1;38;5;213m"
HEADER = "\x1b[1;38;5;220m"
NEWLINE_MARK = "↵"


class Style(str, Enum):
    ANSI = "ansi"
    PLAIN = "plain"


class When(str, Enum):
    """``--color`` values: ``auto`` = ANSI on a terminal, plain markers otherwise."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"

    def style(self, isatty: bool) -> Style:
        if self is When.ALWAYS or (self is When.AUTO and isatty):
            return Style.ANSI
        return Style.PLAIN


@dataclass(frozen=True)
class Span:
    """One document (or padding) of a token stream: tokens ``start:start+length``."""

    start: int
    length: int
    label: str  # what the boundary line says after "doc N" / "padding"
    padding: bool = False
    index: int | None = None  # the N of "doc N" (default: counting the spans shown)


def header(text: str, style: Style) -> str:
    return f"{HEADER}── {text} ──{RESET}" if style is Style.ANSI else f"[[{text}]]"


def legend(style: Style) -> str:
    if style is Style.PLAIN:
        return ""
    return (f"{TRAINED_BG[0]}{TRAINED_FG} trained {RESET} {UNTRAINED_BG[0]}{UNTRAINED_FG} untrained {RESET} "
            f"{UNTRAINED_BG[0]}{CONTROL_FG}<|control|>{RESET}")


class TokenView:
    """Renders ids + trained flags with one tokenizer (control ids = its registered specials)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        self.specials: dict[int, str] = dict(tokenizer.special_ids)
        self.table = tokenizer.token_bytes_table

    def _bytes(self, i: int) -> bytes:
        b = self.table[i] if 0 <= i < len(self.table) else None
        return b if b is not None else f"<id {i}?>".encode()

    def document(self, ids: np.ndarray, trained: np.ndarray, style: Style) -> str:
        """One document's tokens (no boundary line)."""
        return self._ansi(ids, trained) if style is Style.ANSI else self._plain(ids, trained)

    def stream(self, ids: np.ndarray, trained: np.ndarray, spans: list[Span], style: Style) -> str:
        """Several documents: each preceded by its boundary line (``doc K · label``)."""
        out: list[str] = []
        k = 0
        for s in spans:
            a, b = s.start, s.start + s.length
            if s.padding:
                out.append(header(f"padding · tokens {a}-{b} · {s.length} tokens", style))
                continue
            out.append(header(f"doc {k if s.index is None else s.index} · tokens {a}-{b} · {s.length} tokens, "
                              f"{int(np.count_nonzero(trained[a:b]))} trained" + (f" · {s.label}" if s.label else ""),
                              style))
            out.append(self.document(ids[a:b], trained[a:b], style))
            k += 1
        return "\n".join(out)

    # -- plain ---------------------------------------------------------------------
    def _runs(self, ids: list[int], trained: list[bool]) -> Iterator[tuple[bool, int | None, int, int]]:
        """(trained, control id or None, start, end) runs: text tokens of one flag, or one
        control id repeated."""
        n = len(ids)
        a = 0
        while a < n:
            ctl = ids[a] if ids[a] in self.specials else None
            b = a + 1
            while b < n and trained[b] == trained[a] and (
                    (ctl is None and ids[b] not in self.specials) or (ctl is not None and ids[b] == ctl)):
                b += 1
            yield trained[a], ctl, a, b
            a = b

    def _plain(self, ids_a: np.ndarray, trained_a: np.ndarray) -> str:
        ids, trained = ids_a.tolist(), [bool(x) for x in trained_a.tolist()]
        out: list[str] = []
        on = False
        for flag, ctl, a, b in self._runs(ids, trained):
            if flag != on:
                out.append("[[trained]]" if flag else "[[/trained]]")
                on = flag
            if ctl is not None:
                name = self.specials[ctl]
                out.append(f"[[{name}]]" if b - a == 1 else f"[[{name} x{b - a}]]")
            else:
                out.append(b"".join(self._bytes(i) for i in ids[a:b]).decode("utf-8", "replace"))
        if on:
            out.append("[[/trained]]")
        return "".join(out)

    # -- ANSI ----------------------------------------------------------------------
    def _units(self, ids: list[int]) -> Iterator[tuple[int, int, str]]:
        """(start, end, text): one token, or the few tokens that together make a character."""
        n = len(ids)
        a = 0
        while a < n:
            if ids[a] in self.specials:
                yield a, a + 1, self.specials[ids[a]]
                a += 1
                continue
            data = self._bytes(ids[a])
            b = a + 1
            while True:
                try:
                    text = data.decode("utf-8")
                    break
                except UnicodeDecodeError as exc:
                    # An incomplete character at the end: take the next text token (at most 3 more).
                    if exc.end == len(data) and b < n and b - a < 4 and ids[b] not in self.specials:
                        data += self._bytes(ids[b])
                        b += 1
                        continue
                    text = data.decode("utf-8", "replace")
                    break
            yield a, b, text
            a = b

    def _ansi(self, ids_a: np.ndarray, trained_a: np.ndarray) -> str:
        ids, trained = ids_a.tolist(), trained_a.tolist()
        out: list[str] = []
        for k, (a, b, text) in enumerate(self._units(ids)):
            bg = (TRAINED_BG if trained[a] else UNTRAINED_BG)[k % 2]
            fg = CONTROL_FG if ids[a] in self.specials else (TRAINED_FG if trained[a] else UNTRAINED_FG)
            parts = text.split("\n")
            shown = f"{NEWLINE_MARK}{RESET}\n{bg}{fg}".join(parts)
            out.append(f"{bg}{fg}{shown}{RESET}")
        return "".join(out)
