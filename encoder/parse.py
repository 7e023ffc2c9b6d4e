"""ids -> messages, vectorised where it matters.

The per-token work is a few numpy passes over the ids: they are checked (anything
outside the vocabulary, or a hole in it, becomes one sentinel id), the control /
special / invalid ids are found (one comparison when all of them sit at the top of the
vocabulary, else one gather over a per-id kind table), and the ordinary tokens are
decoded by one gather from a flat byte table in which non-ordinary ids have no bytes,
so the byte offset of a control is where the run before it ends.  The Python loop runs
once per control, not per token: each ordinary run is decoded to ``str`` on its own (an
incomplete UTF-8 sequence before a control becomes U+FFFD there, as in the stream
decoder).  Controls spelled as text (fallback mode) are found in those bytes by
``TextSplitter`` (escape aware, literal-block aware) and everything goes through the
shared ``FrameMachine``.

``Encoder.parse(ids)`` returns the messages; ``errors="collect"`` returns a ``ParseResult``
(messages, end reasons, every ``Error`` with the text it left out of the messages, and
the control the ids end with); ``errors="raise"`` / ``strict=True`` raise ``ParseError``.
Positions: text at the token of its first byte, a control spelled as text at the token
of its last byte (as the stream decoder reports them).
"""

from __future__ import annotations

import operator
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args, overload

import numpy as np

from .errors import InputError, InputTypeError
from .events import Error
from .read.frames import FrameMachine
from .messages import Message
from .prefill import prefill_role
from .read.route import LITERAL_CLOSE as ENDLITERAL
from .read.route import LITERAL_OPEN as LITERAL
from .read.route import AtomRouter

if TYPE_CHECKING:
    from .codec import Codec

_I64_MIN, _I64_MAX = -(2 ** 63), 2 ** 63 - 1
_ENDLITERAL_B = ENDLITERAL.encode()
_INVALID = "<invalid>"
_SHIFT = 24
_LEN_MASK = (1 << _SHIFT) - 1


@dataclass
class ParseResult:
    """``Encoder.parse(ids, errors="collect")``: what a lenient parse made of the ids.

    ``messages``: as ``parse`` returns them; ``ends``: each message's end reason (``end`` |
    ``return`` | ``call`` | ``truncated``); ``errors``: every problem recovered from, in
    order (``Error(code, message, position, text)``; ``text`` is input left out of every
    message, so nothing is dropped without a trace).
    """

    messages: list[Message]
    ends: list[str]
    errors: list[Error] = field(default_factory=list)
    #: the control the ids end with (only whitespace after it; e.g. ``<|return|>``), or None
    last_control: str | None = None
    #: fallback mode: the text of the last token after a stop control spelled in it (o200k's
    #: ``><`` after ``<|call|>``): past the end of the turn, not read (``Stop.rest`` in a stream)
    tail: str = ""

    @property
    def ok(self) -> bool:
        """No errors: the ids followed the format."""
        return not self.errors


#: ``errors=`` of ``Encoder.parse``: ``"collect"`` returns a ``ParseResult``, the others a list of messages
ParseErrors = Literal["ignore", "collect", "raise"]
ERROR_MODES: tuple[str, ...] = get_args(ParseErrors)


def error_mode(strict: Any, errors: Any) -> tuple[bool, bool]:
    """``(strict, errors)`` arguments -> (raise on the first error, return a ``ParseResult``)."""
    if errors not in ERROR_MODES:
        raise InputError(f"errors={errors!r}", field="errors", code="E-INPUT-ARGUMENT",
                         hint="'ignore' (lenient, messages only), 'collect' (lenient, a ParseResult with "
                              "the errors) or 'raise' (strict)")
    if type(strict) is not bool:
        raise InputTypeError(f"strict must be True or False, got {type(strict).__name__}", field="strict")
    if strict and errors == "collect":
        raise InputError("strict=True raises on the first error; there is nothing to collect", field="errors",
                         code="E-INPUT-ARGUMENT", hint="errors='collect' alone (lenient), or strict=True alone")
    return strict or errors == "raise", errors == "collect"


