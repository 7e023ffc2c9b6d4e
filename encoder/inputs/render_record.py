"""Dataset records -> renders: ``render_record`` / ``render_records``, the explicit API in front
of the renderer (``ocml pack``'s workers call it too; ``Encoder.render`` takes conversations only
and refuses a record, ``E-INPUT-RECORD``).

A record is read here, by its shape (detected per record, or forced by ``Encoder(shape=...)``,
options ``shape_options``; ``detect``): a conversation (``messages``) and an Alpaca record (read as
one) go down the one conversation path (``ocml.encoder.jobs.conversation_job``), the other sequence
shapes as follows, and a preference pair / KTO example is ``E-SHAPE-PAIR`` (``render_pair``):

- conversational prompt/completion: one conversation, prompt messages then completion
  messages; the prompt is never trained (its messages get ``train=False``), the completion
  follows the encoder's mask policy (by default: what the model generates, so a tool
  result inside a completion is not trained).  The prompt part of the ids is the format's
  prompt render (the generation prompt is the first completion message's header).
- standard prompt/completion, ``string_prompt="text"`` (TRL's behaviour for strings, see
  ``trl/trainer/sft_trainer.py``: no chat template, the completion + ``eos_token``): the
  prompt's ids, the completion's ids, the end-of-text id.  Prompt and completion are
  encoded separately (what inference sees: the prompt alone, then generated tokens), so no
  token straddles the boundary; TRL tokenizes the concatenation and warns when that differs.
  ``string_prompt="chat"``: a user turn + the assistant's answer in the encoder's format.
- text: the text's ids then the end-of-text id, all trained.
- ``completion_only_loss=False`` trains every token (TRL's meaning).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from ocml.vocab.errors import as_enum

from ..errors import InputError, OcmlError
from ..jobs import check_batch_args, conversation_job, cot_policy, mask_policy, render_jobs
from ..jsonlimits import reraise
from ..messages import Conversation, Mode
from ..render import RenderJob
from ..whole_runs import Run
from .detect import read_record, record_shape
from .examples import EXAMPLE_TYPES, KtoExample, PreferencePair, PromptCompletion, TextExample
from .shapes import RecordShape, ShapeOptions
from .text import end_of_text_id

if TYPE_CHECKING:
    from ..batch import Batch
    from ..codec import Renders
    from ..masks import MaskPolicy, MaskSpec
    from ..messages import CotName, CotPolicy, ModeName
    from ..render import RenderResult

__all__ = ["record_job", "render_record", "render_records"]


def render_record(enc: Renders, record: Any, mode: Mode | ModeName = "train", *,
                  cot: CotPolicy | CotName | None = None, mask: MaskSpec = None) -> RenderResult:
    """One dataset record of a sequence shape -> ``RenderResult``, as ``ocml pack`` renders it.

    ``record``: a conversation record (``messages``, a message list), prompt/completion (standard
    or conversational), Alpaca or text (a dict of the shape's columns, renamed by
    ``shape_options``), or its example (``PromptCompletion``, ``TextExample``).  The shape is
    ``enc.shape`` (``"auto"``: detected per record).  ``mode`` / ``cot`` / ``mask``: as
    ``Encoder.render``.
    """
    out = render_records(enc, [record], mode, cot=cot, mask=mask)
    res = out.results[0]
    assert res is not None
    return res


def render_records(enc: Renders, records: Iterable[Any], mode: Mode | ModeName = "train", *,
                   cot: CotPolicy | CotName | None = None, mask: MaskSpec = None,
                   errors: Literal["raise", "collect"] = "raise", chunk: int = 256) -> Batch:
    """Many records (``render_record``'s) -> ``Batch``, chunked as ``Encoder.render_batch``;
    ``errors="collect"`` records a bad record (by index) and goes on."""
    check_batch_args(records, errors, chunk, "records", "render_record(enc, record)")
    m = as_enum(mode, Mode, "mode", "mode")
    policy = None if mask is None else mask_policy(enc.format_name, enc.format, mask)
    cot = None if cot is None else cot_policy(enc.format_name, enc.format, cot)
    return render_jobs(enc, records, lambda rec: record_job(enc, rec, m, cot, policy), errors, chunk)


def record_job(enc: Renders, record: Any, mode: Mode, cot: CotPolicy | str | None,
               mask: MaskPolicy | None) -> RenderJob:
    """One record -> its ``RenderJob`` (``cot`` / ``mask``: checked policies, None = the encoder's)."""
    if type(record) is list or not wants(enc, record):
        return conversation_job(enc, record, mode, cot, mask)
    try:
        return layout_record(enc, record, mode, cot, mask)
    except (RecursionError, ValueError) as exc:  # a value too deep / a number too long: typed (jsonlimits)
        reraise(exc, "the conversation")


def wants(enc: Renders, obj: Any) -> bool:
    """Is ``obj`` a record of a non-chat shape (cheap for the chat hot path)?"""
    if isinstance(obj, EXAMPLE_TYPES):
        return True
    if type(obj) is not dict:
        return False
    if enc.shape not in ("auto", "chat", "native"):
        return True
    return enc.shape == "auto" and "messages" not in obj and "role" not in obj and "conversations" not in obj


def as_example(enc: Renders, obj: Any) -> Any:
    """The example (or Alpaca conversation dict) ``obj`` reads as."""
    if isinstance(obj, EXAMPLE_TYPES):
        return obj
    opts = enc.shape_options
    shape = record_shape(obj, enc.shape, opts)
    if shape is RecordShape.CHAT:
        return None
    return read_record(obj, shape, opts)


def layout_record(enc: Renders, obj: Any, mode: Mode, cot: Any, mask: Any) -> RenderJob:
    ex = as_example(enc, obj)
    if ex is None:  # a conversation after all (auto detection)
        return conversation_job(enc, obj, mode, cot, mask)
    opts = enc.shape_options
    if isinstance(ex, dict):  # Alpaca: a plain conversation
        return conversation_job(enc, ex, mode, cot, mask)
    if isinstance(ex, (PreferencePair, KtoExample)):
        kind, flag = ("preference pair", "preference") if isinstance(ex, PreferencePair) else ("KTO example", "kto")
        raise InputError(f"a {kind} renders to a prompt and completion(s), not one sequence", code="E-SHAPE-PAIR",
                         hint=f"use encoder.inputs.render_pair(enc, record), or ocml pack --shape {flag} --no-pack")
    if isinstance(ex, TextExample):
        if mode is Mode.PROMPT:
            raise InputError("a text record has no prompt", code="E-USAGE", field="mode",
                             hint="render text records in train or history mode")
        return text_job(enc, ((ex.text, True, 0),))
    assert isinstance(ex, PromptCompletion)
    if not ex.conversational and opts.string_prompt == "text":
        everything = not opts.completion_only_loss
        parts = [(ex.prompt, everything, 0)]
        if mode is Mode.PROMPT:
            return text_job(enc, parts, eot=False)
        return text_job(enc, [*parts, (ex.completion, True, 1)], owner_eot=1)
    conv = pc_conversation(enc, ex, mode)
    try:
        job = conversation_job(enc, conv, mode, cot, mask)
    except OcmlError as exc:
        raise relocated(exc, len(conversation_parts(ex, opts)[0]), opts) from None
    if not opts.completion_only_loss and mode is not Mode.PROMPT:
        train_everything(job)
    return job


def train_everything(job: RenderJob) -> None:
    """TRL's ``completion_only_loss=False``: every token trained (whole-run formats keep
    per-segment flags inside their runs: those too)."""
    job.train = [True] * len(job.train)
    for it in job.items:
        if isinstance(it, Run):
            it.train = [True] * len(it.train)


def conversation_parts(ex: Any, opts: ShapeOptions) -> tuple[list[Any], list[Any]]:
    """(prompt messages, completion messages) of a prompt/completion-like example; strings
    become a user turn and an assistant answer (``string_prompt="chat"``)."""
    prompt = ex.prompt if not isinstance(ex.prompt, str) else [{"role": "user", "content": ex.prompt}]
    completion = ex.completion if not isinstance(ex.completion, str) else [{"role": "assistant",
                                                                           "content": ex.completion}]
    return list(prompt), list(completion)


def pc_conversation(enc: Renders, ex: Any, mode: Mode, completion: list[Any] | None = None) -> Any:
    """The conversation of prompt + completion with the prompt's messages never trained
    (prompt mode: the prompt alone, rendered as the format's prompt)."""
    prompt, comp = conversation_parts(ex, enc.shape_options)
    if completion is not None:
        comp = completion
    if mode is Mode.PROMPT:
        return {**ex.options, "messages": prompt}
    n = len(prompt)
    try:
        given = enc.format.read({**ex.options, "messages": prompt + comp}, "auto")
    except OcmlError as exc:
        raise relocated(exc, n, enc.shape_options) from None
    msgs = tuple(m.with_(train=False) if m.source is not None and m.source < n else m for m in given.messages)
    return Conversation(msgs, given.options, chat=given.chat)


def relocated(exc: OcmlError, n: int, opts: ShapeOptions, completion_key: str | None = None) -> OcmlError:
    """An error at message ``i`` of prompt + completion -> ``prompt[i]`` / ``completion[i - n]``."""
    i = exc.index
    if i is None:
        return exc
    f = opts.fields
    key, k = (f.prompt, i) if i < n else (completion_key or f.completion, i - n)
    exc.field = f"{key}[{k}]" + (f".{exc.field}" if exc.field else "")
    exc.index = None
    exc.args = (exc._render(),)
    return exc


def text_job(enc: Renders, parts: Any, *, eot: bool = True, owner_eot: int = 0) -> RenderJob:
    """A job of plain text pieces ``(text, trained, owner)`` (+ the end-of-text id, trained),
    each encoded on its own with special tokens off."""
    job = RenderJob(Conversation(()), ())
    for text, train, owner in parts:
        if text:
            job.items.append(text)
            job.train.append(train)
            job.owner.append(owner)
    if eot:
        job.items.append((end_of_text_id(enc.tokenizer),))
        job.train.append(True)
        job.owner.append(owner_eot)
    return job
