"""Incremental token scanner: token ids in, *atoms* out.

This is the lowest layer of the stream decoder (``encoder.stream``).  It turns
a stream of token ids into a stream of atoms, recognising control tokens both
as single registered ids and as ASCII text spread over ordinary tokens
(OpenChatML 2.2 §3 portability clause), user stop strings, escapes and literal
blocks.  It knows nothing about message structure: the decoder above it runs
the header/content state machine on the atoms.

Usage::

    tables = ScannerTables(token_bytes, control_ids={200006: "<|start|>"},
                           text_controls=["<|end|>"], escapable=True,
                           stop_strings=["Observation:"])   # once per profile
    sc = Scanner(tables)                                    # once per stream
    for chunk in stream:
        for atom in sc.feed(chunk): ...
    for atom in sc.finish(): ...

Atoms (frozen, slotted dataclasses)
-----------------------------------
``Text(text, token_index)``
    Decoded text (``str``): this scanner does the incremental UTF-8 decoding
    itself (``errors="replace"``), holding back an incomplete code point
    until it is completed, or until a non-text atom / ``finish()`` flushes it
    as one U+FFFD per maximal invalid subpart (a valid prefix of a multibyte
    character right before a control becomes exactly one U+FFFD; nothing is
    carried across the control).  ``token_index`` is the index of the token
    holding the first byte of the current *run* of text, a run being the
    text between two non-text atoms.  Every ``Text`` piece of one run carries
    the same index, so merging adjacent ``Text`` atoms (``coalesce``) gives
    the same result whatever the chunking.  For a run that starts with an
    escape it is the token of the escape's ``<``.
``Control(name, token_index, via_id, in_literal)``
    A control token: a registered id (``via_id=True``) or its ASCII spelling
    (``via_id=False``).  ``in_literal=True`` only for a registered control id
    met inside a literal block (other than the block's terminator); the
    decoder decides whether that is an error, text or structure.
``Special(token_id, token_index)``
    Any id in ``other_special_ids`` (``<|endoftext|>``, reserved ids...),
    in every mode.  Never text.
``StopString(text, token_index)``
    A user stop string matched in the text.  The text before it is emitted
    (without any part of the stop string); ``text`` is the stop string so
    the decoder can implement ``include_stop_str_in_output``.
``InvalidId(token_id, token_index)``
    An id that is negative, ``>= n_vocab``, or inside the vocabulary but with
    no bytes and no registration.  Scanning goes on after it.

``token_index`` counts every id fed to the scanner since the last
``reset()``/``finish()`` (0-based).  For a control/stop matched in text it is
the token in which the match *ended*; tokens after it in the same chunk are
still scanned and reported, so the decoder can trim them.

Every non-text atom is a hard boundary: held-back bytes before it are released
as text, the UTF-8 decoder is flushed, and no pattern spans it (so
``<|en`` + ``<|endoftext|>`` id + ``d|>`` is text, Special, text).

Matching rules (decided; see the decoding note §3.1 and the formats note §8)
---------------------------------------------------------------------------
* Scanning is over bytes, so a pattern may start or end inside a token.
* The **earliest-ending** match wins; at the same end the **longest** wins;
  after a match scanning restarts at the match end (matches never overlap).
* Same bytes registered twice: control > escape > stop string (so a stop
  string equal to a text control yields the ``Control``; the decoder may
  treat that control as a stop).  A stop string that ends earlier than an
  overlapping control still wins (earliest end), e.g. stop ``end|`` in
  ``<|end|>`` gives text ``<|``, the stop, text ``>``.
* Escapes (``escapable=True``): ``"<" + c`` for each **text** control ``c``
  yields ``c`` as plain text and no event.  ``<<<|start|>`` gives
  ``<<|start|>``; unknown tags ``<<|foo|>`` are unchanged; ``<<`` + ``x`` is
  ``<<x``.  Controls registered as ids have no textual escape (their ASCII
  spelling is already plain text).  The scanner has no notion of headers, so
  escapes are unescaped wherever they occur in normal mode; rejecting them in
  headers is the decoder's call.
* Registered ids vs text, per control: a control registered as an id is
  recognised only as that id; its ASCII spelling in ordinary tokens is text
  (as Harmony does).  A name may not be both registered and a text control.
  An ordinary ``<`` right before a registered control id is text ``<`` then
  the ``Control`` (escapes are purely textual).
* Literal blocks (OpenChatML 2.2 §16.4): after a ``<|literal|>`` control
  (id or text) the scanner switches itself to literal mode at exactly that
  byte (``auto_literal=True``, the default), and back after the terminator.
  In literal mode the only textual pattern is the terminator (if it is a
  text control): no escapes (``<<|endliteral|>`` in a literal is text ``<``
  then the terminator), no other controls, **no stop strings**.  Registered
  control ids inside a literal become ``Control(..., in_literal=True)``
  (a nested ``<|literal|>`` id does not nest).  An unclosed literal runs to
  the end of the stream.  ``<|endliteral|>`` outside a literal is reported as
  a plain ``Control``; ``<<|literal|>`` outside is escaped text and does not
  enter literal mode.
* With ``auto_literal=False`` the decoder calls ``set_literal()`` itself; it
  is exact only if nothing after the ``<|literal|>`` control was fed yet
  (bytes already held back are re-scanned under the new mode).

Run prefix
----------
Tokenizers with a ``run_prefix`` (SentencePiece models that prepend ``\u2581`` to
every text run; ``ScannerTables(run_prefix=...)``) put those bytes at the start of
the stream and after every id that is not text; they are not content.  The scanner
drops them exactly where ``Encoder.parse`` does: from the ordinary bytes that follow
the start of the stream or a ``Control`` / ``Special`` / ``InvalidId`` *of an id*
(also inside a literal block), never after a control spelled as text.  The prefix
may be split over tokens (a token that is exactly the prefix, or part of it): its
bytes are held until they are known to be the whole prefix (dropped) or not (then
they are ordinary text, scanned as such).  A boundary before the prefix is complete
ends the attempt: the held bytes are text.  The run keeps the index of the token
where the prefix started (``Encoder.parse`` reports the run there too).  The state
"at a run start" is ``_state < 0`` (``-1 - held bytes``), so every fast path, which
requires ``_state == 0``, is skipped for that one token and nothing else costs
anything: without a run prefix the state is never negative.

Holdback
--------
The scanner holds back exactly the longest suffix of the unreleased bytes that
is a proper prefix of a pattern of the current mode (the Aho–Corasick state
depth) plus at most 3 bytes of an incomplete UTF-8 character, and releases
them as soon as they are disambiguated (``<|sta`` + ``rtle`` releases
``<|startle`` on the second token).  ``finish()`` flushes both.

Performance
-----------
One dense byte DFA per mode (numpy ``int32[states, 256]`` for building,
list-of-lists for scanning) and per-token *root tables*: ``fast[token]`` is
the DFA state after the token read from the root if the token is ordinary
and holds no match, else -1.  On the common path (state at the root,
ordinary token, no match inside) a token costs one list lookup and one
append; only tokens that start in a non-root state or contain a match walk
their bytes.  ``fast_text[token]`` is the token's text when ``fast[token]
== 0`` and its bytes are complete UTF-8 (else None): one lookup serves a
single-id ``feed`` (token-by-token streaming) with no byte work at all, and
the stream decoder uses the same table for its own lean path.  The tables are
built vectorised with numpy (only tokens that contain a byte that can leave
the root are simulated) plus one decode per token, about 0.15 s for a 200k
vocabulary.  ``bench()`` measures µs/token.
"""