class TextSplitter:
    """Finds controls spelled as text inside decoded bytes; ``<<|ctl|>`` is the escape for ``<|ctl|>``."""

    def __init__(self, text_controls: Sequence[str]) -> None:
        self.controls = tuple(text_controls)
        alts = sorted(self.controls, key=len, reverse=True)
        self.normal: re.Pattern[bytes] | None = None
        if alts and all(c.startswith("<") for c in alts):
            # "<(<?)(rest)" has the leftmost semantics of "(<?)(<rest)" (at a "<" the escape
            # "<" + control is tried first), and its literal first byte lets ``re`` skip
            # to the next "<" in C instead of trying every alternative at every byte.
            keys = [c.encode()[1:] for c in alts]
            self.normal = re.compile(b"<(<?)(" + b"|".join(re.escape(k) for k in keys) + b")")
        elif alts:
            keys = [c.encode() for c in alts]
            self.normal = re.compile(b"(<?)(" + b"|".join(re.escape(k) for k in keys) + b")")
        else:
            keys = []
        #: group 2 of a match -> the control's name
        self._names = dict(zip(keys, alts))
        self.literal_end: bytes | None = _ENDLITERAL_B if ENDLITERAL in self.controls else None

    def pieces(self, data: bytes, literal: bool) -> tuple[list[tuple[str | None, bytes, int]], bool]:
        """-> [(control name, b"", offset) or (None, text bytes, offset)], literal state after
        ``data``; ``offset``: where the piece starts in ``data``."""
        out: list[tuple[str | None, bytes, int]] = []
        pos = 0
        n = len(data)
        normal = self.normal
        names = self._names
        while pos < n:
            if literal:
                end = self.literal_end
                k = data.find(end, pos) if end is not None else -1
                if k < 0:
                    out.append((None, data[pos:], pos))
                    break
                if k > pos:
                    out.append((None, data[pos:k], pos))
                out.append((ENDLITERAL, b"", k))
                literal = False
                pos = k + len(_ENDLITERAL_B)
                continue
            m = normal.search(data, pos) if normal is not None else None
            if m is None:
                out.append((None, data[pos:] if pos else data, pos))
                break
            start = m.start()
            if start > pos:
                out.append((None, data[pos:start], pos))
            name = names[m.group(2)]
            if m.group(1):  # escape: the control's text, one '<' removed
                out.append((None, name.encode(), start))
            else:
                out.append((name, b"", start))
                if name == LITERAL:
                    literal = True
            pos = m.end()
        return out, literal

    def split(self, data: bytes, literal: bool) -> tuple[list[tuple[bool, bytes]], bool]:
        """-> [(is_control, bytes)], literal state after ``data``."""
        pieces, literal = self.pieces(data, literal)
        return [(True, name.encode()) if name is not None else (False, chunk) for name, chunk, _ in pieces], literal

    def feed(self, data: bytes, fm: FrameMachine, position: int, literal: bool,
             locate: Callable[[int], int] | None = None) -> bool:
        """Split ``data`` and hand the pieces to ``fm``; returns the literal state after it
        (``route`` with a router of its own)."""
        router = AtomRouter(fm, fm.text)
        router.literal = literal
        self.route(data, router, position, locate)
        return router.literal

    def route(self, data: bytes, router: AtomRouter, position: int,
              locate: Callable[[int], int] | None = None, stop_at: tuple[frozenset[str], int] | None = None) -> bytes:
        """Split ``data`` and hand the pieces to ``router`` (its ``literal`` state is the splitter's).

        ``position``: the token index of ``data``'s first byte; ``locate``: byte offset in
        ``data`` -> token index (None: every piece is at ``position``).  Consecutive text
        pieces (text and escapes) are one run, decoded together and given at the token of
        its first byte; a control is at the token of its last byte (as the stream decoder
        says: its scanner emits the same runs).

        ``stop_at``: (stop controls, last token index): a stop control whose last byte is in
        that token ends the input; the bytes after it are returned, not routed (the stop
        token's tail, ``ParseResult.tail``).  Otherwise returns ``b""``."""
        fm = router.fm
        if not router.literal and (self.normal is None or b"<" not in data):
            if data:
                fm.text(data.decode("utf-8", "replace"), position)
            return b""
        pieces, _ = self.pieces(data, router.literal)
        run: list[bytes] = []
        run_pos = position
        for name, chunk, off in pieces:
            if name is None:
                if not run:
                    run_pos = locate(off) if locate is not None and off else position
                run.append(chunk)
                continue
            if run:
                fm.text(b"".join(run).decode("utf-8", "replace"), run_pos)
                run.clear()
            at = locate(off + len(name) - 1) if locate is not None else position
            if router.control(name, at) and stop_at is not None and at == stop_at[1] and name in stop_at[0]:
                return data[off + len(name):]
        if run:
            fm.text(b"".join(run).decode("utf-8", "replace"), run_pos)
        return b""


