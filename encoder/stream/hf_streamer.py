"""transformers' ``generate(streamer=...)``: the generated ids read by ocml's stream decoder.

``hf_streamer(enc)`` is a ``BaseStreamer`` (when transformers is installed) that feeds each row's
ids to a ``Chunker`` (OpenAI ``chat.completion.chunk`` dicts) or a ``StreamDecoder`` (events) and
is iterable like ``TextIteratorStreamer``; ``ocml.stops.hf_streamer`` is this function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocml.vocab import UnknownNameError
from ocml.vocab.errors import expect

from ..errors import InputError, InputTypeError, StreamError
from ..stops.hf_criteria import hf_class

if TYPE_CHECKING:
    from ..codec import Codec

__all__ = ["hf_streamer"]


_END = object()


class _Failure:
    """An exception raised in ``generate()``'s thread, queued for the consumer (``OcmlStreamer``)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _make_streamer_class(base: type) -> type:
    class OcmlStreamer(base):  # type: ignore[misc]  # a run-time base: transformers' BaseStreamer, or object
        """A ``generate(streamer=...)`` streamer that reads the ids with ocml's decoder (see ``hf_streamer``)."""

        def __init__(self, enc: Codec, *, output: str = "chunks", role: str | None = "assistant",
                     prefill: bool = False, timeout: float | None = None, **chunker_kw: Any) -> None:
            from ..codec import Codec

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
            from ..openai_chunks import Chunker
            from .decoder import StreamDecoder

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
            from ..openai_chunks import Chunker
            from .decoder import StreamDecoder

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
    base = hf_class("transformers.generation.streamers", "BaseStreamer", needs_torch=False) or object
    return _make_streamer_class(base)(enc, output=output, role=role, prefill=prefill, timeout=timeout, **kw)
