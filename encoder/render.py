"""Messages -> numpy ids, loss mask and per-token message index.

The only place render ids are produced.  Header pieces (``prompt`` + ``header`` of
a plan) repeat across messages, so their ids are cached per ``Format.header_key``
and a plain-text message never builds a plan at all; the text pieces of a render or
batch chunk are encoded in one tokenizer call where the backend can (``ocml.encoder.textenc``),
each exactly as alone; the mask and message index come from run lengths
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
from .plan import CTL, OFF, TXT, MessagePlan, Piece
from .whole_runs import expand_runs, merge_runs
from .section_cache import SECTIONS, SectionIds
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


class PieceLayout:
    """Every text piece encoded on its own (BPE never merges across a piece boundary): a
    header is two id items (prompt, header), a control one id item, and the body ids of an
    interned system/developer section are cached (``encoder.sections``)."""

    cache_sections = True

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.controls = renderer._ctl  # control -> ids, filled by ``control``
        self.control = renderer.control_ids

    def items(self, pieces: Sequence[Piece]) -> tuple[Any, ...]:
        """Pieces (framing, generation prompt, after a message) as layout items: one id item."""
        return (self.renderer.pieces_ids(pieces),)

    def header(self, plan: MessagePlan) -> tuple[tuple[Any, ...], int]:
        """A header's cached items and how many of them are the prompt part."""
        ids = self.renderer.pieces_ids
        return (ids(plan.prompt), ids(plan.header, bool(plan.prompt) and plan.prompt[-1][0] != CTL)), 1

    def finish(self, job: RenderJob) -> None:
        """A laid-out job as it is (RunLayout merges its text runs here)."""

    def expand(self, jobs: Sequence[RenderJob]) -> None:
        """Nothing to expand (RunLayout encodes and cuts its runs here)."""


class RunLayout:
    """Whole runs (``ocml.encoder.whole_runs``): every run of text between two registered
    controls is one item, encoded in one call (a control spelled as text joins the run), its
    segments placed among the tokens by the straddling rule when ``assemble`` expands it."""

    cache_sections = False  # a section's body joins the run around it: its ids alone are not its ids here

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.controls: dict[str, tuple[int, ...] | str] = {}  # control -> its item, filled by ``control``

    def control(self, token: str) -> tuple[int, ...] | str:
        """A registered control as its id, else its text (joins the run)."""
        item = self.controls.get(token)
        if item is None:
            cid = self.renderer.tokenizer.control_id(token)
            item = self.controls[token] = (cid,) if cid is not None else token
        return item

    def items(self, pieces: Sequence[Piece]) -> tuple[Any, ...]:
        """Pieces as layout items: registered controls as ids, text (and controls spelled as text) as text."""
        return tuple(self.control(val) if kind == CTL else val for kind, val in pieces if val)

    def header(self, plan: MessagePlan) -> tuple[tuple[Any, ...], int]:
        prompt = self.items(plan.prompt)
        return prompt + self.items(plan.header), len(prompt)

    def finish(self, job: RenderJob) -> None:
        job.items, job.train, job.owner = merge_runs(job.items, job.train, job.owner)

    def expand(self, jobs: Sequence[RenderJob]) -> None:
        """Encode the runs and cut them by the straddling rule (before the text is encoded)."""
        r = self.renderer
        for job in jobs:
            job.items, job.train, job.owner = expand_runs(job.items, job.train, job.owner, r.text.encode,
                                                          r.byte_len, r.byte_len_list)


def layout_strategy(fmt: Format, renderer: Renderer) -> PieceLayout | RunLayout:
    """The format's layout, chosen once per renderer: the one place render reads the format's
    layout strategy (``Format.text_layout.whole_runs``)."""
    return RunLayout(renderer) if fmt.text_layout.whole_runs else PieceLayout(renderer)