from __future__ import annotations

import codecs
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import InputTypeError
from ..fastinit import fast_constructor

__all__ = [
    "Atom",
    "Control",
    "InvalidId",
    "Scanner",
    "ScannerTables",
    "Special",
    "StopString",
    "Text",
    "bench",
    "coalesce",
    "token_texts",
]


# --------------------------------------------------------------------------
# Atoms
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    """Decoded visible text; ``token_index`` = token of the run's first byte."""

    text: str
    token_index: int


@dataclass(frozen=True, slots=True)
class Control:
    """A control token, as a registered id or as ASCII text."""

    name: str
    token_index: int
    via_id: bool
    in_literal: bool = False
    #: a control spelled as text: the bytes of its last token after it (they are scanned
    #: on as usual; a decoder that stops at this control reads them as ``Encoder.parse``
    #: reads the ids up to this token)
    rest: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class Special:
    """A non-structural special id (``<|endoftext|>``, reserved...)."""

    token_id: int
    token_index: int


@dataclass(frozen=True, slots=True)
class StopString:
    """A user stop string, matched in the text (never part of any ``Text``)."""

    text: str
    token_index: int


@dataclass(frozen=True, slots=True)
class InvalidId:
    """An id outside the vocabulary (negative, too large, or without bytes)."""

    token_id: int
    token_index: int


