"""Preference pairs and KTO examples -> one row each: the prompt's ids once, then each
completion's ids and mask (TRL's ``prompt_ids`` / ``chosen_ids`` / ``rejected_ids``).

Conversational: the prompt is rendered as the format's prompt (``mode="prompt"``,
generation prompt included), each side as prompt + completion in train mode; the
completion's ids are what follows the prompt.  As TRL's DPO ``tokenize_fn``
(``trl/trainer/dpo_trainer.py``), the prompt kept is the common prefix of the prompt render
and both full renders (``common_prefix_length``): equal to the whole prompt render for the
pieces formats (Harmony, OpenChatML), and for whole-run formats (ChatML, Apertus) shorter
only when BPE merges the header's last text with the completion's first characters.
Either way the one ``prompt_ids`` column is the shared prompt, identical for both sides.
Standard (strings): ``prompt_ids`` = the prompt's ids, each side = its ids + the
end-of-text id (TRL's DPO ``add_eos`` for non-conversational data); ``string_prompt="chat"``
renders them as a user turn and assistant answers instead.
The masks say which completion tokens ocml would train (a tool result inside a completion
is not); TRL's collator trains every completion token.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, OcmlError, article
from ..jobs import conversation_job
from ..messages import Mode
from .detect import read_record, record_shape
from .examples import KtoExample, PreferencePair
from .render_record import conversation_parts, pc_conversation, relocated, text_job
from .shapes import PAIR_SHAPES, RecordShape

if TYPE_CHECKING:
    from ..codec import Renders
    from ..render import RenderJob


@dataclass(frozen=True)
class PairResult:
    """One preference row (``rejected_*`` None and ``label`` set for a KTO example)."""

    prompt_ids: np.ndarray          # int32
    chosen_ids: np.ndarray          # int32: the chosen completion (KTO: the completion)
    chosen_mask: np.ndarray         # bool, per chosen id
    rejected_ids: np.ndarray | None = None
    rejected_mask: np.ndarray | None = None
    label: bool | None = None

    @property
    def rejected(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, mask) of the rejected completion: a preference row's (a KTO example has none)."""
        assert self.rejected_ids is not None and self.rejected_mask is not None, "a KTO example has no rejected side"
        return self.rejected_ids, self.rejected_mask

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"prompt_ids": self.prompt_ids.tolist()}
        if self.label is None:
            rejected_ids, rejected_mask = self.rejected
            d |= {"chosen_ids": self.chosen_ids.tolist(), "rejected_ids": rejected_ids.tolist(),
                  "chosen_mask": self.chosen_mask.astype(int).tolist(),
                  "rejected_mask": rejected_mask.astype(int).tolist()}
        else:
            d |= {"completion_ids": self.chosen_ids.tolist(), "completion_mask": self.chosen_mask.astype(int).tolist(),
                  "label": self.label}
        return d


def pair_example(enc: Renders, record: Any) -> PreferencePair | KtoExample:
    if isinstance(record, (PreferencePair, KtoExample)):
        return record
    shape = record_shape(record, enc.shape, enc.shape_options)
    if shape not in PAIR_SHAPES:
        raise InputError(f"{article(shape.value)} record is not a preference pair or KTO example", code="E-SHAPE-NOT-PAIR",
                         hint="preference: {'prompt'?, 'chosen', 'rejected'}; KTO: {'prompt', 'completion', 'label'}")
    return read_record(record, shape, enc.shape_options)  # type: ignore[return-value]


def _jobs(enc: Renders, ex: PreferencePair | KtoExample) -> list[RenderJob]:
    """[prompt, prompt + side...] jobs for one example."""
    opts = enc.shape_options
    if not opts.completion_only_loss:
        raise InputError("completion_only_loss=False does not apply to preference / KTO rows", code="E-USAGE",
                         field="completion_only_loss", hint="the trainer decides what it trains in a pair")
    sides = [ex.chosen, ex.rejected] if isinstance(ex, PreferencePair) else [ex.completion]
    keys = [opts.fields.chosen, opts.fields.rejected] if isinstance(ex, PreferencePair) else [opts.fields.completion]
    if isinstance(ex.prompt, str) and opts.string_prompt == "text":
        return [text_job(enc, [(ex.prompt, False, 0)], eot=False)] + [
            text_job(enc, [(ex.prompt, False, 0), (s, True, 1)], owner_eot=1) for s in sides]
    prompt, _ = conversation_parts(_Side(ex.prompt, ex.options, sides[0]), opts)
    jobs = []
    for mode, side, key in [(Mode.PROMPT, None, opts.fields.prompt)] + [(Mode.TRAIN, s, k) for s, k in zip(sides, keys)]:
        comp = None if side is None else conversation_parts(_Side(ex.prompt, ex.options, side), opts)[1]
        try:
            conv = pc_conversation(enc, _Side(ex.prompt, ex.options, side if side is not None else sides[0]), mode, comp)
            jobs.append(conversation_job(enc, conv, mode, None, None))
        except OcmlError as exc:
            raise relocated(exc, len(prompt), opts, key) from None
    return jobs


@dataclass(frozen=True)
class _Side:
    """A prompt + one completion (what ``render_record.pc_conversation`` reads)."""

    prompt: Any
    options: dict[str, Any]
    completion: Any


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(a.shape[0], b.shape[0])
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


def _result(ex: PreferencePair | KtoExample, rendered: Sequence[Any]) -> PairResult:
    prompt, *full = rendered
    cut = min(_common(prompt.ids, f.ids) for f in full)
    if cut == 0:
        raise InputError("the prompt render is not a prefix of the prompt + completion render", code="E-SHAPE-SEAM",
                         hint="report this record: the format renders the prompt differently when a completion follows")
    ids = prompt.ids[:cut]
    if isinstance(ex, KtoExample):
        return PairResult(ids, full[0].ids[cut:], full[0].mask[cut:], label=ex.label)
    return PairResult(ids, full[0].ids[cut:], full[0].mask[cut:], full[1].ids[cut:], full[1].mask[cut:])


def render_pair(enc: Renders, record: Any) -> PairResult:
    """One preference pair / KTO example (a record in any of TRL's forms, or an example)."""
    out = render_pairs(enc, [record], errors="raise")[0]
    assert isinstance(out, PairResult)
    return out


def render_pairs(enc: Renders, records: Iterable[Any], errors: str = "raise") -> list[PairResult | OcmlError]:
    """Many at once (one encode pass); ``errors="collect"`` puts the error in a bad record's slot."""
    if errors not in ("raise", "collect"):
        raise InputError(f"errors={errors!r}", field="errors", hint="'raise' or 'collect'")
    out: list[Any] = []
    pending: list[tuple[int, Any, list[RenderJob]]] = []
    for rec in records:
        try:
            ex = pair_example(enc, rec)
            pending.append((len(out), ex, _jobs(enc, ex)))
            out.append(None)
        except OcmlError as exc:
            if errors == "raise":
                raise
            out.append(exc)
    jobs = [j for _, _, js in pending for j in js]
    rendered = enc.renderer.assemble(jobs) if jobs else []
    k = 0
    for slot, ex, js in pending:
        try:
            out[slot] = _result(ex, rendered[k:k + len(js)])
        except OcmlError as exc:
            if errors == "raise":
                raise
            out[slot] = exc
        k += len(js)
    return out


__all__ = ["PairResult", "RecordShape", "render_pair", "render_pairs"]