class Renderer:
    """Lays messages out as items, encodes the text, assembles numpy arrays.

    One per (format, tokenizer).  Three phases so a batch pays numpy and thread
    hand-off costs once: ``layout`` (Python, per message, header ids from a cache keyed
    by ``Format.header_key``; the format's ``PieceLayout`` or ``RunLayout``, chosen once),
    ``TextEncoder.encode_items`` (the tokenizer), ``assemble`` (two ``np.repeat`` over
    item lengths for the whole batch).
    """

    def __init__(self, fmt: Format, tokenizer: Tokenizer, threads: int | None = None) -> None:
        self.format = fmt
        self.tokenizer = tokenizer
        self.text = TextEncoder(tokenizer, threads)
        self._ctl: dict[str, tuple[int, ...]] = {}
        self._headers: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]] = {}  # header_key -> (items, prompt items)
        self.sections = SectionIds()  # body ids of interned system/developer sections (encoder.section_cache)
        self.strategy = layout_strategy(fmt, self)

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

    @property
    def byte_len(self) -> np.ndarray:
        """Per id: its byte length (places run segments among tokens, ``ocml.encoder.whole_runs``)."""
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
        terminator, nothing after it - so a model continues it (prefilled generation).  The
        format's strategy (``self.strategy``, chosen once) says how pieces become items."""
        fmt = self.format
        how = self.strategy
        msgs = conv.messages
        job = RenderJob(conv, dropped, open_last)
        items, train, owner = job.items, job.train, job.owner
        headers = self._headers
        ctl, ctl_cache = how.control, how.controls
        after = how.items(fmt.text_layout.after_message) if fmt.text_layout.after_message else ()
        sections = how.cache_sections
        ctx: PlanContext | None = None
        last = keep[-1] if keep else -1
        # prompt mode: the format may leave the last message open for the model to continue
        # (Apertus after tool outputs): no terminator, no generation prompt
        cont = open_last or (prompt_mode and last >= 0 and fmt.prompt_continues(msgs[last]))
        prefix, suffix = fmt.frame_pieces(conv)
        if prefix:
            self._add_framing(job, prefix)
        # per message: bound methods looked up once, the end control's ids from the cache itself
        end_token, header_key, plain_body = fmt.end_token, fmt.header_key, fmt.plain_body
        for i, (f_prompt, f_header, f_body, f_end) in zip(keep, flags):
            m = msgs[i]
            end = "" if cont and i == last else end_token(m, train_mode and i == last)
            key = header_key(m)
            body = plain_body(m)
            hit = headers.get(key)
            plan = None
            sec = None  # cached body ids of a section seen before (same content, same object)
            s = m.structured
            interned = sections and s is not None and SECTIONS.interned(s)
            if interned:
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
                    hit = how.header(plan)
                    if len(headers) >= _HEADER_CACHE_MAX:
                        headers.clear()
                    headers[key] = hit
            head, n_prompt = hit
            items += head
            if n_prompt == 1 and len(head) == 2:  # the piece layout: one prompt item, one header item
                train += (f_prompt, f_header)
            else:
                train += [f_prompt] * n_prompt + [f_header] * (len(head) - n_prompt)
            owner += [i] * len(head)
            if interned and sec is None and plan is not None \
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
                        items.append(ctl_cache.get(val) or ctl(val))
                    elif val:
                        items.append(val)
                    else:
                        continue
                    train.append(f_body and kind != OFF)
                    owner.append(i)
            if end:
                items.append(ctl_cache.get(end) or ctl(end))
                train.append(f_end)
                owner.append(i)
            if after and not (cont and i == last):
                items += after
                train += [False] * len(after)
                owner += [i] * len(after)
        if prompt_mode and not cont:
            gp = how.items(fmt.generation_prompt())
            items += gp
            train += [False] * len(gp)
            owner += [-1] * len(gp)
        elif suffix and not prompt_mode and not open_last:
            self._add_framing(job, suffix)
        how.finish(job)
        return job

    def _add_framing(self, job: RenderJob, pieces: Sequence[Piece]) -> None:
        """Conversation framing (``<s>`` / ``</s>``): never trained, owner ``SYNTHESIZED``."""
        its = self.strategy.items(pieces)
        job.items += its
        job.train += [False] * len(its)
        job.owner += [SYNTHESIZED] * len(its)

    def layout_pieces(self, entries: Sequence[tuple[Piece, bool, int]], conv: Conversation) -> RenderJob:
        """Pieces with their own (trained, owner) flags as one job (fill-in-the-middle documents)."""
        job = RenderJob(conv, ())
        ctl = self.strategy.control
        for (kind, val), t, o in entries:
            if kind == CTL:
                job.items.append(ctl(val))
            elif val:
                job.items.append(val)
            else:
                continue
            job.train.append(t and kind != OFF)
            job.owner.append(o)
        self.strategy.finish(job)
        return job

    def assemble(self, jobs: Sequence[RenderJob]) -> list[RenderResult]:
        """Encode the text of ``jobs`` and cut one set of arrays into per-job results."""
        self.strategy.expand(jobs)
        if len(jobs) == 1:
            items, train, owner = jobs[0].items, jobs[0].train, jobs[0].owner
        else:
            items, train, owner = [], [], []
            for job in jobs:
                items += job.items
                train += job.train
                owner += job.owner
        ids, lens = self.text.encode_items(items)
        mask = np.array(train, dtype=bool).repeat(lens)
        index = np.array(owner, dtype=np.int32).repeat(lens)
        if len(jobs) == 1:
            job = jobs[0]
            return [RenderResult(ids, mask, index, job.conversation, job.dropped, job.open_last)]
        ends = np.cumsum(lens)
        out: list[RenderResult] = []
        a = 0
        k = 0
        for job in jobs:
            k += len(job.items)
            b = int(ends[k - 1]) if k else 0
            out.append(RenderResult(ids[a:b], mask[a:b], index[a:b], job.conversation, job.dropped, job.open_last))
            a = b
        return out

