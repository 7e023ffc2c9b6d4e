"""ids -> messages, vectorised where it matters.

Control ids are found with one numpy gather over a per-id kind table; the ordinary
runs between them are decoded in one ``decode_bytes`` call each.  Controls spelled
as text (fallback mode) are then found in those bytes by ``TextSplitter`` (escape
aware, literal-block aware) and everything goes through the shared ``FrameMachine``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .frames import FrameMachine
from .messages import Message

if TYPE_CHECKING:
    from .encoder import Encoder

LITERAL, ENDLITERAL = "<|literal|>", "<|endliteral|>"


@dataclass
class ParseResult:
    messages: list[Message]
    ends: list[str]
    errors: list = field(default_factory=list)


class TextSplitter:
    """Finds controls spelled as text inside decoded bytes; ``<<|ctl|>`` is the escape for ``<|ctl|>``."""

    def __init__(self, text_controls: Sequence[str]) -> None:
        self.controls = tuple(text_controls)
        alts = sorted(self.controls, key=len, reverse=True)
        if alts:
            body = b"|".join(re.escape(c.encode()) for c in alts)
            # Leftmost match; "<<|x|>" starts one byte before "<|x|>" so the escape wins.
            self.normal: re.Pattern[bytes] | None = re.compile(b"(<?)(" + body + b")")
        else:
            self.normal = None
        self.literal_end: re.Pattern[bytes] | None = (
            re.compile(re.escape(ENDLITERAL.encode())) if ENDLITERAL in self.controls else None
        )

    def split(self, data: bytes, literal: bool) -> tuple[list[tuple[bool, bytes]], bool]:
        """-> [(is_control, bytes)], literal state after ``data``."""
        out: list[tuple[bool, bytes]] = []
        pos = 0
        n = len(data)
        while pos < n:
            pat = self.literal_end if literal else self.normal
            m = pat.search(data, pos) if pat is not None else None
            if m is None:
                out.append((False, data[pos:]))
                break
            if m.start() > pos:
                out.append((False, data[pos:m.start()]))
            if literal:
                out.append((True, m.group(0)))
                literal = False
            elif m.group(1):  # escape: the control's text, one '<' removed
                out.append((False, m.group(2)))
            else:
                name = m.group(2)
                out.append((True, name))
                if name == LITERAL.encode():
                    literal = True
            pos = m.end()
        return out, literal

    def feed(self, data: bytes, fm: FrameMachine, position: int, literal: bool) -> bool:
        """Split ``data`` and hand the pieces to ``fm``; returns the literal state after it."""
        pieces, literal = self.split(data, literal)
        for is_ctl, chunk in pieces:
            if is_ctl:
                name = chunk.decode()
                if name not in (LITERAL, ENDLITERAL):  # literal markers only switch the splitter's mode
                    fm.control(name, position)
            else:
                fm.text(chunk.decode("utf-8", "replace"), position)
        return literal


class IdParser:
    """Per-(encoder) tables for parsing ids; built once and cached on the encoder."""

    def __init__(self, enc: Encoder) -> None:
        tok = enc.tokenizer
        self.enc = enc
        self.tok = tok
        table = enc.format.table
        self.names: list[str] = [""]
        kind = np.zeros(tok.n_vocab + 1, dtype=np.int16)  # last slot: any invalid id
        known = set(table.controls) | set(table.markers)
        for s, i in tok.specials.items():
            if 0 <= i < tok.n_vocab:
                self.names.append(s)
                kind[i] = len(self.names) - 1
        self.known = known
        self.kind = kind
        self.invalid_kind = len(self.names)
        self.names.append("<invalid>")
        kind[tok.n_vocab] = self.invalid_kind
        self.splitter = TextSplitter(enc.format.text_controls)
        self.markers = frozenset(m for m in table.markers)

    def feed_atoms(self, ids: np.ndarray, fm: FrameMachine) -> None:
        n = ids.shape[0]
        safe = np.where((ids >= 0) & (ids < self.tok.n_vocab), ids, self.tok.n_vocab)
        kinds = self.kind[safe]
        cuts = np.flatnonzero(kinds)
        decode = self.tok.decode_bytes
        feed_text = self.splitter.feed
        names = self.names
        literal = False
        prev = 0
        ids_list = ids.tolist()
        for c in [*cuts.tolist(), n]:
            if c > prev:
                literal = feed_text(decode(ids_list[prev:c]), fm, prev, literal)
            if c == n:
                break
            name = names[kinds[c]]
            prev = c + 1
            if literal:
                if name == ENDLITERAL:
                    literal = False
                elif name == "<invalid>":
                    fm.error("E-VOCAB-ID", f"id {ids_list[c]} is not in the vocabulary", c)
                else:
                    fm.text(name, c)  # literal blocks are opaque: a control id inside is its text
                continue
            if name == LITERAL:
                literal = True
            elif name == "<invalid>":
                fm.error("E-VOCAB-ID", f"id {ids_list[c]} is not in the vocabulary", c)
            elif name in self.known:
                fm.control(name, c)
            else:
                fm.special(name, c)
        fm.finish(n)


def parser_for(enc: Encoder) -> IdParser:
    p = getattr(enc, "_id_parser", None)
    if p is None:
        p = IdParser(enc)
        enc._id_parser = p  # type: ignore[attr-defined]
    return p


def parse_ids(enc: Encoder, ids: Sequence[int] | np.ndarray, *, strict: bool = False,
              role: str | None = None, detailed: bool = False) -> list[Message]:
    p = parser_for(enc)
    arr = np.asarray(ids, dtype=np.int64)
    fm = FrameMachine(harmony=enc.format_name == "harmony", strict=strict, role=role, markers=p.markers)
    p.feed_atoms(arr, fm)
    if detailed:
        return ParseResult(fm.messages, fm.ends, fm.errors)  # type: ignore[return-value]
    return fm.messages
