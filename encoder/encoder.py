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
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ocml import vocab
from ocml.vocab import DEFAULT_FORMAT, Tokenizer, canonical_format
from ocml.vocab.errors import as_enum, expect

from .adapters import SHAPES, relocate
from .batch import Batch
from .codec import Codec, default_tokenizer
from .cot import dropped as cot_dropped, parse_cot
from .errors import InputError, InputTypeError, OcmlError
from .formats import format_class
from .jsonlimits import reraise
from .inputs import layout as record_layout
from .inputs.shapes import RECORD_SHAPES, ShapeOptions
from .grammar.terminators import StopMode
from .masks import MaskPolicy, MaskSpec
from .messages import Conversation, CotName, CotPolicy, Message, Mode, ModeName
from .prefill import check_continuable
from .render import Renderer, RenderJob, RenderResult

if TYPE_CHECKING:  # the return types of the features imported where they are called
    from pathlib import Path

    from .formats.chatml.fim import FimDocument, FimOrderName
    from .openai_chunks import Chunker
    from .openai_message import ChatChoice
    from .parse import ParseErrors, ParseResult
    from .stream.decoder import StreamDecoder

#: ``errors=`` of ``render_batch``
BatchErrors = Literal["raise", "collect"]


def _mode(mode: Mode | ModeName) -> Mode:
    return as_enum(mode, Mode, "mode", "mode")


