"""What a sampler stops on, for each format and tokenizer.

The stop controls are data (``stops`` in ``encoder/formats/<pkg>/<format>.tokens.json``), so every
format has them, renderable or not.  In Harmony / OpenChatML an assistant turn ends at
``<|return|>`` (final answer) or ``<|call|>`` (tool call); ``<|end|>`` ends a *message*
but generation goes on (analysis -> final), so it is not a stop in the default
``mode="assistant"`` (stopping there gives empty answers after the analysis message; see
the decoding note, failure #25).  ``mode="all"`` adds ``<|end|>`` for callers that want
every message boundary.  Every function takes an ``Encoder``, or a format name plus an
optional tokenizer (default: the format's own).

Registered controls stop by id (``stop_ids``); controls the tokenizer does not have
(fallback mode, the control is spelled as ordinary text) stop by string
(``stop_strings``).  ``vllm_sampling_kwargs`` and ``hf_stopping_criteria`` package both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ocml.vocab import Tokenizer, UnknownNameError, canonical_format
from ocml.vocab.errors import expect

from .errors import InputError, InputTypeError, StreamError
from .stream.engine_stop import EngineStop, engine_stop  # how a stripped stop ends a stream: beside the decoder
from .grammar.terminators import terminators_of

if TYPE_CHECKING:
    from .codec import Codec

__all__ = ["EngineStop", "engine_stop", "first_stop", "hf_stopping_criteria", "hf_streamer", "stop_ids", "stop_strings", "stop_tokens",
           "vllm_sampling_kwargs"]

def _tokenizer(enc: Codec | str, tokenizer: Tokenizer | None) -> Tokenizer:
    """The tokenizer given, else the encoder's, else the format's default."""
    if isinstance(tokenizer, str):
        from ocml.vocab import load

        return load(tokenizer)
    if tokenizer is not None:
        expect(tokenizer, Tokenizer, "tokenizer", "a vocab.Tokenizer or an encoding name")
        return tokenizer
    if isinstance(enc, str):
        from .codec import default_tokenizer

        return default_tokenizer(canonical_format(enc))
    return _encoder(enc).tokenizer


def _encoder(enc: Any) -> Codec:
    from .codec import Codec

    expect(enc, Codec, "enc", "an Encoder or a format name")
    return enc


def stop_tokens(enc: Codec | str, mode: str = "assistant") -> tuple[str, ...]:
    """The stop controls of a format (an ``Encoder`` or a format name) for ``mode``.

    Data, not code: ``stops`` in ``encoder/formats/<pkg>/<format>.tokens.json`` (the tables:
    ``ocml.encoder.grammar.terminators``).  ``"assistant"``
    ends the model's turn (Harmony / OpenChatML: ``<|return|>``, ``<|call|>``; ChatML:
    ``<|im_end|>``; Apertus: ``<|assistant_end|>``, ``<|tools_suffix|>``); ``"all"`` adds
    the other boundaries (``<|end|>``...).
    """
    return terminators_of(enc if isinstance(enc, str) else _encoder(enc).format_name).sampler_stops(mode)


def stop_ids(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> list[int]:
    """Registered ids of the stop controls; a format name works for formats ocml cannot
    render yet (``stop_ids("apertus", tokenizer=vocab.from_hf(...))``)."""
    tok = _tokenizer(enc, tokenizer)
    out: list[int] = []
    for name in stop_tokens(enc, mode):
        i = tok.control_id(name)  # None exactly for the text controls (fallback)
        if i is not None and 0 <= i < tok.n_vocab:
            out.append(i)
    return out


def stop_strings(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> list[str]:
    """Text spellings of the stop controls that are **not** registered (fallback mode)."""
    tok = _tokenizer(enc, tokenizer)
    return [n for n in stop_tokens(enc, mode) if tok.control_id(n) is None]


def first_stop(enc: Codec, ids: Any, role: str | None = "assistant") -> int:
    """How many of ``ids`` the turn has: up to and including the token of its first stop (the
    format's stop controls for ``role``, by id or, in fallback mode, spelled in the text), or
    ``len(ids)`` when it never stops.  Read as the stream decoder reads them, so
    ``enc.to_openai(ids[:first_stop(enc, ids)])`` is the stream's message for a batch row that
    went on generating after its stop (``enc.to_openai(ids, until_stop=True)`` does that)."""
    from .events import Stop
    from .stream.decoder import StreamDecoder

    dec = StreamDecoder(_encoder(enc), role=role)
    stop = next((e for e in dec.feed(ids) if isinstance(e, Stop)), None)
    return len(ids) if stop is None else stop.position + 1


def vllm_sampling_kwargs(enc: Codec | str, mode: str = "assistant",
                         tokenizer: Tokenizer | None = None) -> dict[str, Any]:
    """``SamplingParams(**kw)`` fields: ``stop_token_ids`` and ``stop`` (strings).

    The stop strings only exist in fallback mode; vLLM trims them from the output
    unless ``include_stop_str_in_output=True``.
    """
    return {"stop_token_ids": stop_ids(enc, mode, tokenizer), "stop": stop_strings(enc, mode, tokenizer)}


def _make_criteria_class(base: type) -> type:
    class OcmlStoppingCriteria(base):
        """Stops a sequence when its last id is a stop id or its text ends with a stop string.

        With torch, ``__call__(input_ids, scores)`` takes the usual ``LongTensor``
        ``[batch, seq]`` and returns a ``BoolTensor`` ``[batch]`` (transformers >= 4.39).
        Without torch it accepts any ``[batch][seq]`` sequence / numpy array and returns
        a numpy bool array.  Stop strings are matched over the decoded bytes of the
        last ``window`` ids, so a string split over several tokens or ending inside a
        token is found (TGI#1039); the window is the longest stop string in bytes plus one
        token, enough since every token has at least one byte.
        """

        def __init__(self, ids: Sequence[int], strings: Sequence[str], decode_bytes: Any) -> None:
            try:
                super().__init__()
            except TypeError:  # pragma: no cover - odd base classes
                pass
            self.stop_ids = frozenset(int(i) for i in ids)
            self.stop_strings = tuple(s.encode() for s in strings)
            self.window = max((len(s) for s in self.stop_strings), default=0) + 1
            self._decode_bytes = decode_bytes

        def _row(self, row: Sequence[int]) -> bool:
            if not len(row):
                return False
            if int(row[-1]) in self.stop_ids:
                return True
            if self.stop_strings:
                tail = [int(i) for i in row[-self.window:]]
                try:
                    data = self._decode_bytes(tail)
                except Exception:  # invalid ids: decode what can be decoded
                    data = self._decode_bytes([i for i in tail if i not in self.stop_ids and i >= 0])
                last = self._decode_bytes([tail[-1]]) if tail[-1] >= 0 else b""
                for s in self.stop_strings:
                    k = data.rfind(s)
                    # only a match completed by the last token counts (earlier ones fired earlier)
                    if k >= 0 and k + len(s) > len(data) - len(last):
                        return True
            return False

        def __call__(self, input_ids: Any, scores: Any = None, **kwargs: Any) -> Any:
            import numpy as np

            rows = input_ids.tolist() if hasattr(input_ids, "tolist") else input_ids
            done = np.array([self._row(r) for r in rows], dtype=bool)
            if type(input_ids).__module__.startswith("torch"):
                import torch

                return torch.from_numpy(done).to(input_ids.device)
            return done

    return OcmlStoppingCriteria


def _hf_class(module: str, name: str, needs_torch: bool) -> type | None:
    """transformers' real ``module.name``, or None where it cannot be used.

    "torch imports" is not enough: ``from transformers import StoppingCriteria`` gives a
    dummy class (its ``__init__`` raises) when transformers decided at import time that
    torch is unavailable, and that decision sticks for the process.  So the class is taken
    from its own module (which imports torch itself) and refused if it is a dummy.
    """
    import importlib

    try:
        if needs_torch:
            import torch  # noqa: F401
        cls = getattr(importlib.import_module(module), name)
    except Exception:
        return None
    if not isinstance(cls, type) or type(cls).__name__ == "DummyObject":
        return None
    return cls


def hf_stopping_criteria(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> Any:
    """A ``transformers.StoppingCriteria`` for ``generate(stopping_criteria=[...])``.

    transformers (and torch) are imported lazily; when either is missing the
    returned object has the same interface on a plain base class, which is handy for
    tests and for samplers that call it with lists or numpy arrays.  In a batch each row
    stops on its own (``generate`` keeps going until every row is done).
    """
    base = _hf_class("transformers.generation.stopping_criteria", "StoppingCriteria", needs_torch=True) or object
    cls = _make_criteria_class(base)
    tok = _tokenizer(enc, tokenizer)
    return cls(stop_ids(enc, mode, tok), stop_strings(enc, mode, tok), tok.decode_bytes)


_END = object()


class _Failure:
    """An exception raised in ``generate()``'s thread, queued for the consumer (``OcmlStreamer``)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _make_streamer_class(base: type) -> type:
    class OcmlStreamer(base):
        """A ``generate(streamer=...)`` streamer that reads the ids with ocml's decoder (see ``hf_streamer``)."""

        def __init__(self, enc: Codec, *, output: str = "chunks", role: str | None = "assistant",
                     prefill: bool = False, timeout: float | None = None, **chunker_kw: Any) -> None:
            from .codec import Codec

            expect(enc, Codec, "enc", "an Encoder")
            if output not in ("chunks", "events"):
                raise UnknownNameError(f"unknown streamer output {output!r}", field="output",
                                       hint="'chunks' (OpenAI chat.completion.chunk dicts) or 'events' (ocml events)")
            if prefill is not True and prefill is not False:
                raise InputTypeError(f"prefill must be True or False, got {prefill!r}", field="prefill",
                                     hint="True when the prompt ends inside an open message (render mode="
                                          "'continue', apply_chat_template(continue_final_message=True))")
            if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
                raise InputTypeError(f"timeout must be a positive number of seconds or None, got {timeout!r}",
                                     field="timeout")
            import queue

            self.enc = enc
            self.output = output
            self.role = role
            self.prefill = prefill
            self.timeout = timeout
            self.chunker_kw = chunker_kw
            self._probe()  # every argument checked here, in the caller's thread, not in generate()'s
            self.queue: queue.Queue[Any] = queue.Queue()
            self.streams: list[Any] = []   # one Chunker (chunks) or StreamDecoder (events) per row
            self._prompt_seen = False
            self._failed = False

        def _probe(self) -> None:
            """Build one stream with the arguments given (``include_usage`` without ``prompt_tokens``:
            the prompt's length, known at the first ``put``)."""
            from .openai_chunks import Chunker
            from .stream.decoder import StreamDecoder

            if self.output == "chunks":
                kw = dict(self.chunker_kw)
                kw.setdefault("prompt_tokens", 0)
                Chunker(self.enc, role=self.role, **kw)
            else:
                StreamDecoder(self.enc, role=self.role, **self.chunker_kw)

        # -- BaseStreamer ----------------------------------------------------------------
        # generate() calls put / end in its own thread: an exception there would end that thread
        # and leave the consumer waiting forever, so it is also queued and re-raised by __next__.
        def put(self, value: Any) -> None:
            try:
                self._put(value)
            except BaseException as exc:
                self._fail(exc)
                raise

        def end(self) -> None:
            try:
                for r, s in enumerate(self.streams):
                    self._send(r, s.finish())
            except BaseException as exc:
                self._fail(exc)
                raise
            self.queue.put(_END)

        def _fail(self, exc: BaseException) -> None:
            self._failed = True
            self.queue.put(_Failure(exc))

        def _put(self, value: Any) -> None:
            if self._failed:
                raise StreamError("the streamer failed earlier; its error was given to the consumer",
                                  hint="start a new generate() with a new streamer")
            rows = value.tolist() if hasattr(value, "tolist") else list(value)
            if not self._prompt_seen:  # generate() sends the prompt first: [batch, prompt_len]
                self._prompt_seen = True
                prompts = rows if rows and isinstance(rows[0], list) else [rows]
                self._open(prompts)
                return
            if len(rows) != len(self.streams):
                raise InputError(f"the streamer got {len(rows)} rows after a prompt of {len(self.streams)}",
                                 field="value")
            for r, ids in enumerate(rows):
                self._send(r, self.streams[r].feed(ids if isinstance(ids, list) else [ids]))

        # -- iteration, like TextIteratorStreamer ---------------------------------------------
        def __iter__(self) -> OcmlStreamer:
            return self

        def __next__(self) -> Any:
            item = self.queue.get(timeout=self.timeout)
            if item is _END:
                raise StopIteration
            if type(item) is _Failure:
                self.queue.put(_END)  # raised once; then the iteration is over
                raise item.exc
            return item

        # -- internals -------------------------------------------------------------------
        def _open(self, prompts: list[list[int]]) -> None:
            if self.output == "events" and len(prompts) != 1:
                raise InputError(f"output='events' streams one sequence, got a batch of {len(prompts)}",
                                 field="output", hint="output='chunks' streams a batch (choices[0].index = row)")
            from .openai_chunks import Chunker
            from .stream.decoder import StreamDecoder

            self.streams = []
            for r, prompt in enumerate(prompts):
                kw: dict[str, Any] = {"prefill": prompt} if self.prefill else {"role": self.role}
                if self.output == "chunks":
                    if self.chunker_kw.get("include_usage") and "prompt_tokens" not in self.chunker_kw:
                        kw["prompt_tokens"] = len(prompt)  # the prompt generate() sent (pad ids included)
                    self.streams.append(Chunker(self.enc, index=r, **kw, **self.chunker_kw))
                else:
                    self.streams.append(StreamDecoder(self.enc, **kw, **self.chunker_kw))

        def _send(self, row: int, items: list[Any]) -> None:
            for it in items:
                self.queue.put(it)

    return OcmlStreamer


def hf_streamer(enc: Codec, *, output: str = "chunks", role: str | None = "assistant", prefill: bool = False,
                timeout: float | None = None, **kw: Any) -> Any:
    """A ``transformers`` streamer for ``model.generate(..., streamer=...)`` that reads the generated
    ids with ocml's stream decoder, iterable like ``TextIteratorStreamer``::

        streamer = ocml.stops.hf_streamer(enc, model="my-model")
        Thread(target=model.generate, kwargs=dict(input_ids=prompt, streamer=streamer,
               stopping_criteria=[ocml.stops.hf_stopping_criteria(enc)], max_new_tokens=256)).start()
        for chunk in streamer:               # OpenAI chat.completion.chunk dicts
            ...

    ``generate`` sends the prompt first (skipped: it only sizes the batch, or with
    ``prefill=True`` - a prompt that ends inside an open message, ``mode="continue"`` /
    ``continue_final_message=True`` - puts each row's decoder there), then each step's ids.
    ``output="chunks"`` (default) yields ``chat.completion.chunk`` dicts (``enc.chunker``;
    a batch row is ``choices[0].index``; ``model=``, ``id=``, ``include_usage=``... go to
    the chunker), the last one with ``finish_reason``; ``output="events"`` yields the
    decoder's events (one sequence).  Ids after a row's stop (``generate`` pads finished
    rows) are ignored.  ``timeout``: seconds ``next()`` waits (``queue.Empty`` after it).
    Arguments are checked here (the chunker's / decoder's, by building one); an error inside
    ``generate()``'s thread (``put`` / ``end``) is raised there and also by the consumer's ``next()``,
    which never waits for ever on a streamer that failed.  ``include_usage=True`` without
    ``prompt_tokens``: each row's prompt length as ``generate()`` sent it.
    A subclass of ``transformers.generation.streamers.BaseStreamer`` when transformers is
    installed (no torch needed to build it).
    """
    base = _hf_class("transformers.generation.streamers", "BaseStreamer", needs_torch=False) or object
    return _make_streamer_class(base)(enc, output=output, role=role, prefill=prefill, timeout=timeout, **kw)
