"""Incremental decoder: sampled ids in, typed events out.

Size: over 500 lines on purpose: a fifth is this docstring, the stream's contract; the rest is one
class, ``StreamDecoder``, whose feed / stop / finish paths share per-stream state and the lean
per-token path, so splitting it would spread one state machine over modules.  What is per
codec, not per stream, lives beside it: ``codec_tables`` (scanner tables, stop-string check)
and ``engine_stop`` (an engine's stripped stop).

``StreamDecoder`` puts the byte-level scanner (``ocml.encoder.stream.scanner``: ids ->
atoms, controls recognised as registered ids *or* as text, minimal holdback,
incremental UTF-8) in front of the shared ``FrameMachine`` (``ocml.encoder.read.frames``), so
a stream is read exactly like ``Encoder.parse`` reads the same ids::

    dec = enc.decoder(role="assistant")       # after a "<|start|>assistant" prefill
    for chunk in sampler:
        for ev in dec.feed(chunk):
            ...                                # MessageStart / Delta / MessageEnd / Stop / Error
    for ev in dec.finish():                    # or dec.cancel("client went away")
        ...
    choice = dec.to_openai()                   # the OpenAI Chat Completions message + finish_reason

For the OpenChatML 2.2 §9 wire events (``response.delta`` ...) wrap the decoder in
``ocml.encoder.stream.transport.Transport``.

Events (``ocml.encoder.events``)
---------------------------
``MessageStart`` when a header is complete (``<|message|>``); ``Delta(text, channel,
visible)`` for content (``visible`` per ``frames.visible``: ``final`` or no channel,
and ``commentary`` with ``intent=preamble``; a ChatML assistant turn's deltas are per part:
``<think>`` reasoning ``analysis``, the answer visible, tags and calls hidden
``commentary``, ``ocml.encoder.formats.chatml.frames``); ``MessageEnd(message, reason)`` with
reason ``end`` | ``return`` | ``call`` | ``truncated``; ``Stop(reason, token, position,
trailing)``; ``Error(code, message, position, text)`` (``text``: input left out of
every message, see ``ocml.encoder.read.frames``).

Semantics
---------
* **Chunk invariance**: feeding ids one by one or in any chunks gives the same events
  once adjacent ``Delta`` events are merged; the concatenated deltas of a message are
  its content.  No U+FFFD comes from a character split over tokens (the scanner holds
  an incomplete code point back); a valid prefix of a character cut by a control or by
  the end of the stream becomes one U+FFFD, as in ``Encoder.parse``.
* **Run prefix**: with a tokenizer that puts ``Tokenizer.run_prefix`` before every text run
  (SentencePiece ``\u2581``), the prefix is dropped at the start of the stream and after
  every control / special / invalid id, exactly where ``Encoder.parse`` drops it (the
  scanner does it, see ``ocml.encoder.stream.scanner`` "Run prefix"): no content starts with
  the tokenizer's space.
* **Stops**: ``<|return|>`` and ``<|call|>`` (as ids, or as text in fallback mode) are
  the sampler stop tokens: after them the decoder emits ``Stop(reason="return"|"call")``
  and stops.  If such a token does not terminate a message (e.g. ``<|return|>`` after
  ``<|end|>``, vLLM ``ignore_eos``) the frame error is reported first and the stream
  still stops; whatever it left open (a header, a skipped body, another frame's message)
  ends there as at the end of the stream.  A stop control spelled as text may end inside
  a token (``>\n//``): the rest of that token is read after it.  So the events are those
  of ``Encoder.parse`` of the ids up to the stop token (``tests/decode/test_stream_parse_agreement.py``).
  ``stop_ids`` (extra ids: e.g. ``<|endoftext|>`` or ``<|end|>``) stop
  with ``reason="stop_id"`` after the token has been processed.  A stop id is the end of
  the stream, so a message still open is truncated as by ``finish()``
  (``E-STREAM-TRUNCATED``, ``MessageEnd(reason="truncated")``, then the ``Stop``) -
  except what a control stop id opened itself (``<|start|>``: an empty header).
  ``stop_strings`` (user strings, matched over bytes, earliest-ending first) stop with
  ``reason="stop_string"`` only inside content of a channel in ``stop_channels``
  (default ``("final",)``; a message without channel counts as ``final``; ``None`` =
  every channel); elsewhere they are ordinary text.  In fallback mode a stop string that
  could end strictly inside a control's spelling (``end``, ``a``, anything ending in ``<``)
  is refused with ``E-STOP-OVERLAPS-CONTROL``: it would fire mid-control and lose the
  control.  The text before a stop string is streamed; the stop string is not, unless
  ``include_stop_str_in_output=True`` (vLLM's option: it is streamed as one last ``Delta``
  and kept in the message content).  The
  message ends with reason ``truncated`` (no error: the ``Stop`` event says why).
  ``Stop.trailing`` is the number of ids of the fed chunk after the stop token: they
  are not processed (the caller trims them); later ``feed`` calls return nothing until
  ``reset()``.
* **Errors**: lenient by default (``Error`` events; the frame machine resynchronises
  at the next ``<|start|>``); ``strict=True`` raises ``ocml.encoder.errors.ParseError``
  (``HeaderError`` for a malformed header, as ``Encoder.parse(strict=True)`` does);
  call ``reset()`` before reusing a decoder that raised.
  ``finish()`` without a stop inside a message gives ``E-STREAM-TRUNCATED`` and a
  ``MessageEnd(reason="truncated")``.  Invalid ids give ``E-VOCAB-ID``; other special
  ids (``<|endoftext|>``, reserved) ``E-PARSE-STRAY-CONTROL`` - never text.  Text is
  never dropped silently: what lenient reading cannot place in a message comes back in
  ``Error.text`` (stray runs, unreadable headers, bodies of skipped messages), and a
  header that runs into a terminator (``I must refuse<|end|>``: no ``<|message|>``) keeps
  its words as the content, as openai-harmony's non-strict parser does.
* **Cancel**: ``cancel(reason)`` ends the stream on purpose: held bytes are flushed, an
  open message ends ``truncated`` without ``E-STREAM-TRUNCATED``, then
  ``Stop(reason="cancel")``; ``status`` is ``cancelled``, ``cancel_reason`` the reason.
* **Arguments**: ``role`` must be one of the format's roles (``HeaderError``
  ``E-ROLE-UNKNOWN``); ``feed`` takes a list / tuple / 1-d integer array of ids or one
  id; bools, strings, bytes and float arrays are ``InputTypeError`` (``E-INPUT-TYPE``,
  naming ``ids`` or ``ids[k]``), refused before anything is scanned.
* **Outcome** (``dec.status``, for "did the model answer?"): ``running`` until a stop or
  ``finish()``; then ``truncated`` if the stream ended inside a message or header
  (``finish()`` / stop id: max tokens, EOS mid-message); else ``tool_call`` if it stopped
  on a ``<|call|>`` that ended a message; else ``final`` if an assistant ``final`` (or
  channel-less) message was completed - by ``<|return|>``, ``<|end|>``, or cut by a stop
  string on purpose; else ``no_final``: every message ended cleanly but none was the
  answer (e.g. analysis, ``<|end|>``, then EOS / a stop id; or an empty completion);
  ``cancelled`` after ``cancel()``.
  ``dec.final_message`` is the last assistant ``final`` message, or None (with
  ``truncated`` it may be the cut-off answer).
* Positions are token indices counted from the last ``reset()``; for text the index of
  the token holding the first byte of the run; for a control spelled as text, the token
  holding its last byte (``Encoder.parse`` says the same).
* Text outside content (headers, stray text between messages) is collected up to the
  next non-text atom and handed to the frame machine in one piece, so errors do not
  depend on chunking.  It is held in full (the error reports it), like a message's
  content: a model that never emits ``<|message|>`` grows it until the next control or
  the end of the stream.

Cost: a single-id ``feed`` of an ordinary token inside content, with nothing held back,
is one table lookup (``Scanner.fast_text``: the token's text, or None when its bytes
might touch a control / stop string or are an incomplete character), one counter
update (``Scanner.advance_text``), one content append and one ``Delta`` - the scanner
is not fed.  Anything else goes through the scanner's own per-token fast path, then one ``Delta`` per ``feed``
call and text run inside content; the frame machine sees only controls and header
text.  Tables are built once per (encoder, stop strings) and cached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ocml.vocab.errors import as_ints, as_strings

from ..errors import InputError, InputTypeError, ParseError
from ..events import Delta, Error, Event, MessageEnd, MessageStart, Stop
from ..messages import Message
from .engine_stop import engine_stop
from ..read.route import AtomRouter
from ..prefill import prefill_ids, prefill_role
from .codec_tables import tables_for
from .scanner import Atom, Control, InvalidId, Scanner, Special, StopString, Text

if TYPE_CHECKING:
    from ..codec import Codec
    from ..openai_message import ChatChoice

__all__ = ["StreamDecoder", "tables_for"]


def _id_list(ids: object) -> list[int]:
    """``feed``'s argument as a list (the caller passed something other than a list)."""
    if isinstance(ids, (int, np.integer)) and not isinstance(ids, (bool, np.bool_)):
        return [int(ids)]
    if isinstance(ids, np.ndarray):
        if ids.ndim > 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise InputTypeError(f"ids must be a 1-d integer array, got {ids.dtype} with shape {ids.shape}",
                                 field="ids")
        listed: list[int] = ids.tolist()
        return listed
    if isinstance(ids, (bool, np.bool_, str, bytes, bytearray, dict)) or not hasattr(ids, "__iter__"):
        raise InputTypeError(f"ids must be a token id or a sequence of token ids, got {type(ids).__name__}",
                             field="ids", hint="e.g. dec.feed([id]) or dec.feed(ids)")
    return list(ids)


