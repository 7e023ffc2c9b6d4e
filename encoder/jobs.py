"""A conversation -> the renderer's job: the one way down every render takes.

``Encoder.render`` / ``render_batch`` and the input layer (``ocml.encoder.inputs``: dataset
records of other shapes, preference pairs) all lay a conversation out here: the format reads it
(``ocml.encoder.adapters``), the CoT policy drops what it drops, the format normalises and
validates it and sets each message's mask flag, and the renderer lays out its pieces
(``Renderer.layout``).  Nothing here reads dataset records: that is the input layer's, in front.
``render_jobs`` is the one chunked loop (lay out, encode and assemble ``chunk`` at a time) that
``render_batch`` and ``inputs.render_records`` share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ocml import vocab

from .adapters import relocate
from .batch import Batch
from .cot import dropped as cot_dropped, parse_cot
from .errors import InputError, InputTypeError, OcmlError
from .jsonlimits import reraise
from .masks import MaskPolicy, MaskSpec
from .messages import Conversation, CotPolicy, CotName, Mode
from .prefill import check_continuable

if TYPE_CHECKING:
    from .codec import Renders
    from .formats.base import Format
    from .render import RenderJob

__all__ = ["check_batch_args", "conversation_job", "cot_policy", "mask_policy", "prepare", "render_jobs"]


def mask_policy(format_name: str, format: Format, mask: MaskSpec | str) -> MaskPolicy:
    """A mask policy this format applies (one it would ignore is a usage error)."""
    policy = MaskPolicy.parse(mask)
    why = format.mask_unsupported(policy)
    if why is not None:
        raise InputError(f"mask {mask!r} has no effect with {format_name}: {why}", code="E-INPUT-ARGUMENT",
                         field="mask", hint="use the default mask, 'last' or 'none' (or a roles / last_turn_only "
                                            "policy)")
    return policy


def cot_policy(format_name: str, format: Format, cot: CotPolicy | CotName | str | None) -> CotPolicy:
    """A CoT policy this format applies (one it would ignore is a usage error)."""
    policy = parse_cot(cot)
    allowed = format.cot_policies()
    if policy not in allowed:
        raise InputError(f"cot={policy.value!r} has no effect with {format_name}"
                         + (f" (reasoning={format.reasoning.value!r})" if hasattr(format, "reasoning") else ""),
                         code="E-INPUT-ARGUMENT", field="cot",
                         hint="here cot may be " + ", ".join(p.value for p in allowed))
    return policy


def prepare(enc: Renders, conversation: Any, cot: CotPolicy | str | None = None) -> tuple[Conversation, list[int]]:
    """Normalised, validated conversation and the indices of the messages to render."""
    try:
        given = enc.format.read(conversation, enc.message_shape)
    except (RecursionError, ValueError) as exc:  # a value too deep / a number too long: typed (jsonlimits)
        reraise(exc, "the conversation")
    policy = enc.cot if cot is None else cot_policy(enc.format_name, enc.format, cot)
    if enc.format.turns.inline_reasoning:  # reasoning joins its answer's frame: the CoT policy applies first
        pre = cot_dropped(given.messages, policy)
        if pre:
            given = Conversation(tuple(m for k, m in enumerate(given.messages) if k not in pre), given.options,
                                 chat=given.chat)
    try:
        conv = enc.format.normalize(given)
    except OcmlError as exc:
        raise relocate(exc, given.messages) from None
    try:
        enc.format.validate(conv)
    except OcmlError as exc:
        raise relocate(exc, conv.messages) from None
    drop = cot_dropped(conv.messages, policy)
    keep = [i for i in range(len(conv.messages)) if i not in drop]
    return conv, keep


def conversation_job(enc: Renders, conversation: Any, mode: Mode, cot: CotPolicy | str | None,
                     mask: MaskPolicy | None) -> RenderJob:
    """One conversation (messages, a Chat Completions body, a ``Conversation``) -> its ``RenderJob``.
    ``cot`` / ``mask``: this render's policies (None: the encoder's)."""
    try:
        conv, keep = prepare(enc, conversation, cot)
        msgs = conv.messages
        kept = msgs if len(keep) == len(msgs) else [msgs[i] for i in keep]
        flags = enc.format.message_flags(kept, enc.mask if mask is None else mask)
        dropped = () if len(keep) == len(msgs) else tuple(sorted(set(range(len(msgs))).difference(keep)))
        if mode is Mode.CONTINUE:
            check_continuable(conv, keep)
        try:
            return enc.renderer.layout(conv, keep, flags, mode in (Mode.TRAIN, Mode.CONTINUE), mode is Mode.PROMPT,
                                       dropped, open_last=mode is Mode.CONTINUE)
        except OcmlError as exc:
            raise relocate(exc, msgs) from None
    except (RecursionError, ValueError) as exc:  # a value too deep / a number too long: typed (jsonlimits)
        reraise(exc, "the conversation")


def check_batch_args(items: Any, errors: str, chunk: int, what: str, one: str) -> None:
    """``errors`` / ``chunk`` / the iterable of a batch call (``what``: its items, ``one``: the call for one)."""
    if errors not in ("raise", "collect"):
        raise vocab.UnknownNameError(f"errors={errors!r}", field="errors", hint="'raise' or 'collect'")
    if type(chunk) is not int or chunk < 1:
        raise InputError(f"chunk={chunk!r} must be an integer >= 1", field="chunk")
    if isinstance(items, (str, bytes, dict)) or not hasattr(items, "__iter__"):
        raise InputTypeError(f"{what} must be an iterable of {what}, got {type(items).__name__}", field=what,
                             hint=f"{one} renders one")


def render_jobs(enc: Renders, items: Iterable[Any], job: Callable[[Any], RenderJob], errors: str,
                chunk: int) -> Batch:
    """``job(item)`` for each item, encoded and assembled ``chunk`` at a time; ``errors="collect"``
    records a bad item (by index) and goes on.  Each result's arrays are views into its chunk's."""
    out = Batch([])
    pending: list[tuple[int, RenderJob]] = []

    def flush() -> None:
        for (slot, _), res in zip(pending, enc.renderer.assemble([j for _, j in pending])):
            out.results[slot] = res
        pending.clear()

    for i, item in enumerate(items):
        out.results.append(None)
        try:
            pending.append((i, job(item)))
        except OcmlError as exc:
            if errors == "raise":
                raise
            out.errors.append((i, exc))
        if len(pending) >= chunk:
            flush()
    if pending:
        flush()
    return out
