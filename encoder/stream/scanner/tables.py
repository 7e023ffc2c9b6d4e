"""Scanner tables: everything precomputed for one (tokenizer, format profile)."""

from __future__ import annotations

import time
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from .automaton import _CONTROL, _INVALID, _ORDINARY, _P_CONTROL, _P_ESCAPE, _P_STOP, _SPECIAL, _TokenArrays, _build_automaton, _root_tables


class _Mode:
    """The automaton of one scanner mode (normal or literal).

    ``pats[p] = (kind, length, value)``; value is the control name
    (``_P_CONTROL``), the unescaped bytes (``_P_ESCAPE``) or the stop string
    (``_P_STOP``).  ``out[s]`` is the pattern reported in state ``s`` (the
    longest one ending there) or -1; ``depth[s]`` the holdback in state ``s``.
    """

    __slots__ = ("delta", "out", "depth", "pats", "fast", "fast_text", "n_states", "max_pattern", "_lean_mask")

    def __init__(
        self,
        patterns: list[tuple[bytes, int, object]],
        tok: "_TokenArrays",
        token_text: list[Optional[str]],
    ) -> None:
        delta_np, out, depth = _build_automaton(patterns)
        self.n_states: int = len(depth)
        self.delta: list[list[int]] = delta_np.tolist()
        self.out: list[int] = out
        self.depth: list[int] = depth
        self.pats: list[tuple[int, int, object]] = [(k, len(b), v) for b, k, v in patterns]
        self.max_pattern: int = max((len(b) for b, _, _ in patterns), default=0)
        root_next, matched = _root_tables(delta_np, np.asarray(out) >= 0, tok)
        fast = np.where((tok.kind == _ORDINARY) & ~matched, root_next, -1)
        # The second half (all -1) makes negative ids in [-n_vocab, -1] land
        # on a sentinel instead of wrapping onto real tokens; anything beyond
        # raises IndexError, which the feed loop catches.  Both then take the
        # slow path, which reports InvalidId.
        self.fast: list[int] = fast.tolist() + [-1] * len(fast)
        # fast_text[token]: the token's text if reading it from the root with
        # nothing held (no UTF-8 carry) just appends that text: fast[token] == 0
        # and its bytes are complete, valid UTF-8.  None: take the byte path.
        # One lookup answers "ordinary, no match, no holdback, decodes alone",
        # which is what the single-id fast paths (here and in the decoder)
        # need; the strings are shared with ``token_text`` (one copy per vocab).
        # Same negative-id sentinel half as ``fast``.
        self.fast_text: list[Optional[str]] = [
            t if f == 0 else None for t, f in zip(token_text, self.fast)
        ] + [None] * len(fast)
        self._lean_mask: Optional[np.ndarray] = None

    def lean_mask(self) -> np.ndarray:
        """bool ``[n_vocab + 1]``: ``fast_text[id] is not None``; the last column (every
        out-of-range id) False.  For vectorised lookups (``BatchDecoder``); built on first use."""
        if self._lean_mask is None:
            n = len(self.fast_text) // 2
            m = np.zeros(n + 1, dtype=bool)
            m[:n] = np.fromiter((t is not None for t in self.fast_text[:n]), dtype=bool, count=n)
            self._lean_mask = m
        return self._lean_mask


def token_texts(token_bytes: Sequence[Optional[bytes]]) -> list[Optional[str]]:
    """``str`` of each token whose bytes are complete, valid UTF-8; else None.

    Built once per vocabulary (~60 ms for 200k tokens) and shareable between
    ``ScannerTables`` of the same vocabulary (``token_text=``).
    """
    out: list[Optional[str]] = [None] * len(token_bytes)
    for i, b in enumerate(token_bytes):
        if b:
            try:
                out[i] = b.decode("utf-8")
            except UnicodeDecodeError:
                pass  # a fragment of a character: needs the incremental decoder
    return out


_DEFAULT_LITERAL: tuple[str, str] = ("<|literal|>", "<|endliteral|>")


