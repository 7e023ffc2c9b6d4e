"""Batched stream decoding: B sequences in lock step, one new id per row per sampler step.

A serving loop samples one id for every live sequence at each step; ``BatchDecoder``
turns that ``[B]`` vector into ``B`` event lists, exactly as if each row's ids were fed one
at a time to its own ``StreamDecoder`` (``ocml.encoder.stream.decoder``)::

    bd = BatchDecoder(enc, 64, role="assistant", stop_strings=["Observation:"])
    while not bd.done.all():
        ids = sampler.step()                 # int array [B]; -1 = no token for that row
        for row, events in enumerate(bd.step(ids)):
            ...                              # MessageStart / Delta / MessageEnd / Stop / Error
        ...
    bd.finish()                              # or finish([rows]) for rows that hit max tokens
    bd.reset(row, stop_strings=[...])        # continuous batching: a new request in the slot

API
---
``BatchDecoder(enc, batch_size, role="assistant", *, pad_id=-1, vectorized=None, **decoder_kwargs)``
    One ``StreamDecoder(enc, role=role, **decoder_kwargs)`` per row (``strict``,
    ``stop_strings``, ``stop_channels``, ``stop_ids``, ``include_stop_str_in_output``).
    ``batch_decoder(enc, n, ...)`` is the same.
``step(ids) -> list[list[Event]]``
    ``ids``: length-B sequence or integer numpy array.  Row ``r`` gets ``ids[r]`` unless
    ``ids[r] == pad_id`` (no token this step: the row is not touched, its token positions
    do not advance) or the row is ``done``.  Returns B lists (a new empty list for a row
    with nothing to report).  Every list equals what ``StreamDecoder.feed([ids[r]])`` of
    that row would return.  ``pad_id=None``: every id is fed (negative ids are then
    ``E-VOCAB-ID`` errors, as in ``StreamDecoder``).
``finish(rows=None, *, stop_reason=None, eos=False) -> list[list[Event]]``
    ``StreamDecoder.finish(stop_reason, eos=eos)`` for the given rows (default: all), B lists
    (empty for rows not asked or already done).  A finished row is ``done``.  Engines that
    strip the stop token say why each row stopped: ``stop_reason`` is one value for every
    row asked (a stop id or stop string, as vLLM's ``CompletionOutput.stop_reason``) or a
    mapping row -> value; ``eos`` is one bool or a mapping row -> bool.  A row a mapping does
    not name finishes plainly (a message still open is truncated).
``cancel(rows=None, reason="cancelled") -> list[list[Event]]``
    ``StreamDecoder.cancel(reason)`` for the given rows (default: all), like ``finish``:
    the open message ends ``truncated`` without an error, then ``Stop(reason="cancel")``.
``reset(row, **decoder_kwargs)``
    Reuse the slot for a new request: the row's decoder forgets its stream.  With
    keyword arguments the row gets a new ``StreamDecoder(enc, **kwargs)`` (its own
    ``role``, stop strings, stop ids...; tables are cached per encoder and stop strings,
    so this is cheap after the first time).  ``reset_all()`` resets every row.
``done``  (numpy bool ``[B]``, a copy)
    Rows that take no more ids: stopped (stop token / stop id / stop string), finished,
    or (strict) raised.  ``stopped`` is the per-row ``Stop`` event or None.
``status``  (list of B str), ``status_of(row)``
    ``StreamDecoder.status`` per row (``running`` | ``final`` | ``tool_call`` |
    ``no_final`` | ``truncated`` | ``cancelled``); ``final_message(row)``, ``messages(row)``.
``decoder(row)``
    The row's ``StreamDecoder``, brought up to date (see "Lean path" below) - use this,
    not a reference kept from before, to read ``scanner.index`` etc.

Strict mode: a row whose decoder raises ``ParseError`` does not abort the step.  The
other rows are processed, the failing row becomes ``done`` (reset it before reuse), and
``step`` / ``finish`` then raises ``BatchParseError`` with ``.errors`` (row -> the
``ParseError``) and ``.events`` (the B event lists of the call, empty for failing rows,
whose partial events are lost exactly as with ``StreamDecoder``).

Lean path (decoding note §3.4)
------------------------------
``StreamDecoder.feed([id])`` has a lean path: inside content, with nothing held back by
the scanner, an id with ``Scanner.fast_text[id]`` not None only appends that text to the
open message, returns one new ``Delta`` and advances two scanner counters.  Of its ~0.5 µs
per row about 0.2 µs is the ``Delta`` allocation and most of the rest the call itself, so
``step`` does that path for all rows inline, cheaper:

* **Lanes and a Delta cache.**  Rows on the lean path are grouped by *lane* = (the
  ``fast_text`` table the row's decoder exposes as ``StreamDecoder.lean_table`` - normal or literal
  mode, per stop-string profile -, the open message's channel, its visibility).  A lane
  caches the ``Delta`` of each token it has emitted: ``Delta`` is frozen, so the same
  object is returned again (equal to what ``feed`` returns, not a fresh copy).  A lean row
  then costs one dict lookup, one ``list.append`` to the message content and one list.
* **Lazy counters.**  The scanner counters are not touched per token: a per-row ``lag``
  counts lean tokens, applied with one ``Scanner.advance_text(lag)`` (what the lean path
  does per token, since a row's lean tokens since the last sync are consecutive) before
  anything else touches that row's decoder:
  a slow feed, ``finish``, ``decoder(row)``.
* **Everything else** - headers, controls, stop ids, split UTF-8, bytes that may start a
  control or stop string, bad ids, the first text id after a control with a tokenizer
  ``run_prefix`` (the scanner drops the prefix there) - goes to the row's own ``StreamDecoder.feed([id])``,
  after which the row's lane is re-read (``lean_table``, ``fm.channel``, ``fm.visible``).

Two step paths do the above: a Python loop over the rows (default below
``VECTOR_MIN_ROWS``), and, from ``VECTOR_MIN_ROWS`` rows on, the §3.4 numpy gather: one
flat ``int8`` class table ``[lanes * (n_vocab + 1)]`` (0 slow, 1 lean, 2 lean with a cached
``Delta``) and a parallel object table of the cached Deltas, indexed by ``lane offset[B] +
id[B]`` (out-of-vocabulary ids map to a column that is always 0), ``lag += cls > 0``, then
one list comprehension for the whole batch.  ``vectorized=`` forces either path.
Measured (``scripts/bench_stream_batch.py``, 2-vCPU VM): both paths take ~0.25-0.3
µs/token at B=64 on plain text vs ~0.5-0.6 for a loop of ``feed([id])`` calls; the numpy
path has a fixed ~10 µs per step and only pulls ahead from ~128-256 rows.

More than ``MAX_LANES`` lanes (lenient mode accepts any channel name) flush the caches if
most lanes are idle; otherwise a row without a lane simply uses ``StreamDecoder.feed``.
Memory: a lane's Delta cache holds at most one ``Delta`` per token it has seen; the numpy
path also keeps ``(n_vocab + 1) * 9`` bytes of tables per lane (~1.8 MB for o200k).

This uses only the decoder's public lean-path surface: ``StreamDecoder.lean_table`` /
``append_lean`` / ``done``, ``FrameMachine.content_append`` (``add_content`` without the
``Delta``, for cached Deltas) and ``Scanner.advance_text(n)`` (the deferred counters).
``tests/decode/test_stream_batch.py`` pins the equivalence with per-row ``feed`` calls, including
the scanner state at random points.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import index
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..errors import InputError, InputIndexError, InputTypeError, ParseError
from ..events import Delta, Event, Stop
from ..messages import Message
from .decoder import StreamDecoder
from .engine_stop import engine_stop

if TYPE_CHECKING:
    from ..codec import Codec

__all__ = ["BatchDecoder", "BatchParseError", "batch_decoder", "MAX_LANES", "VECTOR_MIN_ROWS"]

#: From this many rows on ``step`` gathers with numpy; below, a Python loop over the rows is cheaper.
VECTOR_MIN_ROWS = 128
#: Lanes (lean table, channel, visible) with cached ``Delta`` objects; more flush the caches.
MAX_LANES = 16

def _int(value: Any, field: str) -> int:
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError  # an int subclass, but never a token id or a count
        return index(value)
    except TypeError:
        raise InputTypeError(f"{field} must be an integer, got {type(value).__name__}", field=field) from None


def _no_open_message(text: str) -> None:
    raise AssertionError("a cached Delta on a row without an open message")


class BatchParseError(ParseError):
    """Strict mode: some rows raised during one ``step`` / ``finish`` call.

    ``errors``: row -> the row decoder's ``ParseError``; ``events``: the call's B event lists.
    """

    def __init__(self, errors: dict[int, ParseError], events: list[list[Event]]) -> None:
        first = min(errors)
        e = errors[first]
        super().__init__(f"{len(errors)} row(s) raised; row {first}: {e}", code=e.code, position=e.position)
        self.errors = errors
        self.events = events


class _Lane:
    """Rows on the lean path with the same fast_text table, channel and visibility."""

    __slots__ = ("ft", "channel", "visible", "deltas")

    def __init__(self, ft: list[str | None], channel: str | None, visible: bool) -> None:
        self.ft = ft
        self.channel = channel
        self.visible = visible
        self.deltas: dict[int, Delta] = {}  # token id -> its Delta in this lane (scalar path)


class BatchDecoder:
    """B stream decoders stepped together (see the module docstring)."""

    def __init__(self, enc: Codec, batch_size: int, role: str | None = "assistant", *,
                 pad_id: int | None = -1, vectorized: bool | None = None, **decoder_kwargs: Any) -> None:
        n = _int(batch_size, "batch_size")
        if n < 1:
            raise InputError(f"batch_size {n} must be >= 1", field="batch_size")
        self.enc = enc
        self.batch_size = n
        self.pad_id = None if pad_id is None else _int(pad_id, "pad_id")
        self._kw = dict(decoder_kwargs, role=role)
        self._nv = enc.tokenizer.n_vocab
        self._vectorized = n >= VECTOR_MIN_ROWS if vectorized is None else bool(vectorized)
        self._decs: list[StreamDecoder] = [StreamDecoder(enc, **self._kw) for _ in range(n)]
        # the open message's content.append (a row's cached Delta implies an open message)
        self._apps: list[Callable[[str], None]] = [_no_open_message] * n
        self._lane: list[_Lane | None] = [None] * n
        self._failed: dict[int, ParseError] = {}
        self._done = np.zeros(n, dtype=bool)
        # lean tokens not yet counted by the row's scanner (numpy for the vector path)
        self._lag: Any = np.zeros(n, dtype=np.int64) if self._vectorized else [0] * n
        self._lanes: dict[tuple[int, str | None, bool], tuple[int, _Lane]] = {}
        self._init_lanes()
        for r in range(n):
            self._refresh(r)

    # -- lanes ------------------------------------------------------------------------
    def _init_lanes(self) -> None:
        self._lanes.clear()
        self._gen = getattr(self, "_gen", -1) + 1  # lane generation (a flush makes gathered offsets stale)
        if self._vectorized:
            w = self._nv + 1
            # flat [lanes * w]: lane k's row starts at k * w; lane 0 = not lean (all 0)
            self._cls = np.zeros(w, dtype=np.int8)     # 0 slow, 1 lean, 2 lean with a cached Delta
            self._dm = np.full(w, None, dtype=object)  # the cached Deltas
            self._off = np.zeros(self.batch_size, dtype=np.uint64)

    def _lane_for(self, tables: Any, ft: list[str | None], channel: str | None,
                  visible: bool) -> tuple[int, _Lane | None]:
        key = (id(ft), channel, visible)
        hit = self._lanes.get(key)
        if hit is not None and hit[1].ft is ft:
            return hit
        if len(self._lanes) >= MAX_LANES:
            # Many channels (lenient mode passes any name).  If most lanes are idle, drop every
            # cache and re-lane the rows; else this row goes without a lane (StreamDecoder.feed).
            if len({id(x) for x in self._lane if x is not None}) >= MAX_LANES // 2:
                return 0, None
            self._init_lanes()
            for r in range(self.batch_size):
                self._relane(r)
            hit = self._lanes.get(key)
            if hit is not None and hit[1].ft is ft:
                return hit
        lane = _Lane(ft, channel, visible)
        k = len(self._lanes) + 1
        if self._vectorized:
            cls = tables.mode_of(ft).lean_mask().astype(np.int8)
            self._cls = np.concatenate([self._cls, cls])
            self._dm = np.concatenate([self._dm, np.full(self._nv + 1, None, dtype=object)])
        self._lanes[key] = (k, lane)
        return k, lane

    def _relane(self, r: int) -> None:
        d = self._decs[r]
        ft = d.lean_table
        if ft is None:
            k, lane = 0, None
        else:
            fm = d.fm
            k, lane = self._lane_for(d.tables, ft, fm.channel, fm.visible)
        self._lane[r] = lane
        if self._vectorized:
            self._off[r] = k * (self._nv + 1)

    def _refresh(self, r: int) -> None:
        """Re-read row ``r``'s decoder state after anything but the lean path touched it."""
        d = self._decs[r]
        fm = d.fm
        self._apps[r] = fm.content_append
        self._relane(r)
        self._done[r] = d.done or r in self._failed

    def _sync(self, r: int) -> None:
        """Apply the row's pending lean-token count to its scanner (what feed() would have done)."""
        k = int(self._lag[r])
        if k:
            self._decs[r].scanner.advance_text(k)
            self._lag[r] = 0

    def _slow(self, r: int, i: int, errors: dict[int, ParseError]) -> list[Event]:
        """``feed([i])`` on row ``r``'s decoder: ``_sync``, feed, then re-read only what changed."""
        d = self._decs[r]
        self._sync(r)
        try:
            ev = d.feed([i])
        except ParseError as e:
            errors[r] = e
            self._failed[r] = e
            self._refresh(r)
            return []
        fm = d.fm
        self._apps[r] = fm.content_append
        ft = d.lean_table
        if ft is None:
            if self._lane[r] is not None:
                self._relane(r)
            if d.done:
                self._done[r] = True
        else:
            lane = self._lane[r]
            if lane is None or lane.ft is not ft or lane.channel != fm.channel or lane.visible != fm.visible:
                self._relane(r)
        return ev

    # -- public API -----------------------------------------------------------------
    def step(self, ids: Sequence[int] | np.ndarray) -> list[list[Event]]:
        """One sampler step: ``ids[r]`` for row ``r`` (``pad_id``: none); B event lists."""
        errors: dict[int, ParseError] = {}
        if self._vectorized:
            out = self._step_vector(ids, errors)
        else:
            out = self._step_scalar(ids, errors)
        if errors:
            raise BatchParseError(errors, out)
        return out

    def _step_vector(self, ids: Sequence[int] | np.ndarray, errors: dict[int, ParseError]) -> list[list[Event]]:
        n = self.batch_size
        a = np.asarray(ids)
        if a.shape != (n,):
            raise InputError(f"expected {n} ids (one per row), got shape {a.shape}", field="ids",
                             hint="pass pad_id for rows without a token this step")
        src = a
        if a.dtype != np.int64:
            if a.dtype.kind not in "iu" and a.dtype != object:
                raise InputTypeError(f"ids must be integers, got {a.dtype}", field="ids")
            # Out-of-range values only need to stay out of the vocabulary: they take the slow
            # path with their own value (src).  uint64 beyond int64 wraps to negative.
            if a.dtype == object:
                big = self._nv + 1 + (self.pad_id == self._nv + 1)
                a = np.fromiter((i if -2 ** 63 <= i < 2 ** 63 else big
                                 for i in (_int(v, "ids") for v in src.tolist())), dtype=np.int64, count=n)
            else:
                a = a.astype(np.int64)
        nv = self._nv
        idx = np.minimum(a.view(np.uint64), nv)  # negative and too large ids -> column nv (slow)
        pad = self.pad_id
        if pad is not None and pad >= 0:
            idx[a == pad] = nv
        idx += self._off
        c = self._cls[idx]
        self._lag += c > 0
        # Rows with a cached Delta (cls 2, the only entries where _dm is not None): append the
        # text to the open message, return the Delta; the others get [] for now.
        out = [[] if d is None else app(d.text) or [d]
               for app, d in zip(self._apps, self._dm[idx].tolist())]
        if c.sum() == 2 * n:
            return out
        il = src.tolist()
        cl = c.tolist()
        done = self._done
        gen = self._gen
        for r in np.flatnonzero(c != 2).tolist():
            i = il[r]
            if cl[r]:
                # lean, first time this token is seen in this lane: make the Delta, cache it
                # (unless a slow row just flushed the lanes: idx is stale then)
                d = self._decs[r].append_lean(self._lane[r].ft[i])
                if self._gen == gen:
                    j = int(idx[r])
                    self._dm[j] = d
                    self._cls[j] = 2
                out[r] = [d]
            elif i != pad and not done[r]:
                out[r] = self._slow(r, i, errors)
        return out

    def _step_scalar(self, ids: Sequence[int] | np.ndarray, errors: dict[int, ParseError]) -> list[list[Event]]:
        n = self.batch_size
        try:
            il = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        except TypeError:
            raise InputTypeError(f"ids must be a sequence of {n} integers, got {type(ids).__name__}",
                                 field="ids") from None
        if len(il) != n:
            raise InputError(f"expected {n} ids (one per row), got {len(il)}", field="ids",
                             hint="pass pad_id for rows without a token this step")
        pad = self.pad_id
        nv = self._nv
        lanes = self._lane
        lag = self._lag
        apps = self._apps
        done = self._done
        out: list[list[Event]] = []
        append = out.append
        for r, i, lane in zip(range(n), il, lanes):
            if type(i) is not int:
                i = _int(i, "ids")  # numpy integers; E-INPUT-TYPE for non-integers
            if lane is not None:
                d = lane.deltas.get(i)
                if d is not None and i != pad:
                    apps[r](d.text)
                    lag[r] += 1
                    append([d])
                    continue
                if 0 <= i < nv and i != pad:
                    text = lane.ft[i]
                    if text is not None:
                        d = lane.deltas[i] = self._decs[r].append_lean(text)
                        lag[r] += 1
                        append([d])
                        continue
            if i == pad or done[r]:
                append([])
            else:
                append(self._slow(r, i, errors))
        return out

    def finish(self, rows: Iterable[int] | None = None, *,
               stop_reason: int | str | Mapping[int, int | str | None] | None = None,
               eos: bool | Mapping[int, bool] = False) -> list[list[Event]]:
        """End the streams of ``rows`` (default all): ``StreamDecoder.finish(stop_reason, eos=eos)``
        each, the values per row when given as mappings (row -> value); B event lists."""
        reasons, eoses = self._per_row(stop_reason, None), self._per_row(eos, False)
        rows = None if rows is None else [self._row(r) for r in rows]  # read once: rows may be a generator
        for r in range(self.batch_size) if rows is None else rows:  # every row's values checked before any row ends (no half-finished batch)
            if reasons(r) is not None or eoses(r) is not False:
                engine_stop(self.enc, reasons(r), eos=eoses(r))

        def end(r: int, d: StreamDecoder) -> list[Event]:
            return d.finish(reasons(r), eos=eoses(r))  # the decoder checks the values (engine_stop)

        return self._end_rows(rows, end)

    def _per_row(self, value: Any, absent: Any) -> Callable[[int], Any]:
        """``finish``'s ``stop_reason`` / ``eos`` per row: one value for every row, or a mapping
        row -> value (a row it does not name gets ``absent``)."""
        if isinstance(value, Mapping):
            table = {self._row(k): v for k, v in value.items()}
            return lambda r: table.get(r, absent)
        return lambda r: value

    def cancel(self, rows: Iterable[int] | None = None, reason: str = "cancelled") -> list[list[Event]]:
        """Cancel the streams of ``rows`` (default all): ``StreamDecoder.cancel(reason)`` each; B event lists."""
        if not isinstance(reason, str) or not reason:
            raise InputTypeError(f"reason must be a non-empty string, got {reason!r}", field="reason")
        return self._end_rows(rows, lambda r, d: d.cancel(reason))

    def _end_rows(self, rows: Iterable[int] | None,
                  end: Callable[[int, StreamDecoder], list[Event]]) -> list[list[Event]]:
        n = self.batch_size
        out: list[list[Event]] = [[] for _ in range(n)]
        errors: dict[int, ParseError] = {}
        for r in (range(n) if rows is None else [self._row(r) for r in rows]):
            if self._done[r]:
                continue
            self._sync(r)
            try:
                out[r] = end(r, self._decs[r])
            except ParseError as e:
                errors[r] = e
                self._failed[r] = e
            self._refresh(r)
        if errors:
            raise BatchParseError(errors, out)
        return out

    def reset(self, row: int, **decoder_kwargs: Any) -> None:
        """Reuse slot ``row`` for a new stream (new decoder options if keyword arguments are given)."""
        r = self._row(row)
        if decoder_kwargs:
            kw = dict(self._kw)
            kw.update(decoder_kwargs)
            self._decs[r] = StreamDecoder(self.enc, **kw)
        else:
            self._decs[r].reset()
        self._lag[r] = 0
        self._failed.pop(r, None)
        self._refresh(r)

    def reset_all(self) -> None:
        """``reset(row)`` for every row."""
        for r in range(self.batch_size):
            self.reset(r)

    def decoder(self, row: int) -> StreamDecoder:
        """Row ``row``'s ``StreamDecoder``, with its scanner counters up to date."""
        r = self._row(row)
        self._sync(r)
        return self._decs[r]

    @property
    def done(self) -> np.ndarray:
        """bool ``[B]``: rows that take no more ids (stopped, finished, or raised in strict mode)."""
        done: np.ndarray = self._done.copy()  # numpy's stubs: ndarray.copy() returns Any
        return done

    @property
    def stopped(self) -> list[Stop | None]:
        """The ``Stop`` event of every row, or None."""
        return [d.stopped for d in self._decs]

    @property
    def status(self) -> list[str]:
        """``StreamDecoder.status`` of every row."""
        return [d.status for d in self._decs]

    def status_of(self, row: int) -> str:
        return self._decs[self._row(row)].status

    def final_message(self, row: int) -> Message | None:
        return self._decs[self._row(row)].final_message

    def messages(self, row: int) -> list[Message]:
        return self._decs[self._row(row)].messages

    def __len__(self) -> int:
        return self.batch_size

    def _row(self, row: int) -> int:
        r = _int(row, "row")
        if not 0 <= r < self.batch_size:
            raise InputIndexError(f"row {row} out of range for batch size {self.batch_size}", field="row")
        return r


def batch_decoder(enc: Codec, n: int, role: str | None = "assistant", **kw: Any) -> BatchDecoder:
    """``BatchDecoder(enc, n, role, **kw)``."""
    return BatchDecoder(enc, n, role, **kw)