class StreamDecoder:
    """Incremental ids -> events decoder for one stream (see the module docstring)."""

    def __init__(self, enc: Codec, role: str | None = None, *, strict: bool = False,
                 stop_strings: Sequence[str] = (), stop_channels: Iterable[str] | None = ("final",),
                 stop_ids: Iterable[int] = (), include_stop_str_in_output: bool = False,
                 prefill: object = None) -> None:
        self.enc = enc
        # an open message to continue (render(..., mode="continue")): its ids, read at reset()
        # (a prefill given as messages is rendered: by the facade, an Encoder, which is a Codec)
        self.prefill = None if prefill is None else prefill_ids(enc, prefill)  # type: ignore[arg-type]
        if self.prefill is not None and role is not None:
            raise InputError("give role= or prefill=, not both: a prefill is the whole prompt", field="role")
        self.role = prefill_role(enc.format, role)
        self.strict = strict
        self.stop_strings = as_strings(stop_strings, "stop_strings")
        self.include_stop_str_in_output = bool(include_stop_str_in_output)
        self.stop_channels = None if stop_channels is None else frozenset(as_strings(stop_channels, "stop_channels"))
        self.stop_ids = frozenset(as_ints(stop_ids, "stop_ids"))
        self.tables = tables_for(enc, self.stop_strings)
        self._markers = frozenset(enc.format.table.markers)
        self._names = enc.tokenizer.special_ids  # cached on the tokenizer: not rebuilt per decoder
        self.scanner = Scanner(self.tables)
        self.reset()

    # -- public API -----------------------------------------------------------
    def reset(self) -> None:
        """Forget the stream: a fresh frame machine (same role prefill) and scanner."""
        self._out: list[Event] = []
        self.fm = self.enc.format.frame_machine(strict=self.strict, role=self.role, emit=self._out.append,
                                                markers=self._markers)
        self._stopping = self.enc.format.stop_reasons(self.role)
        self._add = self.fm.add_content
        self.scanner.reset()
        self.stopped: Stop | None = None
        self.finished = False
        self._done = False
        self._truncated = False        # the stream ended (finish / stop id) inside a message
        self.cancel_reason: str | None = None  # set by cancel()
        self._scan = self.scanner.feed
        # The lean per-token path's table (Scanner.fast_text) while it applies: open content,
        # nothing held by the scanner, not done; else None.  Refreshed after every slow feed.
        self._ft: list[str | None] | None = None
        self._buf: list[str] = []      # text outside content, up to the next boundary
        self._buf_pos = 0
        self._router = AtomRouter(self.fm, self._literal_text)  # the atoms' meaning, shared with parse
        #: with ``prefill``: the assistant messages of the open turn the prompt completed, with
        #: their end reasons (``to_openai`` starts with them)
        self.prefill_messages: tuple[tuple[Message, str], ...] = ()
        if self.prefill:  # read the prompt, no stop firing; keep only the open message (encoder.prefill)
            stopping, strings, ids = self._stopping, self.stop_strings, self.stop_ids
            self._stopping, self.stop_strings, self.stop_ids = {}, (), frozenset()
            try:
                evs = self.feed(self.prefill)
                self._flush()  # header text held to the next boundary (ChatML: "assistant\nThe...")
                evs += self._out
            finally:
                self._stopping, self.stop_strings, self.stop_ids = stopping, strings, ids
            fm = self.fm
            # the turn's messages the prompt completed (an analysis message before the open answer):
            # part of the assistant message to_openai() gives, not events of this stream
            j = len(fm.messages)
            while j and fm.messages[j - 1].role == "assistant":
                j -= 1
            self.prefill_messages = tuple(zip(fm.messages[j:], fm.ends[j:]))
            del fm.messages[:], fm.ends[:], fm.errors[:], self._out[:]
            k = max((j for j, e in enumerate(evs) if type(e) is MessageStart), default=-1)
            if k >= 0 and not any(type(e) is MessageEnd for e in evs[k:]):
                self._out.append(evs[k])  # the open message's start: goes out with the first feed
            self._ft = None  # the slow path sends the queued MessageStart first

    @property
    def done(self) -> bool:
        """True once the stream takes no more ids (a stop, or ``finish()``); ``reset()`` clears it."""
        return self._done

    @property
    def lean_table(self) -> list[str | None] | None:
        """The lean per-token path's table while it applies, else None (read-only).

        Not None only inside open content, with nothing held back by the scanner and the
        stream not done; it is then the scanner's current ``fast_text`` table.  While it is
        not None, for an id ``t`` with ``lean_table[t]`` not None, ``feed([t])`` is exactly::

            delta = dec.append_lean(dec.lean_table[t])   # -> [delta]
            dec.scanner.advance_text()

        and leaves ``lean_table`` unchanged, so a caller may repeat that for consecutive
        such ids.  (While a ChatML turn is read, ``feed`` has a lean path of its own over a
        subset of the table, ``FrameMachine.plain``; ``lean_table`` is None then.)  ``scanner.advance_text(n)`` may be deferred and applied for ``n`` of them
        at once, as long as it is done before anything else uses the decoder (``BatchDecoder``
        does this).  Re-read it after any other call (``feed``, ``finish``, ``reset``).
        """
        ft = self._ft
        return ft if ft is self.scanner.fast_text else None

    def append_lean(self, text: str) -> Delta:
        """Append ``text`` to the open message's content; return its ``Delta`` (see ``lean_table``).

        Only for text of ``lean_table``, while it is not None; the scanner counters are the
        caller's (``scanner.advance_text``).
        """
        return self._add(text)

    @property
    def stop_controls(self) -> Mapping[str, str]:
        """The controls after which this stream stops (the format's, for this role) -> ``Stop.reason``."""
        return self._stopping

    @property
    def messages(self) -> list[Message]:
        """Messages completed so far."""
        return self.fm.messages

    @property
    def errors(self) -> list[Error]:
        return self.fm.errors

    @property
    def status(self) -> str:
        """How the turn ended: ``running`` | ``final`` | ``tool_call`` | ``no_final`` | ``truncated``
        | ``cancelled``.

        See the module docstring ("Outcome").
        """
        if not self._done:
            return "running"
        if self.cancel_reason is not None:
            return "cancelled"
        if self._truncated:
            return "truncated"
        st = self.stopped
        ends = self.fm.ends
        if st is not None and st.reason == "call" and ends and ends[-1] == "call":
            return "tool_call"
        if self.enc.format.turns.blocks and st is not None and self.to_openai().finish_reason == "tool_calls":
            return "tool_call"  # a turn whose last part is a call, ended by its stop token (ChatML)
        return "final" if self.final_message is not None else "no_final"

    @property
    def final_message(self) -> Message | None:
        """The last assistant message on the ``final`` channel (or without one), if any; cut off if ``truncated``."""
        for m in reversed(self.fm.messages):
            if m.role == "assistant" and (m.channel is None or m.channel == "final"):
                return m
        return None

    def feed(self, ids: Sequence[int] | np.ndarray | int) -> list[Event]:
        """Scan ``ids`` (a list / array of ids, or one id); return the events they made certain."""
        if type(ids) is not list:
            ids = _id_list(ids)
        ft = self._ft
        if ft is not None and len(ids) == 1:
            # Lean path (token-by-token streaming): an ordinary token inside content whose
            # bytes cannot touch a pattern and decode on their own, with nothing held.  The
            # scanner would return exactly Text(ft[id]); skip it and only advance its counters
            # (see ``lean_table``: this is the whole per-token cost).
            tok = ids[0]
            try:
                # negative ids (far ones would wrap onto real tokens), numpy integers and
                # bools (refused there) take the slow path
                text = ft[tok] if type(tok) is int and tok >= 0 else None
            except IndexError:
                text = None
            if text is not None:
                self.scanner.advance_text()
                return [self._add(text)]
        if self._done:
            return []
        self._ft = None  # stays None if the slow path raises (strict)
        try:
            atoms = self._scan(ids)
        except InputTypeError:  # refused before scanning (a bool): the decoder is unchanged
            raise
        except TypeError:  # no per-id check on the hot path: a non-integer id fails in the scanner
            raise InputTypeError("ids must be integers; reset() the decoder before reusing it",
                                 field="ids") from None
        # (events already queued - a prefilled ChatML message's MessageStart - go out first, below)
        if not atoms and not self._out:
            res: list[Event] = []
        elif len(atoms) == 1 and type(atoms[0]) is Text and self.fm.state == "content" and self.fm.lean \
                and not self._out:
            res = [self._add(atoms[0].text)]  # one text piece inside the current content
        else:
            self._atoms(atoms, None)
            out = self._out
            res = out[:]
            out.clear()
        fm = self.fm
        if fm.state != "content" or self._done:
            self._ft = None
        elif fm.lean:
            self._ft = self.scanner.fast_text
        else:  # a machine reading structure in the content: only the texts it takes as they are
            ft = self.scanner.fast_text  # None while the scanner holds bytes back
            self._ft = fm.plain_table(ft) if fm.plain and ft is not None else None
        return res

    def finish(self, stop_reason: int | str | None = None, *, eos: bool = False) -> list[Event]:
        """End of stream: flush held bytes; a message still open is truncated.

        Engines that strip the stop token (vLLM...) say why they stopped: ``stop_reason`` (the
        matched stop id or string) or ``eos=True`` (their end-of-sequence token): a stripped
        ``<|return|>`` / ``<|call|>`` is read as if it had been streamed (``Stop``, a complete
        message, ``finish_reason`` ``stop`` / ``tool_calls``); see ``ocml.encoder.stops.engine_stop``.
        """
        if self._done:
            return []
        if stop_reason is None and not eos:
            return self._close_stream(self._end_stream, cut=True)
        fm = self.fm
        h = getattr(fm, "_h", None)  # the open message's header (a call?)
        in_call = fm.state == "calls" or (fm.state == "content" and h is not None
                                          and h.recipient is not None and h.recipient != "all")
        es = engine_stop(self.enc, stop_reason, eos=eos, stop_controls=self._stopping, in_call=in_call)
        out: list[Event] = []
        if es.ids:
            if len(es.ids) > 1 or es.ids[0] not in self._names:
                self._drop_started(self.enc.tokenizer.decode_bytes(list(es.ids)))
            out = self.feed(list(es.ids))  # the stripped control, as the model generated it
            if self._done:  # a stop control (<|return|>, <|call|>...): it stopped as in-stream
                return out
        # a stop string, a stop id, or a control that is no stop here (<|end|> as a stop id): the
        # engine stopped on it on purpose
        key = es.ids[-1] if es.ids else es.stop_id
        named = None if key is None else self._names.get(key)
        token = es.string if es.string is not None else (
            named or ("eos" if stop_reason is None else str(stop_reason)))

        def stop(end: int) -> None:
            if es.string is not None and fm.state == "content":
                fm.close("truncated", end)  # cut on purpose by a stop string: no error (as in-stream)
            else:
                self._end_stream(end)
            self._stop("stop_string" if es.string is not None else "stop_id", token, end, end)

        return out + self._close_stream(stop)

    def _drop_started(self, spelled: bytes) -> None:
        """A stripped control spelled as text (fallback): the engine may have kept the tokens
        that began it (``<|call|`` then ``>``, the stripped last token, in ``<|call|><|start|>``'s
        ``><``); what the scanner holds of its beginning is dropped, the whole spelling is fed."""
        sc = self.scanner
        pend = sc.pending
        k = next((j for j in range(min(len(pend), len(spelled) - 1), 0, -1) if pend.endswith(spelled[:j])), 0)
        if k:
            sc.drop_pending(k)

    def cancel(self, reason: str = "cancelled") -> list[Event]:
        """End the stream on purpose (the client went away, the user pressed stop).

        Held bytes are flushed as text (as ``finish`` does); an open message ends with
        ``MessageEnd(reason="truncated")`` and no ``E-STREAM-TRUNCATED`` error; a header
        still open is reported with its text (lenient mode); then ``Stop(reason="cancel")``.
        ``status`` is then ``cancelled`` and ``cancel_reason`` is ``reason``.  Nothing
        happens (``[]``) once the stream is done.
        """
        if not isinstance(reason, str) or not reason:
            raise InputTypeError(f"reason must be a non-empty string, got {reason!r}", field="reason")
        if self._done:
            return []

        def stop(end: int) -> None:
            self.cancel_reason = reason
            self.fm.cancel(end)
            self._stop("cancel", None, end, end)

        return self._close_stream(stop)

    def _close_stream(self, close: Callable[[int], None], cut: bool = False) -> list[Event]:
        """``finish``/``cancel``: flush held bytes, then ``close(end)`` unless a stop came first.

        ``cut`` (a plain ``finish()``: max tokens): held bytes that could still have become a
        control (``Answer<|ret``) are left out of the open message and given as the text of
        its ``E-STREAM-TRUNCATED`` (``Lexicon.partial_control``; parse does the same)."""
        end = self.scanner.index
        self._ft = None
        sc = self.scanner
        partial = ""
        if cut and self.fm.open_content and not sc.literal:
            k = self.enc.lexicon.partial_control(sc.pending)
            if k:
                partial = sc.drop_pending(k).decode("utf-8", "replace")
        try:
            self._atoms(sc.finish(), end)
            if self.stopped is None:
                self._flush()
                if partial:
                    self._end_stream(end, partial)
                else:
                    close(end)
        finally:  # strict mode raises from here: the stream is over either way
            self.finished = True
            self._done = True
        out = self._out
        res = out[:]
        out.clear()
        return res

    def to_openai(self, call_id_seed: str = "", tools: object = None) -> ChatChoice:
        """The messages so far as an OpenAI Chat Completions choice (``Encoder.to_openai``):
        ``finish_reason`` is None while the stream runs, ``stop`` after ``cancel()``; tool
        call ids are the ones ``enc.to_openai`` gives the same completion; ``tools``: as there."""
        from ..openai_message import project, read_turns

        st = self.stopped
        fm = self.fm
        stop = st.reason if st is not None and st.reason in ("stop_string", "stop_id", "cancel") \
            else self._stopping.get(fm.last_control or "")
        pre = self.prefill_messages
        msgs, ends = ([m for m, _ in pre] + fm.messages, [e for _, e in pre] + fm.ends) if pre \
            else (fm.messages, fm.ends)
        return project(read_turns(self.enc.format, msgs, ends, self.role), ends, stop=stop,
                       stops=self._stopping.values(), done=self._done, call_id_seed=call_id_seed,
                       errors=fm.errors, tools=tools)

    # -- internals ------------------------------------------------------------
    def _atoms(self, atoms: list[Atom], end: int | None) -> None:
        """Route atoms; ``end`` = index after the fed chunk (None: the scanner's index)."""
        fm = self.fm
        out = self._out
        for a in atoms:
            if type(a) is Text:
                if fm.state == "content":
                    if fm.lean:
                        out.append(fm.add_content(a.text))
                    else:  # the machine reads structure in the content (ChatML turns): it emits
                        fm.text(a.text, a.token_index)
                else:
                    self._text(a.text, a.token_index)
                continue
            if type(a) is StopString:
                if fm.state == "content":
                    if self._stoppable():
                        if self.include_stop_str_in_output:
                            self._content(a.text, a.token_index)  # vLLM's option: the stop text is content
                        fm.close("truncated", a.token_index)
                        self._stop("stop_string", a.text, a.token_index, end)
                        return
                    self._content(a.text, a.token_index)
                else:
                    self._text(a.text, a.token_index)
                continue
            # a boundary: text collected outside content goes to the frame machine first
            if self._buf:
                self._flush()
            i = a.token_index
            if type(a) is Control:
                name = a.name
                # literal blocks, stray <|endliteral|>: the rule parse shares (encoder.read.route)
                if not self._router.control(name, i):
                    continue
                reason = self._stopping.get(name)
                if reason is not None:
                    self._stop_at(reason, a, end)
                    return
                if a.via_id and self.stop_ids and self.enc.tokenizer.specials.get(name) in self.stop_ids:
                    # The control itself was processed: after <|end|> nothing is open, and
                    # a <|start|> stop id opened an empty header - not a truncation.  Only
                    # a control that leaves content open (a CoT marker) truncates it.
                    if fm.in_message:
                        self._end_stream(i)
                    self._stop("stop_id", name, i, end)
                    return
            elif type(a) is Special:
                name = self._names.get(a.token_id, f"<special {a.token_id}>")
                if a.token_id in self.stop_ids:
                    # A stop id is the sampler's end of stream: a message still open is
                    # truncated exactly as finish() would truncate it.
                    self._end_stream(i)
                    self._stop("stop_id", name, i, end)
                    return
                self._router.special(name, i)
            elif type(a) is InvalidId:
                self._router.invalid(a.token_id, i)

    def _stop_at(self, reason: str, a: Control, end: int | None) -> None:
        """A stop control (``<|return|>``, ``<|call|>``...) was processed: the stream ends here.

        Read as ``Encoder.parse`` reads the ids up to and including the stop token: the rest
        of that token's bytes (a control spelled as text can end inside a token: ``>\n//``)
        is read after it, and whatever the control left open (it did not end a message: a
        header, a skipped body, a message of another frame) ends as the stream's end - so no
        generated text is dropped without a trace."""
        i = a.token_index
        fm = self.fm
        if fm.state != "expect_start" or fm.has_pending_text:
            self._end_stream(i + 1)
        self._stop(reason, a.name, i, end, a.rest.decode("utf-8", "replace"))

    def _content(self, s: str, pos: int) -> None:
        """Text inside the open message's content (``FrameMachine.lean``: through ``add_content``)."""
        fm = self.fm
        if fm.lean:
            self._out.append(fm.add_content(s))
        else:
            fm.text(s, pos)

    def _literal_text(self, s: str, pos: int) -> None:
        """A control id inside a literal block: its name is text, a run of its own."""
        self._flush()
        self.fm.text(s, pos)

    def _stoppable(self) -> bool:
        """Do stop strings apply to the open message's channel (no channel counts as final)?"""
        sc = self.stop_channels
        return bool(self.stop_strings) and (sc is None or (self.fm.channel or "final") in sc)

    def _text(self, s: str, pos: int) -> None:
        """Text outside content: collect the run until the next boundary (then one ``fm.text``)."""
        if s:
            if not self._buf:
                self._buf_pos = pos
            self._buf.append(s)

    def _flush(self) -> None:
        if self._buf:
            s = "".join(self._buf)
            self._buf.clear()
            self.fm.text(s, self._buf_pos)

    def _end_stream(self, pos: int, partial: str = "") -> None:
        """The stream ends here: the frame machine truncates an open message (E-STREAM-TRUNCATED;
        ``partial``: a control cut by the end, left out of the message)."""
        self._flush()
        fm = self.fm
        n = len(fm.errors)
        try:
            fm.finish(pos, partial)
        except ParseError:  # strict: the caller gets the exception, status still says why
            self._truncated = True
            self._done = True
            raise
        self._truncated = any(e.code == "E-STREAM-TRUNCATED" for e in fm.errors[n:])

    def _stop(self, reason: str, token: str | None, pos: int, end: int | None, rest: str = "") -> None:
        self._ft = None
        self._flush()
        if end is None:
            end = self.scanner.index
        self._done = True
        ev = Stop(reason, token, pos, max(end - pos - 1, 0), rest)
        self.stopped = ev
        self._out.append(ev)