class ScannerTables:
    """Everything precomputed for one (tokenizer, format profile); immutable.

    Parameters
    ----------
    token_bytes:
        ``token_bytes[id]`` = the token's bytes; ``None``/``b""`` for ids
        without bytes.  Bytes given for registered control / special ids are
        ignored.
    n_vocab:
        Ids ``>= n_vocab`` are invalid.  Default: one past the largest id in
        ``token_bytes``, ``control_ids`` and ``other_special_ids``.
    control_ids:
        Registered control ids -> control name (``200006 -> "<|start|>"``).
    other_special_ids:
        Ids reported as ``Special`` (``<|endoftext|>``, reserved ids...).
    text_controls:
        Control strings recognised in the text (not registered as ids).
    escapable:
        ``"<" + c`` for each text control ``c`` is an escape for ``c``.
    stop_strings:
        User stop strings (non-empty); reported as ``StopString`` in normal
        mode.
    literal_controls:
        ``(open, close)`` names of the literal block controls, or ``None`` for
        a profile without literal blocks.  Ignored if ``open`` is neither a
        registered nor a text control.
    auto_literal:
        Switch to/from literal mode automatically at the open/close control
        (exact at the byte).  If false, call ``Scanner.set_literal``.
    token_text:
        ``token_texts(token_bytes)`` of this same vocabulary, ``n_vocab``
        entries, to share the decoded strings between profiles (built if
        omitted).  Entries of non-ordinary ids are never used.
    run_prefix:
        ``Tokenizer.run_prefix``: bytes the tokenizer puts at the start of every
        text run that are not content (SentencePiece ``\u2581``).  The scanner
        drops them at the start of the stream and after every non-text atom of
        an id (``Control(via_id=True)``, ``Special``, ``InvalidId``), as
        ``Encoder.parse`` does (see "Run prefix" in the module docstring).
    """

    def __init__(
        self,
        token_bytes: Sequence[Optional[bytes]],
        n_vocab: Optional[int] = None,
        *,
        control_ids: Optional[Mapping[int, str]] = None,
        other_special_ids: Iterable[int] = (),
        text_controls: Sequence[str] = (),
        escapable: bool = False,
        stop_strings: Sequence[str] = (),
        literal_controls: Optional[tuple[str, str]] = _DEFAULT_LITERAL,
        auto_literal: bool = True,
        token_text: Optional[list[Optional[str]]] = None,
        run_prefix: bytes = b"",
    ) -> None:
        t0 = time.perf_counter()
        control_ids = dict(control_ids or {})
        specials = set(other_special_ids)
        text_controls = list(dict.fromkeys(text_controls))
        stop_strings = list(dict.fromkeys(stop_strings))
        if n_vocab is None:
            n_vocab = max([len(token_bytes), *(i + 1 for i in control_ids), *(i + 1 for i in specials)])
        if len(token_bytes) > n_vocab:
            raise ValueError(f"token_bytes has {len(token_bytes)} entries but n_vocab={n_vocab}")
        for i in (*control_ids, *specials):
            if not 0 <= i < n_vocab:
                raise ValueError(f"registered id {i} outside [0, {n_vocab})")
        if clash := set(control_ids) & specials:
            raise ValueError(f"ids both control and special: {sorted(clash)}")
        if spelled := set(control_ids.values()) & set(text_controls):
            # Recognising both spellings would let quoted text end messages.
            raise ValueError(f"controls both registered as ids and text: {sorted(spelled)}")
        if any(not c for c in text_controls) or any(not s for s in stop_strings):
            raise ValueError("empty text control or stop string")

        self.n_vocab: int = n_vocab
        self.control_ids: dict[int, str] = control_ids
        self.other_special_ids: frozenset[int] = frozenset(specials)
        self.text_controls: tuple[str, ...] = tuple(text_controls)
        self.escapable: bool = escapable
        self.stop_strings: tuple[str, ...] = tuple(stop_strings)

        known = set(control_ids.values()) | set(text_controls)
        self.literal_open: Optional[str] = None
        self.literal_close: Optional[str] = None
        if literal_controls is not None and literal_controls[0] in known:
            if literal_controls[1] not in known:
                raise ValueError(f"literal open {literal_controls[0]!r} without close {literal_controls[1]!r}")
            self.literal_open, self.literal_close = literal_controls
        self.auto_literal: bool = auto_literal
        if not isinstance(run_prefix, bytes):
            raise TypeError(f"run_prefix must be bytes, got {type(run_prefix).__name__}")
        self.run_prefix: bytes = run_prefix
        #: ``Scanner._state`` at a run start: -1 (the "run prefix" state) with a run prefix, else 0
        self.run_start_state: int = -1 if run_prefix else 0

        # Per-id kind and bytes.  Non-ordinary ids get b"" so that the table
        # build never reads their bytes.
        kind = np.zeros(n_vocab, dtype=np.int8)
        tb: list[bytes] = [b or b"" for b in token_bytes]
        tb.extend([b""] * (n_vocab - len(tb)))
        lens_zero = np.fromiter((not b for b in tb), dtype=bool, count=n_vocab)
        kind[lens_zero] = _INVALID
        for i in control_ids:
            kind[i] = _CONTROL
            tb[i] = b""
        for i in specials:
            kind[i] = _SPECIAL
            tb[i] = b""
        self._tb: list[bytes] = tb
        self._kind: list[int] = kind.tolist()
        arrays = _TokenArrays(tb, kind)
        if token_text is None:
            token_text = token_texts(tb)
        elif len(token_text) != n_vocab:
            raise ValueError(f"token_text has {len(token_text)} entries but n_vocab={n_vocab}")
        #: ``token_texts(token_bytes)`` (pass it to another profile's tables to share it).
        self.token_text: list[Optional[str]] = token_text

        normal: list[tuple[bytes, int, object]] = [(c.encode(), _P_CONTROL, c) for c in text_controls]
        if escapable:
            normal += [(b"<" + c.encode(), _P_ESCAPE, c.encode()) for c in text_controls]
        normal += [(s.encode(), _P_STOP, s) for s in stop_strings]
        self.normal: _Mode = _Mode(normal, arrays, token_text)
        literal: list[tuple[bytes, int, object]] = []
        if self.literal_close is not None and self.literal_close in text_controls:
            literal.append((self.literal_close.encode(), _P_CONTROL, self.literal_close))
        self.literal: Optional[_Mode] = _Mode(literal, arrays, token_text) if self.literal_close is not None else None
        #: Upper bound of ``Scanner.pending`` (AC holdback + incomplete UTF-8).
        self.max_pending: int = max(self.normal.max_pattern - 1, 0) + 3
        #: Seconds spent building these tables (reported by benchmarks).
        self.build_seconds: float = time.perf_counter() - t0

    def mode_of(self, fast_text: list[Optional[str]]) -> _Mode:
        """The mode whose ``fast_text`` table this is (``StreamDecoder.lean_table``)."""
        for mode in (self.normal, self.literal):
            if mode is not None and mode.fast_text is fast_text:
                return mode
        raise KeyError("not a fast_text table of these scanner tables")
