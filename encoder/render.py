"""Pieces -> numpy ids, loss mask and per-token message index.

The only place ids are produced.  Header pieces (``prompt`` + ``header`` of a
plan) repeat across messages, so their ids are cached per plan key; text
pieces are encoded once each; the mask and message index come from run
lengths (``np.repeat``), never from re-tokenizing or offset mapping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vocab import Tokenizer

from .masks import Flags
from .messages import Conversation
from .pieces import CTL, MessagePlan, Piece

_HEADER_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class RenderResult:
    ids: np.ndarray            # int32 [n]
    mask: np.ndarray           # bool  [n]: trained tokens
    message_index: np.ndarray  # int32 [n]: index into ``conversation.messages``, -1 = generation prompt
    conversation: Conversation  # what was rendered (normalised input)
    dropped: tuple[int, ...] = ()  # messages left out by the CoT policy

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def labels(self) -> np.ndarray:
        """HF-style labels: ids where trained, -100 elsewhere."""
        return np.where(self.mask, self.ids, -100).astype(np.int64)

    def spans(self) -> list[tuple[int, int]]:
        """Trained [start, end) token spans."""
        m = np.concatenate(([False], self.mask, [False])).astype(np.int8)
        d = np.flatnonzero(np.diff(m))
        return [(int(a), int(b)) for a, b in zip(d[::2], d[1::2])]


class Renderer:
    """Encodes pieces with one tokenizer; one per (format, tokenizer)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.encode = tokenizer.encode_text
        self._ctl: dict[str, tuple[int, ...]] = {}
        self._headers: dict[tuple[tuple[Piece, ...], tuple[Piece, ...]], tuple[list[int], list[int]]] = {}

    def control_ids(self, token: str) -> tuple[int, ...]:
        """A control as one id, or (fallback) its ASCII text as ordinary tokens."""
        ids = self._ctl.get(token)
        if ids is None:
            cid = self.tokenizer.control_id(token)
            ids = (cid,) if cid is not None else tuple(self.encode(token))
            self._ctl[token] = ids
        return ids

    def pieces_ids(self, pieces: Sequence[Piece]) -> list[int]:
        out: list[int] = []
        enc = self.encode
        for kind, val in pieces:
            if kind == CTL:
                out.extend(self.control_ids(val))
            elif val:
                out.extend(enc(val))
        return out

    def header_ids(self, plan: MessagePlan) -> tuple[list[int], list[int]]:
        key = (plan.prompt, plan.header)
        hit = self._headers.get(key)
        if hit is None:
            hit = (self.pieces_ids(plan.prompt), self.pieces_ids(plan.header))
            if len(self._headers) >= _HEADER_CACHE_MAX:
                self._headers.clear()
            self._headers[key] = hit
        return hit

    def render(
        self,
        plans: Sequence[MessagePlan],
        flags: Sequence[Flags],
        msg_index: Sequence[int],
        conversation: Conversation,
        tail: Sequence[Piece] = (),
        dropped: tuple[int, ...] = (),
    ) -> RenderResult:
        ids: list[int] = []
        lens: list[int] = []
        train: list[bool] = []
        owner: list[int] = []
        headers = self._headers
        enc = self.encode
        ctl = self.control_ids
        for plan, (f_prompt, f_header, f_body, f_end), mi in zip(plans, flags, msg_index):
            hit = headers.get((plan.prompt, plan.header))
            if hit is None:
                hit = self.header_ids(plan)
            p_ids, h_ids = hit
            n0 = len(ids)
            ids += p_ids
            n1 = len(ids)
            ids += h_ids
            n2 = len(ids)
            for kind, val in plan.body:
                if kind == CTL:
                    ids += ctl(val)
                elif val:
                    ids += enc(val)
            n3 = len(ids)
            for _, val in plan.end:
                ids += ctl(val)
            n4 = len(ids)
            lens += (n1 - n0, n2 - n1, n3 - n2, n4 - n3)
            train += (f_prompt, f_header, f_body, f_end)
            owner += (mi, mi, mi, mi)
        if tail:
            n0 = len(ids)
            ids += self.pieces_ids(tail)
            lens.append(len(ids) - n0)
            train.append(False)
            owner.append(-1)
        ids_arr = np.array(ids, dtype=np.int32)
        lens_arr = np.array(lens, dtype=np.int64)
        return RenderResult(
            ids=ids_arr,
            mask=np.repeat(np.array(train, dtype=bool), lens_arr),
            message_index=np.repeat(np.array(owner, dtype=np.int32), lens_arr),
            conversation=conversation,
            dropped=dropped,
        )


def describe(tokenizer: Tokenizer, result: RenderResult) -> list[dict[str, Any]]:
    """Token-by-token view (for the CLI and debugging)."""
    rows = []
    for k, (i, m, mi) in enumerate(zip(result.ids.tolist(), result.mask.tolist(), result.message_index.tolist())):
        rows.append({"pos": k, "id": i, "text": tokenizer.token_bytes(i).decode("utf-8", "replace"),
                     "train": m, "message": mi})
    return rows
