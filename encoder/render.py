"""Messages -> numpy ids, loss mask and per-token message index.

The only place render ids are produced.  Header pieces (``prompt`` + ``header`` of
a plan) repeat across messages, so their ids are cached per ``Format.header_key``
and a plain-text message never builds a plan at all; text pieces are encoded once
each (``encoder.textenc``); the mask and message index come from run lengths
(``np.repeat``), never from re-tokenizing or offset mapping.  In a batch the
results are views into one set of arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vocab import Tokenizer

from .errors import OcmlError
from .formats.base import Format, PlanContext
from .masks import Flags
from .messages import Conversation
from .pieces import CTL, Piece
from .textenc import TextEncoder

_HEADER_CACHE_MAX = 4096


#: ``message_index`` of the generation prompt, and of messages ocml built itself (a system
#: header from conversation options)
GENERATION_PROMPT = -1
SYNTHESIZED = -2


@dataclass(frozen=True, slots=True)
class RenderResult:
    ids: np.ndarray             # int32 [n]
    mask: np.ndarray            # bool  [n]: trained tokens
    expanded_index: np.ndarray  # int32 [n]: index into ``conversation.messages``, -1 = generation prompt
    conversation: Conversation  # what was rendered (normalised, expanded input)
    dropped_expanded: tuple[int, ...] = ()  # ``conversation.messages`` left out by the CoT policy

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def _sources(self) -> np.ndarray:
        """Input position of each expanded message (``SYNTHESIZED`` for ocml's own)."""
        return np.array([SYNTHESIZED if m.source is None else m.source for m in self.conversation.messages],
                        dtype=np.int32)

    @property
    def message_index(self) -> np.ndarray:
        """int32 [n]: the position in the caller's message list each token came from
        (-1 = generation prompt, -2 = a message ocml built from the conversation options).
        One input message may expand into several (reasoning, answer, one per tool call):
        ``expanded_index`` tells those apart."""
        src = self._sources()
        if len(src) == 0:
            return self.expanded_index.copy()
        idx = self.expanded_index
        return np.where(idx >= 0, src[np.maximum(idx, 0)], idx).astype(np.int32)

    @property
    def dropped(self) -> tuple[int, ...]:
        """Input positions of the messages whose content (or part of it: the reasoning of an
        answer) the CoT policy left out."""
        msgs = self.conversation.messages
        return tuple(sorted({SYNTHESIZED if msgs[i].source is None else msgs[i].source for i in self.dropped_expanded}))

    @property
    def labels(self) -> np.ndarray:
        """HF-style labels: ids where trained, -100 elsewhere."""
        return np.where(self.mask, self.ids, -100).astype(np.int64)

    def spans(self) -> list[tuple[int, int]]:
        """Trained [start, end) token spans."""
        m = np.concatenate(([False], self.mask, [False])).astype(np.int8)
        d = np.flatnonzero(np.diff(m))
        return [(int(a), int(b)) for a, b in zip(d[::2], d[1::2])]


class RenderJob:
    """One conversation laid out as items: id sequences, or text still to encode.

    ``items[k]`` is a tuple/list of ids, an int32 array, or a ``str``; ``train[k]`` and
    ``owner[k]`` (message index, -1 = generation prompt) hold for every id of item k.
    """

    __slots__ = ("conversation", "dropped", "items", "train", "owner")

    def __init__(self, conversation: Conversation, dropped: tuple[int, ...]) -> None:
        self.conversation = conversation
        self.dropped = dropped
        self.items: list[Any] = []
        self.train: list[bool] = []
        self.owner: list[int] = []


class Renderer:
    """Lays messages out as items, encodes the text, assembles numpy arrays.

    One per (format, tokenizer).  Three phases so a batch pays numpy and thread
    hand-off costs once: ``layout`` (Python, per message, header ids from a cache keyed
    by ``Format.header_key``), ``TextEncoder.encode`` (the tokenizer), ``assemble``
    (one concatenate and two ``np.repeat`` over run lengths for the whole batch).
    """

    def __init__(self, fmt: Format, tokenizer: Tokenizer, threads: int | None = None) -> None:
        self.format = fmt
        self.tokenizer = tokenizer
        self.text = TextEncoder(tokenizer, threads)
        self._ctl: dict[str, tuple[int, ...]] = {}
        self._headers: dict[tuple[Any, ...], tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def control_ids(self, token: str) -> tuple[int, ...]:
        """A control as one id, or (fallback) its ASCII text as ordinary tokens."""
        ids = self._ctl.get(token)
        if ids is None:
            cid = self.tokenizer.control_id(token)
            ids = (cid,) if cid is not None else tuple(self.tokenizer.encode_text(token))
            self._ctl[token] = ids
        return ids

    def pieces_ids(self, pieces: Sequence[Piece]) -> tuple[int, ...]:
        out: list[int] = []
        enc = self.tokenizer.encode_text
        for kind, val in pieces:
            if kind == CTL:
                out.extend(self.control_ids(val))
            elif val:
                out.extend(enc(val))
        return tuple(out)

    def layout(self, conv: Conversation, keep: Sequence[int], flags: Sequence[Flags], train_mode: bool,
               prompt_mode: bool, dropped: tuple[int, ...]) -> RenderJob:
        fmt = self.format
        msgs = conv.messages
        job = RenderJob(conv, dropped)
        items, train, owner = job.items, job.train, job.owner
        headers = self._headers
        ctl = self.control_ids
        ctx: PlanContext | None = None
        last = keep[-1] if keep else -1
        for i, (f_prompt, f_header, f_body, f_end) in zip(keep, flags):
            m = msgs[i]
            end = fmt.end_token(m, train_mode and i == last)
            key = fmt.header_key(m)
            body = fmt.plain_body(m)
            hit = headers.get(key)
            plan = None
            if hit is None or body is None:
                if ctx is None:
                    ctx = fmt.context(conv)
                try:
                    plan = fmt.plan(m, end, ctx)
                except OcmlError as exc:
                    exc.index = i
                    exc.args = (exc._render(),)
                    raise
                if hit is None:
                    hit = (self.pieces_ids(plan.prompt), self.pieces_ids(plan.header))
                    if len(headers) >= _HEADER_CACHE_MAX:
                        headers.clear()
                    headers[key] = hit
            items += hit
            train += (f_prompt, f_header)
            owner += (i, i)
            if plan is None:
                if body:
                    items.append(body)
                    train.append(f_body)
                    owner.append(i)
            else:
                for kind, val in plan.body:
                    if kind == CTL:
                        items.append(ctl(val))
                    elif val:
                        items.append(val)
                    else:
                        continue
                    train.append(f_body)
                    owner.append(i)
            items.append(ctl(end))
            train.append(f_end)
            owner.append(i)
        if prompt_mode:
            items.append(self.pieces_ids(fmt.generation_prompt()))
            train.append(False)
            owner.append(-1)
        return job

    def assemble(self, jobs: Sequence[RenderJob]) -> list[RenderResult]:
        """Encode the text of ``jobs`` and cut one set of arrays into per-job results."""
        if len(jobs) == 1:
            items, train, owner = jobs[0].items, jobs[0].train, jobs[0].owner
        else:
            items, train, owner = [], [], []
            for job in jobs:
                items += job.items
                train += job.train
                owner += job.owner
        self.text.encode(items)
        parts: list[np.ndarray] = []
        run: list[int] = []
        ndarray = np.ndarray
        for it in items:
            if type(it) is ndarray:
                if run:
                    parts.append(np.fromiter(run, dtype=np.int32, count=len(run)))  # 2x np.array
                    run = []
                parts.append(it)
            else:
                run += it
        lens = [len(it) for it in items]
        if run or not parts:
            parts.append(np.fromiter(run, dtype=np.int32, count=len(run)))  # 2x np.array
        ids = parts[0] if len(parts) == 1 else np.concatenate(parts)
        lens_arr = np.array(lens, dtype=np.int64)
        mask = np.array(train, dtype=bool).repeat(lens_arr)
        index = np.array(owner, dtype=np.int32).repeat(lens_arr)
        if len(jobs) == 1:
            job = jobs[0]
            return [RenderResult(ids, mask, index, job.conversation, job.dropped)]
        out: list[RenderResult] = []
        a = 0
        k = 0
        for job in jobs:
            b = a + sum(lens[k:k + len(job.items)])
            k += len(job.items)
            out.append(RenderResult(ids[a:b], mask[a:b], index[a:b], job.conversation, job.dropped))
            a = b
        return out


def describe(tokenizer: Tokenizer, result: RenderResult) -> list[dict[str, Any]]:
    """Token-by-token view (for the CLI and debugging)."""
    rows = []
    for k, (i, m, mi) in enumerate(zip(result.ids.tolist(), result.mask.tolist(), result.message_index.tolist())):
        rows.append({"pos": k, "id": i, "text": tokenizer.token_bytes(i).decode("utf-8", "replace"),
                     "train": m, "message": mi})
    return rows