class IdParser:
    """Per-(format, tokenizer) tables for parsing ids; built once per codec (``parser_for``)."""

    def __init__(self, enc: Codec) -> None:
        tok = enc.tokenizer
        self.enc = enc
        self.tok = tok
        nv = tok.n_vocab
        self.nv = nv
        table = enc.format.table
        lx = enc.lexicon  # what is a control, a special, a text control: shared with the stream
        self.markers = frozenset(table.markers)
        # SentencePiece tokenizers that prefix every text run (``▁`` after each control): the
        # prefix is the tokenizer's, not content (``Tokenizer.run_prefix``), so each run drops it.
        self.run_prefix: bytes = lx.run_prefix
        # kind: 0 ordinary, 1 invalid (a hole, or the sentinel ``nv`` any out-of-range id
        # is clipped to), 2.. the special tokens (names[kind]; is_control[kind]: a control of
        # the format, else a special that is not part of it)
        self.names: list[str] = ["", _INVALID]
        self.is_control: list[bool] = [False, False]
        kind = np.zeros(nv + 1, dtype=np.int16)
        for table_ids, ctl in ((lx.control_ids, True), (lx.special_ids, False)):
            for i, s in table_ids.items():
                self.names.append(s)
                self.is_control.append(ctl)
                kind[i] = len(self.names) - 1
        tb = tok.token_bytes_table
        m = min(len(tb), nv)
        lens = np.zeros(nv + 1, dtype=np.int64)
        lens[:m] = np.fromiter((-1 if b is None else len(b) for b in tb[:m]), dtype=np.int64, count=m)
        hole = np.zeros(nv + 1, dtype=bool)
        hole[:m] = lens[:m] < 0
        hole[m:] = True
        kind[hole & (kind == 0)] = 1
        lens[kind != 0] = 0  # non-ordinary ids decode to nothing
        starts = np.zeros(nv + 1, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        #: per id: (offset of its bytes in ``flat``) << 24 | their length (one gather per token)
        if int(lens.max()) > _LEN_MASK or int(starts[-1]) >= 1 << (63 - _SHIFT):
            raise ValueError("token bytes too long for the parse tables")
        self.span = (starts << _SHIFT) | lens
        flat = b"".join([b for b, k in zip(tb[:m], kind[:m].tolist()) if k == 0 and b])
        self.flat = np.frombuffer(flat, dtype=np.uint8) if flat else np.zeros(1, dtype=np.uint8)
        self.kind = kind
        # Cut test: when every non-ordinary id is >= lo (and everything from lo up is
        # non-ordinary), one comparison finds them; else a gather over ``kind``.
        nz = np.flatnonzero(kind)
        lo = int(nz[0])
        self.lo: int | None = lo if bool(np.all(kind[lo:] != 0)) else None
        self.splitter = TextSplitter(lx.text_controls)
        self.lexicon = lx

    def _clipped(self, ids: Any) -> tuple[np.ndarray, Any]:
        """-> (ids with anything outside the vocabulary set to ``nv``, ids indexable for messages)."""
        nv = self.nv
        if type(ids) is list:
            try:
                arr = np.frombuffer(array("I", ids), dtype=np.uint32)  # C loop; fails on negatives, huge, non-ints
            except (OverflowError, TypeError, ValueError):
                pass
            else:
                return np.minimum(arr, nv), ids
        elif isinstance(ids, np.ndarray) and ids.dtype == np.int32 and ids.ndim == 1:
            return np.minimum(ids.view(np.uint32), nv), ids  # negatives wrap above nv
        elif isinstance(ids, np.ndarray) and ids.dtype == np.uint32 and ids.ndim == 1:
            return np.minimum(ids, nv), ids
        a = np.asarray(ids)
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iub"):
            # Floats, strings, None, nested lists: never truncated or guessed into ids.
            try:  # ints beyond int64 are invalid ids anyway: clipped, still reported as E-VOCAB-ID
                a = np.array([min(max(operator.index(i), _I64_MIN), _I64_MAX) for i in ids], dtype=np.int64)
            except TypeError:
                raise InputTypeError(f"ids must be a flat sequence of integers, got {type(ids).__name__}"
                                     f" of {a.dtype}", field="ids") from None
        else:
            a = a.astype(np.int64, copy=False)
        return np.where((a >= 0) & (a < nv), a, nv), a

    def feed_atoms(self, ids: Any, fm: FrameMachine, stops: frozenset[str] = frozenset()) -> bytes:
        """Read ``ids`` into ``fm`` and finish it; returns the stop token's tail (see ``parse_ids``)."""
        arr, orig = self._clipped(ids)
        n = arr.shape[0]
        if self.lo is not None:
            cuts = (arr >= self.lo).nonzero()[0]
        else:
            cuts = self.kind[arr].nonzero()[0]
        # decode: output byte j of token t is flat[offset[t] + j - out_start[t]]
        span = self.span[arr]
        lens = span & _LEN_MASK
        ends = lens.cumsum()  # out_end per token; a control's (0 bytes) = where the run before it ends
        total = int(ends[-1]) if n else 0
        if total:
            span >>= _SHIFT   # offset in ``flat``
            span -= ends
            span += lens      # ... minus out_start
            idx = span.repeat(lens)
            idx += np.arange(total)
            data = self.flat[idx].tobytes()
        else:
            data = b""
        route_text = self.splitter.route
        names = self.names
        is_control = self.is_control
        router = AtomRouter(fm, fm.text)
        prev = 0
        bprev = 0

        def locate(offset: int) -> int:  # byte offset in the run starting at bprev -> its token
            return int(ends.searchsorted(bprev + offset, side="right"))

        loc = locate if self.splitter.normal is not None else None
        rp = self.run_prefix
        if rp and data.startswith(rp):
            bprev = len(rp)
        for c, k, b in zip(cuts.tolist(), self.kind[arr[cuts]].tolist(), ends[cuts].tolist()):
            if b > bprev:
                route_text(data[bprev:b], router, prev, loc)
            prev = c + 1
            bprev = b + len(rp) if rp and data.startswith(rp, b) else b
            # one meaning per atom, shared with the stream decoder (``ocml.encoder.read.route``)
            if k == 1:
                router.invalid(int(orig[c]), c)
            elif is_control[k]:
                router.control(names[k], c)
            else:
                router.special(names[k], c)
        tail = b""
        if total > bprev:
            last = data[bprev:] if bprev else data
            tail = route_text(last, router, prev, loc, (stops, n - 1) if stops else None)
            # (no stops: a caller that is no frame machine, e.g. fill-in-the-middle's collector)
            k = self.lexicon.partial_control(last) if stops and not tail and not router.literal \
                and fm.open_content else 0
            if k:  # a control cut by the end (``Answer<|ret``): out of the message, as the stream does
                fm.finish(n, fm.cut_content(k))
                return tail
        fm.finish(n)
        return tail


def parser_for(enc: Codec) -> IdParser:
    """``enc``'s id parser, built on first use and kept by the codec."""
    return enc.table(IdParser)


@overload
def parse_ids(enc: Codec, ids: Sequence[int] | np.ndarray, *, strict: bool = False, role: str | None = None,
              detailed: Literal[False] = False) -> list[Message]: ...
@overload
def parse_ids(enc: Codec, ids: Sequence[int] | np.ndarray, *, strict: bool = False, role: str | None = None,
              detailed: Literal[True]) -> ParseResult: ...
@overload
def parse_ids(enc: Codec, ids: Sequence[int] | np.ndarray, *, strict: bool = False, role: str | None = None,
              detailed: bool) -> list[Message] | ParseResult: ...


def parse_ids(enc: Codec, ids: Sequence[int] | np.ndarray, *, strict: bool = False,
              role: str | None = None, detailed: bool = False) -> list[Message] | ParseResult:
    """ids -> messages (``detailed``: a ``ParseResult``).  ``role``: the prefilled ``<|start|>ROLE``.

    Where the ids end matters (fallback mode, controls spelled as text, as the stream decoder
    reads them): a stop control of ``role`` (``Format.stop_reasons``) whose spelling ends inside
    the last token ends the input there (the token's tail is past the stop: ``ParseResult.tail``),
    and a control cut by the end inside a message (``Answer<|ret``) is left out of it
    (``E-STREAM-TRUNCATED``'s text)."""
    role = prefill_role(enc.format, role)
    p = parser_for(enc)
    fm = enc.format.frame_machine(strict=strict, role=role, markers=p.markers)
    tail = p.feed_atoms(ids, fm, frozenset(enc.format.stop_reasons(role)))
    if detailed:
        return ParseResult(fm.messages, fm.ends, fm.errors, fm.last_control, tail.decode("utf-8", "replace"))
    return fm.messages