def _check_format_options(cls: type, options: dict[str, Any]) -> None:
    """``Encoder(foo=1)``: a typed error naming the argument, not a TypeError from deep inside."""
    import inspect

    accepted = [p.name for p in inspect.signature(cls).parameters.values()
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

    ``format``: a format name (``ocml.vocab.FORMAT_NAMES`` or an alias such as ``gpt-oss``);
    omitted, ``DEFAULT_FORMAT`` (``"openchatml-2.2"``, the format ``ocml pack`` also defaults to).
    ``tokenizer``: a ``ocml.vocab.Tokenizer``, a name or ``.tiktoken`` path for ``ocml.vocab.load``, an HF
    tokenizer folder or ``tokenizer.json`` for ``ocml.vocab.from_hf`` (loaded as is: a tokenizer
    without the format's controls means fallback mode), or None for the format's
    default (controls registered).  ``threads``: how many threads may encode the long
    text of one render or batch chunk (default ``$OCML_NUM_THREADS`` or 1 = never start
    a thread; see ``ocml.encoder.textenc``).
    """

    def __init__(
        self,
        format: str = DEFAULT_FORMAT,
        tokenizer: Tokenizer | str | None = None,
        *,
        mask: MaskSpec = None,
        cot: CotPolicy | CotName | None = None,
        validate_bodies: bool = True,
        threads: int | None = None,
        shape: str = "auto",
        shape_options: ShapeOptions | dict[str, Any] | None = None,
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

    def _mask(self, mask: MaskSpec | str) -> MaskPolicy:
        """A mask policy this format applies (one it would ignore is a usage error)."""
        policy = MaskPolicy.parse(mask)
        why = self.format.mask_unsupported(policy)
        if why is not None:
            raise InputError(f"mask {mask!r} has no effect with {self.format_name}: {why}", code="E-INPUT-ARGUMENT",
                             field="mask", hint="use the default mask, 'last' or 'none' (or a roles / last_turn_only "
                                                "policy)")
        return policy

    def _cot(self, cot: CotPolicy | CotName | str | None) -> CotPolicy:
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
        try:
            given = self.format.read(conversation, self.message_shape)
        except (RecursionError, ValueError) as exc:  # a value too deep / a number too long: typed (jsonlimits)
            reraise(exc, "the conversation")
        policy = self.cot if cot is None else self._cot(cot)
        if self.format.turns.inline_reasoning:  # reasoning joins its answer's frame: the CoT policy applies first
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
        try:
            if type(conversation) is not list and record_layout.wants(self, conversation):
                # prompt/completion, Alpaca, text records (encoder.inputs)
                return record_layout.layout_record(self, conversation, mode, cot, mask)
            return self._layout_conversation(conversation, mode, cot, mask)
        except (RecursionError, ValueError) as exc:  # a value too deep / a number too long: typed (jsonlimits)
            reraise(exc, "the conversation")

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

    def render(self, conversation: Any, mode: Mode | ModeName = "train", *, cot: CotPolicy | CotName | None = None,
               mask: MaskSpec = None) -> RenderResult:
        """One conversation -> ``RenderResult`` (``ids``, ``mask``, ``labels``, ``message_index``).

        ``conversation``: OpenAI / HF chat messages (a list of dicts, or a dict with ``messages``,
        ``tools``...), openai-harmony JSON, ``ocml.Conversation``, or a record of another shape
        (prompt/completion, Alpaca, text; see ``shape=``).  ``mode``: ``"train"`` (a supervised
        example: the last assistant message ends as the model ends its turn), ``"prompt"`` (the
        history plus the generation prompt of the next assistant turn), ``"history"`` (every message
        closed with its ordinary end), ``"continue"`` (the last assistant message left open, for a
        prefilled generation).  ``cot`` / ``mask``: this call's reasoning and loss-mask policies
        (default: the encoder's).  Raises an ``OcmlError`` (with a code, the offending message
        index and field) for input the format cannot carry.
        """
        policy = None if mask is None else self._mask(mask)
        return self.renderer.assemble([self._layout(conversation, _mode(mode), cot, policy)])[0]

    def render_batch(self, conversations: Iterable[Any], mode: Mode | ModeName = "train", *,
                     cot: CotPolicy | CotName | None = None, mask: MaskSpec = None,
                     errors: BatchErrors = "raise", chunk: int = 256) -> Batch:
        """Render many conversations (the data-preparation path).

        ``errors="collect"`` records bad inputs (by index) and goes on.  Conversations are
        laid out, encoded and assembled ``chunk`` at a time, so numpy and thread hand-off
        costs are paid per chunk; each result's arrays are views into its chunk's arrays.
        The garbage collector is the caller's: a library call leaves process-wide settings
        alone (``ocml pack``'s worker processes tune theirs, ``ocml.encoder.gcpolicy``).
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

        for i, conv in enumerate(conversations):
            out.results.append(None)
            try:
                pending.append((i, self._layout(conv, m, cot, policy)))
            except OcmlError as exc:
                if errors == "raise":
                    raise
                out.errors.append((i, exc))
            if len(pending) >= chunk:
                flush()
        if pending:
            flush()
        return out

    # -- the other direction -------------------------------------------------------
    @overload
    def parse(self, ids: Sequence[int] | np.ndarray, *, strict: bool = False, role: str | None = None,
              errors: Literal["ignore", "raise"] = "ignore") -> list[Message]: ...

    @overload
    def parse(self, ids: Sequence[int] | np.ndarray, *, strict: bool = False, role: str | None = None,
              errors: Literal["collect"]) -> ParseResult: ...

    def parse(self, ids: Sequence[int] | np.ndarray, *, strict: bool = False,
              role: str | None = None, errors: ParseErrors = "ignore") -> list[Message] | ParseResult:
        """ids -> messages.  ``role``: the prefilled ``<|start|>ROLE`` (None when the ids
        start with ``<|start|>``).  ``errors``: ``"ignore"`` (default: lenient, a list of
        messages), ``"collect"`` (lenient, a ``ParseResult`` with ``.messages``, ``.ends``
        and ``.errors``: every problem, with the text it left out of the messages),
        ``"raise"`` (same as ``strict=True``: ``ParseError`` on the first problem)."""
        from .parse import error_mode, parse_ids

        strict, detailed = error_mode(strict, errors)
        return parse_ids(self, ids, strict=strict, role=role, detailed=detailed)

    def to_openai(self, ids: Sequence[int] | np.ndarray, *, role: str | None = "assistant", strict: bool = False,
                  call_id_seed: str = "", tools: Any = None, until_stop: bool = False) -> ChatChoice:
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

    def to_text(self, conversation: Any, mode: Mode | ModeName = "history", *,
                cot: CotPolicy | CotName | None = "keep-all",
                header: bool = True) -> str:
        from .transcript import to_text

        if cot in ("keep-all", CotPolicy.KEEP_ALL) and CotPolicy.KEEP_ALL not in self.format.cot_policies():
            cot = None  # the transcript default: this format has no reasoning to keep
        return to_text(self, conversation, mode=_mode(mode), cot=cot, header=header)

    def render_fim(self, prefix: str, suffix: str, middle: str | None = None, *, order: FimOrderName = "psm",
                   files: Sequence[Any] = (), path: str | None = None, end: str | None = "</s>") -> RenderResult:
        """A fill-in-the-middle document (``chatml``; ``ocml.encoder.formats.chatml.fim``).

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

    def parse_fim(self, ids: Sequence[int] | np.ndarray, *, prefix: str | None = None) -> FimDocument:
        """ids of a fill-in-the-middle document -> ``FimDocument`` (``chatml``).  In the ``spm`` /
        ``sp`` orders the prefix and the middle are one text run: pass the known ``prefix`` to split it."""
        from .formats.chatml.fim import parse_fim

        return parse_fim(self, ids, prefix=prefix)

    def parse_text(self, text: str, *, strict: bool = False) -> Conversation:
        from .transcript import parse_text

        return parse_text(self, text, strict=strict)

    # -- inference side ----------------------------------------------------------------
    def stop_ids(self, mode: StopMode = "assistant") -> list[int]:
        """Ids a sampler stops on: the turn-ending controls that are registered."""
        from .stops import stop_ids

        return stop_ids(self, mode)

    def stop_strings(self, mode: StopMode = "assistant") -> list[str]:
        """Stop controls spelled as text (fallback mode): for samplers' string stops."""
        from .stops import stop_strings

        return stop_strings(self, mode)

    def decoder(self, role: str | None = None, **kw: Any) -> StreamDecoder:
        """A stream decoder (``ocml.encoder.stream.decoder.StreamDecoder``): ``feed(ids)`` / ``finish(stop_reason=None,
        eos=False)`` -> events.  ``prefill=``: a ``render(..., mode="continue")`` result (or the messages)
        whose open last message the stream continues (``ocml.encoder.prefill``)."""
        from .stream.decoder import StreamDecoder

        return StreamDecoder(self, role=role, **kw)

    def chunker(self, role: str | None = "assistant", **kw: Any) -> Chunker:
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

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write a folder ``AutoTokenizer.from_pretrained`` loads offline: tokenizer, both chat
        templates, eos = the format's stop token, ``generation_config.json`` with the stop ids."""
        from .template import save_pretrained

        return save_pretrained(self, directory)
