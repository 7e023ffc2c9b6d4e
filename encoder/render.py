"""Messages -> numpy ids, loss mask and per-token message index.

The only place render ids are produced.  Header pieces (``prompt`` + ``header`` of
a plan) repeat across messages, so their ids are cached per ``Format.header_key``
and a plain-text message never builds a plan at all; text pieces are encoded once
each (``ocml.encoder.textenc``); the mask and message index come from run lengths
(``np.repeat``), never from re-tokenizing or offset mapping.  In a batch the
results are views into one set of arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ocml.vocab import Tokenizer

from .errors import OcmlError
from .formats.base import Format, PlanContext
from .masks import IGNORE, Flags
from .messages import Conversation
from .pieces import CTL, OFF, TXT, Piece
from .runs import expand_runs, merge_runs
from .sections import SECTIONS, SectionIds
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
    open_last: bool = False     # mode="continue": the last message is left open (no terminator)

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
            return np.array(self.expanded_index)
        idx = self.expanded_index
        return np.where(idx >= 0, src[np.maximum(idx, 0)], idx).astype(np.int32)

    @property
    def dropped(self) -> tuple[int, ...]:
        """Input positions of the messages whose content (or part of it: the reasoning of an
        answer) the CoT policy left out."""
        msgs = self.conversation.messages
        return tuple(sorted({SYNTHESIZED if (s := msgs[i].source) is None else s for i in self.dropped_expanded}))

    @property
    def labels(self) -> np.ndarray:
        """HF-style labels: ids where trained, -100 elsewhere."""
        return np.where(self.mask, self.ids, IGNORE).astype(np.int64)

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

    __slots__ = ("conversation", "dropped", "items", "train", "owner", "open_last")

    def __init__(self, conversation: Conversation, dropped: tuple[int, ...], open_last: bool = False) -> None:
        self.conversation = conversation
        self.dropped = dropped
        self.open_last = open_last
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
        self.sections = SectionIds()  # body ids of interned system/developer sections (encoder.sections)

    def control_ids(self, token: str) -> tuple[int, ...]:
        """A control as one id, or (fallback) its ASCII text as ordinary tokens."""
        ids = self._ctl.get(token)
        if ids is None:
            cid = self.tokenizer.control_id(token)
            ids = (cid,) if cid is not None else tuple(self.tokenizer.encode_text(token))
            self._ctl[token] = ids
        return ids

    def pieces_ids(self, pieces: Sequence[Piece], after_text: bool = False) -> tuple[int, ...]:
        """Ids of ``pieces``; ``after_text``: the first piece follows a text piece.  A text piece
        right after text is a continuation (SentencePiece tokenizers that prefix every run with
        ``▁`` must not prefix it: the model saw the whole header as one run)."""
        out: list[int] = []
        tok = self.tokenizer
        for kind, val in pieces:
            if kind == CTL:
                out.extend(self.control_ids(val))
                after_text = False
            elif val:
                out.extend(tok.encode_continuation(val) if after_text else tok.encode_text(val))
                after_text = True
        return tuple(out)

    def control_item(self, token: str) -> tuple[int, ...] | str:
        """Whole-run formats: a registered control as its id, else its text (joins the run)."""
        cid = self.tokenizer.control_id(token)
        return (cid,) if cid is not None else token

    def pieces_items(self, pieces: Sequence[Piece]) -> tuple[Any, ...]:
        """Whole-run formats: pieces as layout items (ids of registered controls, else text)."""
        return tuple(self.control_item(val) if kind == CTL else val for kind, val in pieces if val)

    @property
    def byte_len(self) -> np.ndarray:
        """Per id: its byte length (places run segments among tokens, ``ocml.encoder.runs``)."""
        bl = getattr(self, "_byte_len", None)
        if bl is None:
            bl = np.fromiter((0 if b is None else len(b) for b in self.tokenizer.token_bytes_table), dtype=np.int64)
            self._byte_len = bl
            self._byte_len_list = bl.tolist()
        return bl

    @property
    def byte_len_list(self) -> list[int]:
        self.byte_len  # noqa: B018  (builds both)
        listed: list[int] = self._byte_len_list
        return listed

    def layout(self, conv: Conversation, keep: Sequence[int], flags: Sequence[Flags], train_mode: bool,
               prompt_mode: bool, dropped: tuple[int, ...], open_last: bool = False) -> RenderJob:
        """``open_last`` (mode="continue"): like train, with the last message left open - no
        terminator, nothing after it - so a model continues it (prefilled generation)."""
        fmt = self.format
        msgs = conv.messages
        job = RenderJob(conv, dropped, open_last)
        items, train, owner = job.items, job.train, job.owner
        headers = self._headers
        merge = fmt.text_layout.whole_runs
        ctl = self.control_item if merge else self.control_ids
        after = self.pieces_items(fmt.text_layout.after_message) if merge else (
            (self.pieces_ids(fmt.text_layout.after_message),) if fmt.text_layout.after_message else ())
        ctx: PlanContext | None = None
        last = keep[-1] if keep else -1
        # prompt mode: the format may leave the last message open for the model to continue
        # (Apertus after tool outputs): no terminator, no generation prompt
        cont = open_last or (prompt_mode and last >= 0 and fmt.prompt_continues(msgs[last]))
        prefix, suffix = fmt.frame_pieces(conv)
        if prefix:
            self._add_framing(job, prefix, merge)
        # per message: bound methods looked up once, the end control's ids from the cache itself
        end_token, header_key, plain_body = fmt.end_token, fmt.header_key, fmt.plain_body
        ctl_ids = None if merge else self._ctl
        for i, (f_prompt, f_header, f_body, f_end) in zip(keep, flags):
            m = msgs[i]
            end = "" if cont and i == last else end_token(m, train_mode and i == last)
            key = header_key(m)
            body = plain_body(m)
            hit = headers.get(key)
            plan = None
            sec = None  # cached body ids of a section seen before (same content, same object)
            s = m.structured
            if s is not None and not merge and SECTIONS.interned(s):
                if ctx is None:
                    ctx = fmt.context(conv)
                sec = self.sections.get(s, ctx.has_function_tools)
            if hit is None or (body is None and sec is None):
                if ctx is None:
                    ctx = fmt.context(conv)
                try:
                    plan = fmt.plan(m, end, ctx)
                except OcmlError as exc:
                    exc.index = i
                    exc.args = (exc._render(),)
                    raise
                if hit is None:
                    if merge:
                        hit = (self.pieces_items(plan.prompt), self.pieces_items(plan.header))
                    else:
                        hit = (self.pieces_ids(plan.prompt),
                               self.pieces_ids(plan.header, bool(plan.prompt) and plan.prompt[-1][0] != CTL))
                    if len(headers) >= _HEADER_CACHE_MAX:
                        headers.clear()
                    headers[key] = hit
            if merge:
                p, h = hit
                items += p
                items += h
                train += [f_prompt] * len(p) + [f_header] * len(h)
                owner += [i] * (len(p) + len(h))
            else:
                items += hit
                train += (f_prompt, f_header)
                owner += (i, i)
            if sec is None and plan is not None and s is not None and not merge and SECTIONS.interned(s) \
                    and len(plan.body) == 1 and plan.body[0][0] == TXT and plan.body[0][1]:
                sec = self.text.ids(plan.body[0][1])
                self.sections.put(s, ctx.has_function_tools, sec)  # type: ignore[union-attr]
            if sec is not None:
                items.append(sec)
                train.append(f_body)
                owner.append(i)
            elif plan is None:
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
                    train.append(f_body and kind != OFF)
                    owner.append(i)
            if end:
                items.append((ctl_ids.get(end) if ctl_ids is not None else None) or ctl(end))
                train.append(f_end)
                owner.append(i)
            if after and not (cont and i == last):
                items += after
                train += [False] * len(after)
                owner += [i] * len(after)
        if prompt_mode and not cont:
            if merge:
                gp = self.pieces_items(fmt.generation_prompt())
                items += gp
                train += [False] * len(gp)
                owner += [-1] * len(gp)
            else:
                items.append(self.pieces_ids(fmt.generation_prompt()))
                train.append(False)
                owner.append(-1)
        elif suffix and not prompt_mode and not open_last:
            self._add_framing(job, suffix, merge)
        if merge:
            job.items, job.train, job.owner = merge_runs(items, train, owner)
        return job

    def _add_framing(self, job: RenderJob, pieces: Sequence[Piece], merge: bool) -> None:
        """Conversation framing (``<s>`` / ``</s>``): never trained, owner ``SYNTHESIZED``."""
        its = self.pieces_items(pieces) if merge else (self.pieces_ids(pieces),)
        job.items += its
        job.train += [False] * len(its)
        job.owner += [SYNTHESIZED] * len(its)

    def layout_pieces(self, entries: Sequence[tuple[Piece, bool, int]], conv: Conversation) -> RenderJob:
        """Pieces with their own (trained, owner) flags as one job (fill-in-the-middle documents)."""
        job = RenderJob(conv, ())
        merge = self.format.text_layout.whole_runs
        for (kind, val), t, o in entries:
            if kind == CTL:
                job.items.append(self.control_item(val) if merge else self.control_ids(val))
            elif val:
                job.items.append(val)
            else:
                continue
            job.train.append(t and kind != OFF)
            job.owner.append(o)
        if merge:
            job.items, job.train, job.owner = merge_runs(job.items, job.train, job.owner)
        return job

    def assemble(self, jobs: Sequence[RenderJob]) -> list[RenderResult]:
        """Encode the text of ``jobs`` and cut one set of arrays into per-job results."""
        if self.format.text_layout.whole_runs:  # whole runs: encoded here, cut by the straddling rule
            for job in jobs:
                job.items, job.train, job.owner = expand_runs(job.items, job.train, job.owner, self.text.encode,
                                                              self.byte_len, self.byte_len_list)
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
            return [RenderResult(ids, mask, index, job.conversation, job.dropped, job.open_last)]
        out: list[RenderResult] = []
        a = 0
        k = 0
        for job in jobs:
            b = a + sum(lens[k:k + len(job.items)])
            k += len(job.items)
            out.append(RenderResult(ids[a:b], mask[a:b], index[a:b], job.conversation, job.dropped, job.open_last))
            a = b
        return out

