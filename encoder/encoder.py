"""``Encoder``: one format + one tokenizer -> render, parse, text transcripts, stops.

The public facade: rendering lives here, every other feature in its own module, which this
one imports and dispatches to.  ``Encoder`` is a ``Codec`` (``ocml.encoder.codec``: format +
tokenizer + derived tables), the leaf the features take, so no feature imports this module
back.  It inherits rather than wraps a codec so ``self`` is what the features get (no
attribute forwarding on the hot paths) and functions that took an ``Encoder``
(``parse_ids(enc, ...)``, ``StreamDecoder(enc)``) still do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ocml import vocab
from ocml.vocab import Tokenizer, canonical_format
from ocml.vocab.errors import as_enum, expect

from .adapters import SHAPES, relocate
from .batch import Batch
from .codec import Codec, default_tokenizer
from .cot import dropped as cot_dropped, parse_cot
from .errors import InputError, InputTypeError, OcmlError
from .formats import format_class
from .gcpolicy import rendering
from .inputs import layout as record_layout
from .inputs.shapes import RECORD_SHAPES, ShapeOptions
from .masks import MaskPolicy
from .messages import Conversation, CotPolicy, Mode
from .prefill import check_continuable
from .render import Renderer, RenderJob, RenderResult


def _mode(mode: Mode | str) -> Mode:
    return as_enum(mode, Mode, "mode", "mode")


def _check_format_options(cls: type, options: dict[str, Any]) -> None:
    """``Encoder(foo=1)``: a typed error naming the argument, not a TypeError from deep inside."""
    import inspect

    accepted = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "validate_bodies"]
    for name in options:
        if name not in accepted:
            from .adapters import suggest

            raise InputError(f"Encoder got an unknown argument {name!r} for format {cls.name!r}",  # type: ignore[attr-defined]
                             code="E-INPUT-ARGUMENT", field=name,
                             hint=suggest(name, [*accepted, "mask", "cot", "threads", "validate_bodies", "tokenizer"])
                             + "arguments: tokenizer, mask, cot, validate_bodies, threads"
                             + "".join(", " + a for a in accepted))


def _rebuild_encoder(format_name: str, tokenizer: Tokenizer, options: dict[str, Any]) -> Encoder:
    return Encoder(format_name, tokenizer, **options)


class Encoder(Codec):
    """Render conversations to ids + masks (and back) for one format and tokenizer.

    ``tokenizer``: a ``ocml.vocab.Tokenizer``, a name or ``.tiktoken`` path for ``ocml.vocab.load``, an HF
    tokenizer folder or ``tokenizer.json`` for ``ocml.vocab.from_hf`` (loaded as is: a tokenizer
    without the format's controls means fallback mode), or None for the format's
    default (controls registered).  ``threads``: how many threads may encode the long
    text of one render or batch chunk (default ``$OCML_NUM_THREADS`` or 1 = never start
    a thread; see ``ocml.encoder.textenc``).
    """

    def __init__(
        self,
        format: str = "openchatml-2.2",
        tokenizer: Tokenizer | str | None = None,
        *,
        mask: MaskPolicy | str | dict | None = None,
        cot: CotPolicy | str | None = None,
        validate_bodies: bool = True,
        threads: int | None = None,
        shape: str = "auto",
        shape_options: ShapeOptions | dict | None = None,
        **format_options: Any,
    ) -> None:
        format_name = canonical_format(format)
        if tokenizer is None:
            tokenizer = default_tokenizer(format_name)
        elif isinstance(tokenizer, str):
            # an HF tokenizer folder (save_pretrained) or tokenizer.json, else an encoding name / .tiktoken path
            hf = tokenizer.endswith("tokenizer.json") or os.path.isdir(tokenizer)
            tokenizer = vocab.from_hf(tokenizer) if hf else vocab.load(tokenizer)
        expect(tokenizer, Tokenizer, "tokenizer", "a vocab.Tokenizer, an encoding name or None")
        if shape not in SHAPES and shape not in RECORD_SHAPES:
            raise vocab.UnknownNameError(f"unknown input shape {shape!r}", field="shape",
                                         hint="'auto' (default), 'chat' (OpenAI / HF chat data), 'native', or a "
                                              "record shape: " + ", ".join(RECORD_SHAPES))
        self.shape = shape
        # How messages are read: a forced record shape (encoder.inputs) reads its messages as 'auto'.
        self.message_shape = shape if shape in SHAPES else "auto"
        self.shape_options = ShapeOptions.parse(shape_options)  # the record shapes' options (encoder.inputs)
        cls = format_class(format_name)
        _check_format_options(cls, format_options)
        Codec.__init__(self, format_name, tokenizer, cls(tokenizer, validate_bodies=validate_bodies, **format_options))
        self.mask = self._mask(mask)
        self.cot = self._cot(cot)
        self.renderer = Renderer(self.format, tokenizer, threads)
        # The recipe ``__reduce__`` ships to worker processes (the tokenizer pickles as its own recipe).
        self._options: dict[str, Any] = dict(format_options, mask=self.mask, cot=self.cot,
                                             validate_bodies=validate_bodies, threads=threads, shape=shape,
                                             shape_options=self.shape_options)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle small (format name, tokenizer recipe, options), never vocabularies or caches:
        # a worker rebuilds the encoder once from its own per-process tokenizer cache.
        return (_rebuild_encoder, (self.format_name, self.tokenizer, self._options))

    def __repr__(self) -> str:
        return f"<Encoder {self.format_name} on {self.tokenizer!r}>"

    def _mask(self, mask: MaskPolicy | str | dict | None) -> MaskPolicy:
        """A mask policy this format applies (one it would ignore is a usage error)."""
        policy = MaskPolicy.parse(mask)
        why = self.format.mask_unsupported(policy)
        if why is not None:
            raise InputError(f"mask {mask!r} has no effect with {self.format_name}: {why}", code="E-INPUT-ARGUMENT",
                             field="mask", hint="use the default mask, 'last' or 'none' (or a roles / last_turn_only "
                                                "policy)")
        return policy

    def _cot(self, cot: CotPolicy | str | None) -> CotPolicy:
        """A CoT policy this format applies (one it would ignore is a usage error)."""
        policy = parse_cot(cot)
        allowed = self.format.cot_policies()
        if policy not in allowed:
            raise InputError(f"cot={policy.value!r} has no effect with {self.format_name}"
                             + (f" (reasoning={self.format.reasoning.value!r})" if hasattr(self.format, "reasoning")
                                else ""),
                             code="E-INPUT-ARGUMENT", field="cot",
                             hint="here cot may be " + ", ".join(p.value for p in allowed))
        return policy

    # -- rendering -------------------------------------------------------------
    def prepare(self, conversation: Any, cot: CotPolicy | str | None = None) -> tuple[Conversation, list[int]]:
        """Normalised, validated conversation and the indices of the messages to render."""
        given = self.format.read(conversation, self.message_shape)
        policy = self.cot if cot is None else self._cot(cot)
        if self.format.inline_reasoning:  # reasoning joins its answer's frame: the CoT policy applies first
            pre = cot_dropped(given.messages, policy)
            if pre:
                given = Conversation(tuple(m for k, m in enumerate(given.messages) if k not in pre), given.options,
                                     chat=given.chat)
        try:
            conv = self.format.normalize(given)
        except OcmlError as exc:
            raise relocate(exc, given.messages) from None
        try:
            self.format.validate(conv)
        except OcmlError as exc:
            raise relocate(exc, conv.messages) from None
        drop = cot_dropped(conv.messages, policy)
        keep = [i for i in range(len(conv.messages)) if i not in drop]
        return conv, keep

    def _layout(self, conversation: Any, mode: Mode, cot: CotPolicy | str | None,
                mask: MaskPolicy | None) -> RenderJob:
        if type(conversation) is not list and record_layout.wants(self, conversation):
            # prompt/completion, Alpaca, text records (encoder.inputs)
            return record_layout.layout_record(self, conversation, mode, cot, mask)
        return self._layout_conversation(conversation, mode, cot, mask)

    def _layout_conversation(self, conversation: Any, mode: Mode, cot: CotPolicy | str | None,
                             mask: MaskPolicy | None) -> RenderJob:
        conv, keep = self.prepare(conversation, cot)
        msgs = conv.messages
        kept = msgs if len(keep) == len(msgs) else [msgs[i] for i in keep]
        flags = self.format.message_flags(kept, self.mask if mask is None else mask)
        dropped = () if len(keep) == len(msgs) else tuple(sorted(set(range(len(msgs))).difference(keep)))
        if mode is Mode.CONTINUE:
            check_continuable(conv, keep)
        try:
            return self.renderer.layout(conv, keep, flags, mode in (Mode.TRAIN, Mode.CONTINUE), mode is Mode.PROMPT,
                                        dropped, open_last=mode is Mode.CONTINUE)
        except OcmlError as exc:
            raise relocate(exc, msgs) from None

    def render(self, conversation: Any, mode: Mode | str = "train", *, cot: CotPolicy | str | None = None,
               mask: MaskPolicy | str | dict | None = None) -> RenderResult:
        policy = None if mask is None else self._mask(mask)
        return self.renderer.assemble([self._layout(conversation, _mode(mode), cot, policy)])[0]

    def render_batch(self, conversations: Iterable[Any], mode: Mode | str = "train", *,
                     cot: CotPolicy | str | None = None, mask: MaskPolicy | str | dict | None = None,
                     errors: str = "raise", chunk: int = 256) -> Batch:
        """Render many conversations (the data-preparation path).

        ``errors="collect"`` records bad inputs (by index) and goes on.  Conversations are
        laid out, encoded and assembled ``chunk`` at a time, so numpy and thread hand-off
        costs are paid per chunk; each result's arrays are views into its chunk's arrays.
        """
        if errors not in ("raise", "collect"):
            raise vocab.UnknownNameError(f"errors={errors!r}", field="errors", hint="'raise' or 'collect'")
        if type(chunk) is not int or chunk < 1:
            raise InputError(f"chunk={chunk!r} must be an integer >= 1", field="chunk")
        if isinstance(conversations, (str, bytes, dict)) or not hasattr(conversations, "__iter__"):
            raise InputTypeError("conversations must be an iterable of conversations, got "
                                 f"{type(conversations).__name__}", field="conversations",
                                 hint="render(conversation) renders one")
        m = _mode(mode)
        policy = None if mask is None else self._mask(mask)
        cot = self._cot(cot) if cot is not None else None
        out = Batch([])
        pending: list[tuple[int, RenderJob]] = []

        def flush() -> None:
            for (slot, _), res in zip(pending, self.renderer.assemble([j for _, j in pending])):
                out.results[slot] = res
            pending.clear()

        # The cyclic collector off for each chunk (``gcpolicy``): its passes over the short-lived
        # render objects find nothing to free (6-10% of a batch); between chunks it is back on and
        # collects the young generation, so cyclic garbage stays bounded by one chunk.
        items = enumerate(conversations)
        more = True
        while more:
            with rendering():
                for i, conv in items:
                    out.results.append(None)
                    try:
                        pending.append((i, self._layout(conv, m, cot, policy)))
                    except OcmlError as exc:
                        if errors == "raise":
                            raise
                        out.errors.append((i, exc))
                    if len(pending) >= chunk:
                        break
                else:
                    more = False
                if pending:
                    flush()
        return out

    # -- the other direction -------------------------------------------------------
    def parse(self, ids: Sequence[int] | np.ndarray, *, strict: bool = False,
              role: str | None = None, errors: str = "ignore") -> Any:
        """ids -> messages.  ``role``: the prefilled ``<|start|>ROLE`` (None when the ids
        start with ``<|start|>``).  ``errors``: ``"ignore"`` (default: lenient, a list of
        messages), ``"collect"`` (lenient, a ``ParseResult`` with ``.messages``, ``.ends``
        and ``.errors``: every problem, with the text it left out of the messages),
        ``"raise"`` (same as ``strict=True``: ``ParseError`` on the first problem)."""
        from .parse import error_mode, parse_ids

        strict, detailed = error_mode(strict, errors)
        return parse_ids(self, ids, strict=strict, role=role, detailed=detailed)

    def to_openai(self, ids: Sequence[int] | np.ndarray, *, role: str | None = "assistant", strict: bool = False,
                  call_id_seed: str = "", tools: Any = None, until_stop: bool = False) -> Any:
        """Completion ids -> an OpenAI Chat Completions choice (``ocml.encoder.openai_message.ChatChoice``):
        ``.message`` (``content``, ``reasoning_content``, ``tool_calls``), ``.finish_reason``
        (``stop`` | ``tool_calls`` | ``length``) and ``.errors``.  ``role``: the prefilled
        ``<|start|>ROLE``; ``call_id_seed``: mixed into generated tool call ids (e.g. the request id);
        ``tools``: the request's tools (unknown tools, invalid arguments reported); ``until_stop``:
        read only up to the first stop (a row that went on after it)."""
        from .openai_message import to_openai

        if until_stop is not True and until_stop is not False:
            raise InputTypeError(f"until_stop must be True or False, got {until_stop!r}", field="until_stop")
        if until_stop:
            from .stops import first_stop

            ids = ids[:first_stop(self, ids, role=role)]
        return to_openai(self, ids, role=role, strict=strict, call_id_seed=call_id_seed, tools=tools)

    def to_interchange(self, ids: Sequence[int] | np.ndarray, *, role: str | None = "assistant",
                       strict: bool = False) -> list[dict[str, Any]]:
        """Completion ids -> OpenChatML 2.2 §10 JSON objects (content, thinking, tool_call, intent).

        ``role``: the prefilled ``<|start|>ROLE`` (None when the ids start with ``<|start|>``).
        Only calls that ended in ``<|call|>`` become ``tool_call``.  For messages you already
        have: ``ocml.encoder.interchange.to_interchange(messages)``.
        """
        from .interchange import parse_interchange

        return parse_interchange(self, ids, role=role, strict=strict)

    def to_text(self, conversation: Any, mode: Mode | str = "history", *, cot: CotPolicy | str | None = "keep-all",
                header: bool = True) -> str:
        from .transcript import to_text

        if cot in ("keep-all", CotPolicy.KEEP_ALL) and CotPolicy.KEEP_ALL not in self.format.cot_policies():
            cot = None  # the transcript default: this format has no reasoning to keep
        return to_text(self, conversation, mode=_mode(mode), cot=cot, header=header)

    def render_fim(self, prefix: str, suffix: str, middle: str | None = None, *, order: str = "psm",
                   files: Sequence[Any] = (), path: str | None = None, end: str | None = "</s>") -> RenderResult:
        """A fill-in-the-middle document (``chatml``; ``ocml.encoder.formats.chatml_fim``).

        ``order``: ``psm`` | ``spm`` | ``sp`` | ``openchatml`` (the spec's layout, storage only);
        ``middle`` None = the prompt (ends where the model starts the middle), else a training
        document where the middle and ``end`` (the end-of-middle token) are trained.
        ``files``: earlier files (strings or ``{"path", "content"}``) before ``<|file_separator|>``;
        ``path``: the path of the document being completed.  ``message_index`` is the file
        number (the document itself comes last).
        """
        entries = self.format.fim_pieces(prefix=prefix, suffix=suffix, middle=middle, order=order, files=files,
                                         path=path, end=end)
        return self.renderer.assemble([self.renderer.layout_pieces(entries, Conversation(()))])[0]

    def parse_fim(self, ids: Sequence[int] | np.ndarray, *, prefix: str | None = None) -> Any:
        """ids of a fill-in-the-middle document -> ``FimDocument`` (``chatml``).  In the ``spm`` /
        ``sp`` orders the prefix and the middle are one text run: pass the known ``prefix`` to split it."""
        from .formats.chatml_fim import parse_fim

        return parse_fim(self, ids, prefix=prefix)

    def parse_text(self, text: str, *, strict: bool = False) -> Conversation:
        from .transcript import parse_text

        return parse_text(self, text, strict=strict)

    # -- inference side ----------------------------------------------------------------
    def stop_ids(self, mode: str = "assistant") -> list[int]:
        """Ids a sampler stops on: the turn-ending controls that are registered."""
        from .stops import stop_ids

        return stop_ids(self, mode)

    def stop_strings(self, mode: str = "assistant") -> list[str]:
        """Stop controls spelled as text (fallback mode): for samplers' string stops."""
        from .stops import stop_strings

        return stop_strings(self, mode)

    def decoder(self, role: str | None = None, **kw: Any) -> Any:
        """A stream decoder (``ocml.encoder.stream.decoder.StreamDecoder``): ``feed(ids)`` / ``finish(stop_reason=None,
        eos=False)`` -> events.  ``prefill=``: a ``render(..., mode="continue")`` result (or the messages)
        whose open last message the stream continues (``ocml.encoder.prefill``)."""
        from .stream.decoder import StreamDecoder

        return StreamDecoder(self, role=role, **kw)

    def chunker(self, role: str | None = "assistant", **kw: Any) -> Any:
        """OpenAI ``chat.completion.chunk`` dicts for a stream (``ocml.encoder.openai_chunks.Chunker``):
        ``feed(ids)`` / ``finish(stop_reason=None, eos=False)`` -> list of chunks."""
        from .openai_chunks import Chunker

        return Chunker(self, role=role, **kw)

    # -- HF export (encoder.template) ----------------------------------------------------
    def chat_template(self, training: bool = False) -> str:
        """The Jinja chat template that gives this encoder's ids (``training=True``: with
        ``{% generation %}`` blocks around exactly the tokens its mask trains)."""
        from .template import chat_template

        return chat_template(self, training=training)

    def save_pretrained(self, directory: Any) -> Any:
        """Write a folder ``AutoTokenizer.from_pretrained`` loads offline: tokenizer, both chat
        templates, eos = the format's stop token, ``generation_config.json`` with the stop ids."""
        from .template import save_pretrained

        return save_pretrained(self, directory)
