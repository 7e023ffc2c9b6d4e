"""The per-stream scanner: ids in, atoms out (see the package docstring)."""

from __future__ import annotations

import codecs
from typing import Optional, Sequence

import numpy as np

from ...errors import InputTypeError
from .atoms import Atom, Control, InvalidId, Special, StopString, _new_text
from .automaton import _CONTROL, _INVALID, _ORDINARY, _P_CONTROL, _P_ESCAPE, _SPECIAL
from .tables import ScannerTables, _Mode

_utf8_decode = codecs.utf_8_decode


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

    def drop_pending(self, k: int) -> bytes:
        """Remove and return the last ``k`` held bytes (``k`` <= the AC holdback, ``len`` of the
        held pattern prefix): a partial control at the end of a stream cut by its length."""
        if not 0 < k <= len(self._pend) or self._state < 0:
            raise ValueError(f"cannot drop {k} of {len(self._pend)} held bytes")
        out, rest, tok0 = self._pend[-k:], self._pend[:-k], self._pend_tok0
        self._pend = b""
        self._state = 0
        if rest:  # what stays held is scanned again from the root (it holds no whole pattern)
            self._scan(rest, tok0, [])
        return out

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