Atom = Union[Text, Control, Special, StopString, InvalidId]

# Text atoms are created once per feed() call, which with token-by-token streaming is
# once per token: ``fast_constructor`` skips the frozen ``__init__``'s per-field setattr.
_new_text: Callable[[str, int], Text] = fast_constructor(Text, ("t", 1))


def coalesce(atoms: Iterable[Atom]) -> list[Atom]:
    """Merge adjacent ``Text`` atoms (keeping the first one's index).

    Chunk invariance is defined on this form: the scanner emits text per
    ``feed()`` call, so the split of a run into pieces depends on chunking.
    """
    out: list[Atom] = []
    for a in atoms:
        if type(a) is Text and out and type(out[-1]) is Text:
            prev = out[-1]
            out[-1] = Text(prev.text + a.text, prev.token_index)  # type: ignore[union-attr]
        else:
            out.append(a)
    return out


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------

# Token kinds (per id).
_ORDINARY = 0
_CONTROL = 1
_SPECIAL = 2
_INVALID = 3

# Pattern kinds.  Their numeric order is the priority for identical bytes.
_P_CONTROL = 0
_P_ESCAPE = 1
_P_STOP = 2

_utf8_decode = codecs.utf_8_decode


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


def _build_automaton(
    patterns: list[tuple[bytes, int, object]],
) -> tuple[np.ndarray, list[int], list[int]]:
    """Aho–Corasick trie + failure links, compiled to a dense byte DFA."""
    goto: list[dict[int, int]] = [{}]
    term: list[int] = [-1]
    depth: list[int] = [0]
    for idx, (pb, _kind, _value) in enumerate(patterns):
        s = 0
        for c in pb:
            nxt = goto[s].get(c)
            if nxt is None:
                nxt = len(goto)
                goto[s][c] = nxt
                goto.append({})
                term.append(-1)
                depth.append(depth[s] + 1)
            s = nxt
        if term[s] < 0:  # first registration wins: control > escape > stop
            term[s] = idx
    n = len(goto)
    delta = np.zeros((n, 256), dtype=np.int32)
    fail = [0] * n
    out = [-1] * n
    queue: deque[int] = deque()
    for c, nxt in goto[0].items():
        delta[0, c] = nxt
        queue.append(nxt)  # fail = root
    while queue:
        s = queue.popleft()
        # BFS order: fail[s] is shallower, so its row and output are final.
        out[s] = term[s] if term[s] >= 0 else out[fail[s]]
        row = delta[fail[s]].copy()
        for c, nxt in goto[s].items():
            fail[nxt] = int(row[c])
            row[c] = nxt
            queue.append(nxt)
        delta[s] = row
    return delta, out, depth


class _TokenArrays:
    """Flat byte storage of the vocabulary, shared by the per-mode builds."""

    __slots__ = ("kind", "flat", "starts", "lens")

    def __init__(self, token_bytes: list[bytes], kind: np.ndarray) -> None:
        self.kind = kind
        self.lens = np.fromiter(map(len, token_bytes), dtype=np.int64, count=len(token_bytes))
        self.flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
        self.starts = np.zeros(len(token_bytes), dtype=np.int64)
        np.cumsum(self.lens[:-1], out=self.starts[1:])


def _root_tables(
    delta: np.ndarray, terminal: np.ndarray, tok: _TokenArrays
) -> tuple[np.ndarray, np.ndarray]:
    """State after each token read from the root, and whether it holds a match.

    Only tokens containing a byte that leaves the root can end elsewhere or
    match, so only those are simulated; they are sorted by length so that
    column ``k`` of the simulation is a prefix slice of the arrays.
    """
    n = len(tok.lens)
    root_next = np.zeros(n, dtype=np.int32)
    matched = np.zeros(n, dtype=bool)
    leaves_root = delta[0] != 0
    if not leaves_root.any() or tok.flat.size == 0:
        return root_next, matched
    nonempty = np.flatnonzero(tok.lens > 0)
    hit = np.logical_or.reduceat(leaves_root[tok.flat], tok.starts[nonempty])
    cand = nonempty[hit]
    if cand.size == 0:
        return root_next, matched
    clen = tok.lens[cand]
    order = np.argsort(-clen, kind="stable")
    cand = cand[order]
    clen = clen[order]
    cstart = tok.starts[cand]
    neg = -clen  # ascending
    dflat = delta.ravel()
    state = np.zeros(cand.size, dtype=np.int64)
    hitm = np.zeros(cand.size, dtype=bool)
    for k in range(int(clen[0])):
        m = int(np.searchsorted(neg, -k, side="left"))  # tokens longer than k
        st = dflat[state[:m] * 256 + tok.flat[cstart[:m] + k]]
        state[:m] = st
        hitm[:m] |= terminal[st]
    root_next[cand] = state
    matched[cand] = hitm
    return root_next, matched


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
        if clash := set(control_ids.values()) & set(text_controls):
            # Recognising both spellings would let quoted text end messages.
            raise ValueError(f"controls both registered as ids and text: {sorted(clash)}")
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

    def mode_of(self, fast_text: list) -> _Mode:
        """The mode whose ``fast_text`` table this is (``StreamDecoder.lean_table``)."""
        for mode in (self.normal, self.literal):
            if mode is not None and mode.fast_text is fast_text:
                return mode
        raise KeyError("not a fast_text table of these scanner tables")


# --------------------------------------------------------------------------
# Scanner
# --------------------------------------------------------------------------


class Scanner:
    """Per-stream scanning state over shared ``ScannerTables``.

    ``feed(ids)`` returns the atoms that became certain with these ids;
    ``finish()`` flushes what is held back and resets the scanner.
    """

    __slots__ = (
        "tables",
        "_mt",
        "_literal",
        "_state",
        "_pend",
        "_pend_tok0",
        "_carry",
        "_run_tok",
        "_parts",
        "_index",
    )

    def __init__(self, tables: ScannerTables) -> None:
        self.tables = tables
        self.reset()

    def reset(self) -> None:
        """Forget everything: normal mode, root state, token index 0."""
        self._mt: _Mode = self.tables.normal
        self._literal: bool = False
        # AC state, len(self._pend) == depth[state]; < 0: at a run start (see "Run prefix")
        self._state: int = self.tables.run_start_state
        self._pend: bytes = b""  # AC holdback
        self._pend_tok0: int = -1  # token of _pend[0] (exact while no text released)
        self._carry: bytes = b""  # incomplete UTF-8 tail, already released by AC
        self._run_tok: int = -1  # token of the current text run's first byte
        self._parts: list[bytes] = []  # released, not yet decoded (empty between calls)
        self._index: int = 0

    @property
    def pending(self) -> bytes:
        """Bytes fed but not yet emitted: incomplete UTF-8 + AC holdback (or held run-prefix bytes)."""
        if self._state < 0:
            return self.tables.run_prefix[:-1 - self._state]
        return self._carry + self._pend

    @property
    def literal(self) -> bool:
        """True inside a literal block."""
        return self._literal

    @property
    def index(self) -> int:
        """Number of ids fed since the last reset (the next token's index)."""
        return self._index

    @property
    def fast_text(self) -> Optional[list[Optional[str]]]:
        """The current mode's ``fast_text`` table if nothing is held, else None.

        While it is not None, feeding one id ``t`` with ``fast_text[t]`` not
        None only emits that text: a caller may skip ``feed`` and do
        ``advance_text()`` itself (the stream decoder inlines it).
        """
        if self._state or self._carry:
            return None
        return self._mt.fast_text

    @property
    def run_index(self) -> int:
        """Token index of the open text run's first byte, or -1 if no run is open."""
        return self._run_tok

    def advance_text(self, n: int = 1) -> int:
        """Account for ``n`` consecutive tokens consumed through ``fast_text``; returns the run index.

        Same counters as ``feed`` of each of them would leave: a text run is opened at the
        first one if none is open (``run_index``), and ``index`` advances by ``n``.  Callers
        that batch lean tokens (``BatchDecoder``) apply them lazily with one call.
        """
        rt = self._run_tok
        if rt < 0:
            rt = self._run_tok = self._index
        self._index += n
        return rt

    # -- public API --------------------------------------------------------

    def feed(self, ids: Sequence[int]) -> list[Atom]:
        """Scan ``ids``; return the atoms they made certain."""
        if type(ids) is not list:
            ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        low = min(ids) if ids else 2
        if low <= 1:  # rare: bools (an int subclass, == 0 / 1) and far negatives
            if bool in map(type, ids):
                k = [type(i) for i in ids].index(bool)
                raise InputTypeError(f"ids[{k}] is a bool, not a token id", field=f"ids[{k}]")
            if low < -self.tables.n_vocab:
                return self._feed_far_negative(ids)
        if len(ids) == 1 and not self._state:
            # Token-by-token streaming, one token read from the root: the
            # general loop below, specialised (same result, less overhead).
            tok = ids[0]
            carry = self._carry
            if not carry:
                # fast_text has the token's text iff it is ordinary, holds no
                # match, ends at the root and is complete UTF-8 on its own.
                try:
                    text = self._mt.fast_text[tok]
                except (IndexError, TypeError):
                    text = None
                if text is not None:
                    return [_new_text(text, self.advance_text())]
            try:
                ns = self._mt.fast[tok]
            except IndexError:
                ns = -1
            if ns == 0:
                # Ordinary and back at the root, but a character is split: a
                # piece of it (emoji / CJK byte tokens) or the carry completed.
                rt = self.advance_text()
                data = carry + self.tables._tb[tok] if carry else self.tables._tb[tok]
                text, n = _utf8_decode(data, "replace", False)
                self._carry = data[n:]
                return [_new_text(text, rt)] if text else []
        atoms: list[Atom] = []
        tb = self.tables._tb
        mt = self._mt
        fast = mt.fast
        depth = mt.depth
        app = self._parts.append
        s = self._state
        rt = self._run_tok
        # The fast path is inlined here (locals only); everything else goes
        # through _slow, which works on the attributes, so sync around it.
        for i, tok in enumerate(ids, self._index):
            if s == 0:
                try:
                    ns = fast[tok]
                except IndexError:
                    ns = -1
                if ns == 0:  # ordinary, no match, back at the root
                    if rt < 0:
                        rt = i
                    app(tb[tok])
                    continue
                if ns > 0:  # ordinary, no match, ends in a pattern prefix
                    b = tb[tok]
                    d = depth[ns]
                    if len(b) > d:
                        if rt < 0:
                            rt = i
                        app(b[:-d])
                        self._pend = b[-d:]
                    else:
                        self._pend = b
                    self._pend_tok0 = i
                    s = ns
                    continue
            self._state = s
            self._run_tok = rt
            self._slow(tok, i, atoms)
            s = self._state
            rt = self._run_tok
            mt = self._mt  # a control may have switched the mode
            fast = mt.fast
            depth = mt.depth
        self._state = s
        self._run_tok = rt
        self._index += len(ids)
        parts = self._parts
        if parts:
            # _emit(atoms, False) inlined: this runs once per call.
            data = b"".join(parts)
            parts.clear()
            if self._carry:
                data = self._carry + data
            if data[-1] < 0x80:  # ends in ASCII: no incomplete character
                text = data.decode("utf-8", "replace")
                self._carry = b""
            else:
                text, n = _utf8_decode(data, "replace", False)
                self._carry = data[n:]
            if text:
                atoms.append(_new_text(text, rt))
        return atoms

    def _feed_far_negative(self, ids: list[int]) -> list[Atom]:
        # The tables' sentinel half covers ids in [-n_vocab, -1]; further down an id would
        # index real tokens.  Feed them as -1 (invalid, same path) and put the id back.
        start = self._index
        far = {k: t for k, t in enumerate(ids, start) if t < -self.tables.n_vocab}
        atoms = self.feed([-1 if t < -self.tables.n_vocab else t for t in ids])
        return [InvalidId(far[a.token_index], a.token_index)
                if type(a) is InvalidId and a.token_index in far else a for a in atoms]

    def finish(self) -> list[Atom]:
        """Flush held bytes as text (UTF-8 with replacement), then reset."""
        atoms: list[Atom] = []
        if self._state < 0:
            self._end_run_start(atoms)
        self._flush_pend()
        self._emit(atoms, True)
        self.reset()
        return atoms

    def set_literal(self, on: bool) -> list[Atom]:
        """Switch literal mode by hand (for ``auto_literal=False``).

        Held-back bytes are re-scanned under the new mode; returns the atoms
        that produces (usually none).  Call it right after the ``Control``
        that opened/closed the block was returned and before feeding more.
        """
        on = bool(on)
        if on == self._literal:
            return []
        if self.tables.literal is None:
            raise ValueError("this profile has no literal blocks")
        atoms: list[Atom] = []
        pend, tok0 = self._pend, self._pend_tok0
        run_start = min(self._state, 0)  # (nothing is in _pend then)
        self._set_mode(on)
        if run_start:
            self._state = run_start
        if pend:
            self._scan(pend, tok0, atoms)
        if self._parts:
            self._emit(atoms, False)
        return atoms

    # -- internals ---------------------------------------------------------

    def _set_mode(self, on: bool) -> None:
        self._literal = on
        self._mt = self.tables.literal if on else self.tables.normal  # type: ignore[assignment]
        self._state = 0
        self._pend = b""

    def _release(self, data: bytes, tok: int) -> None:
        """Bytes that can no longer be part of a match: to the text run."""
        if self._run_tok < 0:
            self._run_tok = tok
        self._parts.append(data)

    def _flush_pend(self) -> None:
        """Give up on the held prefix (boundary): it is text."""
        if self._pend:
            self._release(self._pend, self._pend_tok0)
            self._pend = b""
        self._state = 0

    def _emit(self, atoms: list[Atom], final: bool) -> None:
        """Decode released bytes into a Text atom.

        ``final`` (at a boundary or the end) flushes an incomplete character
        as U+FFFD and ends the run; otherwise it is carried to the next call.
        """
        parts = self._parts
        data = self._carry + b"".join(parts) if parts else self._carry
        parts.clear()
        if final:
            text = data.decode("utf-8", "replace")
            self._carry = b""
        else:
            text, n = _utf8_decode(data, "replace", False)
            self._carry = data[n:]
        if text:
            atoms.append(_new_text(text, self._run_tok))
        if final:
            self._run_tok = -1

    def _slow(self, tok: int, i: int, atoms: list[Atom]) -> None:
        """Everything but the root fast path: ids, matches, non-root states."""
        t = self.tables
        k = t._kind[tok] if 0 <= tok < t.n_vocab else _INVALID
        if k == _ORDINARY:
            if self._state < 0:
                self._run_start(t._tb[tok], i, atoms)
            else:
                self._scan(t._tb[tok], i, atoms)
            return
        if self._state < 0:
            self._end_run_start(atoms)
        self._flush_pend()
        self._emit(atoms, True)
        if k == _CONTROL:
            self._control(t.control_ids[tok], i, True, atoms)
        elif k == _SPECIAL:
            atoms.append(Special(tok, i))
        else:
            atoms.append(InvalidId(tok, i))
        self._state = t.run_start_state  # a text run starts after any id that is not text

    def _run_start(self, b: bytes, i: int, atoms: list[Atom]) -> None:
        """Token ``i`` (bytes ``b``) at a run start (``_state < 0``): drop the run prefix."""
        rp = self.tables.run_prefix
        held = -1 - self._state  # bytes of the prefix already seen (earlier tokens)
        need = rp[held:]
        if b.startswith(need):  # the prefix is complete: not content
            self._state = 0
            if self._run_tok < 0:
                self._run_tok = self._pend_tok0 if held else i
            if len(b) > len(need):
                self._scan(b[len(need):], i, atoms)
        elif need.startswith(b):  # a part of the prefix: hold it
            if not held:
                self._pend_tok0 = i
            self._state -= len(b)
        else:  # not the prefix: what was held is text
            self._end_run_start(atoms)
            self._scan(b, i, atoms)

    def _end_run_start(self, atoms: list[Atom]) -> None:
        """Leave the run-start state; held prefix bytes (it did not complete) are text."""
        held = -1 - self._state
        self._state = 0
        if held:
            self._scan(self.tables.run_prefix[:held], self._pend_tok0, atoms)

    def _control(self, name: str, i: int, via_id: bool, atoms: list[Atom], rest: bytes = b"") -> None:
        t = self.tables
        if self._literal:
            if name == t.literal_close:
                atoms.append(Control(name, i, via_id, False, rest))
                if t.auto_literal:
                    self._set_mode(False)
            else:
                atoms.append(Control(name, i, via_id, True))
        else:
            atoms.append(Control(name, i, via_id, False, rest))
            if t.auto_literal and name == t.literal_open:
                self._set_mode(True)

    def _scan(self, b: bytes, i: int, atoms: list[Atom]) -> None:
        """Run the DFA over the bytes of token ``i`` (after the held prefix)."""
        mt = self._mt
        pend = self._pend
        base = len(pend)
        buf = pend + b if base else b
        s = self._state
        delta = mt.delta
        out = mt.out
        start = 0  # first byte of buf not yet released or consumed by a match
        j = base  # bytes of buf scanned so far
        for c in b:
            s = delta[s][c]
            j += 1
            p = out[s]
            if p < 0:
                continue
            kind, plen, value = mt.pats[p]
            mstart = j - plen
            if mstart > start:
                # start > 0 only after a match in this token, i.e. start >= base.
                self._release(buf[start:mstart], self._pend_tok0 if start < base else i)
            if kind == _P_ESCAPE:
                self._release(value, self._pend_tok0 if mstart < base else i)  # type: ignore[arg-type]
            else:
                self._pend = b""
                self._emit(atoms, True)
                if kind == _P_CONTROL:
                    self._control(value, i, False, atoms, b[j - base:])  # type: ignore[arg-type]
                    mt = self._mt
                    delta = mt.delta
                    out = mt.out
                else:
                    atoms.append(StopString(value, i))  # type: ignore[arg-type]
            start = j
            s = 0
        keep = len(buf) - mt.depth[s]
        if keep > start:
            self._release(buf[start:keep], self._pend_tok0 if start < base else i)
        self._pend = buf[keep:]
        if keep >= base:
            # The new holdback lies in this token.  (If it still starts inside
            # the old one, either nothing was released and _pend_tok0 is still
            # right, or text was released and the run index is already set.)
            self._pend_tok0 = i
        self._state = s


# --------------------------------------------------------------------------
# Benchmark
# --------------------------------------------------------------------------


def bench(
    tables: ScannerTables,
    ids: Sequence[int],
    *,
    chunk: Optional[int] = None,
    repeat: int = 5,
) -> float:
    """Best-of-``repeat`` cost in µs per token of scanning ``ids``.

    ``chunk=None`` feeds everything in one call (the per-token loop cost);
    ``chunk=1`` is token-by-token streaming (includes per-call overhead).
    ``finish()`` is included.
    """
    ids = list(ids)
    if not ids:
        return 0.0
    chunks = [ids] if chunk is None else [ids[k : k + chunk] for k in range(0, len(ids), chunk)]
    best = float("inf")
    for _ in range(max(1, repeat)):
        sc = Scanner(tables)
        feed = sc.feed
        t0 = time.perf_counter()
        for c in chunks:
            feed(c)
        sc.finish()
        best = min(best, time.perf_counter() - t0)
    return best / len(ids) * 1e6
