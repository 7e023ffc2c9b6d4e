"""Whole-run encoding: a renderer capability a format opts into (``TextLayout.whole_runs``).

Models trained on a chat template's text tokenized as a whole saw BPE merge across
places where the template puts text right after text (ChatML's ``assistant\\n`` before
the content, Apertus tool brackets and separators).  For such a format the renderer
merges every run of text between two registered controls into one ``Run`` (controls
spelled as text in fallback mode are part of the run) and encodes it in one call, so the
ids equal ``tokenizer.encode(whole_text)`` with the controls as their ids.

The mask still comes from rendering: each piece of a run keeps its trained flag and
owner as a *segment* (its UTF-8 byte length is known when the run is built), and after
the one encode call the token byte lengths place the segment boundaries among the
tokens.  **Straddling rule**: a token that holds bytes of several segments is trained if
any of them is trained (the token that carries the first generated character must be
learned, or the model never learns to emit it); it belongs to the first trained segment
it touches, else to the first segment.  This is the rule of HF
``return_assistant_tokens_mask`` (``char_to_token`` of the first and last generated
character).  Consequence for the prefix property: a prompt render is a prefix of the
training ids up to its last token, which may differ (it straddles the boundary, e.g.
``"\\n"`` + content ``"\\nHi"`` encodes as ``"\\n\\n"``, ``"Hi"``); from there on the
training ids are the trained ones.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any

import numpy as np


class Run:
    """One run of text with per-segment (trained, owner) flags, encoded in one call."""

    __slots__ = ("text", "nbytes", "train", "owner")

    def __init__(self, texts: list[str], train: list[bool], owner: list[int]) -> None:
        self.text = "".join(texts)
        self.nbytes = [len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in texts]
        self.train = train
        self.owner = owner


def merge_runs(items: list[Any], train: list[bool], owner: list[int]) -> tuple[list[Any], list[bool], list[int]]:
    """Join adjacent ``str`` items into one item (a ``str`` when its flags agree, else a ``Run``);
    empty id items between them are dropped, so they do not split a run."""
    out_items: list[Any] = []
    out_train: list[bool] = []
    out_owner: list[int] = []
    k = 0
    n = len(items)
    while k < n:
        it = items[k]
        if type(it) is not str:
            if len(it):
                out_items.append(it)
                out_train.append(train[k])
                out_owner.append(owner[k])
            k += 1
            continue
        j = k + 1
        while j < n and (type(items[j]) is str or not len(items[j])):
            j += 1
        if j == k + 1:  # a lone text item
            if it:
                out_items.append(it)
                out_train.append(train[k])
                out_owner.append(owner[k])
        else:
            keep = [q for q in range(k, j) if type(items[q]) is str and items[q]]
            tr = [train[q] for q in keep]
            ow = [owner[q] for q in keep]
            texts = [items[q] for q in keep]
            if keep:
                same = tr.count(tr[0]) == len(tr) and ow.count(ow[0]) == len(ow)
                out_items.append("".join(texts) if same else Run(texts, tr, ow))
                out_train.append(tr[0])
                out_owner.append(ow[0])
        k = j
    return out_items, out_train, out_owner


def expand_runs(items: list[Any], train: list[bool], owner: list[int], encode: Any,
                byte_len: np.ndarray, byte_len_list: list[int]) -> tuple[list[Any], list[bool], list[int]]:
    """Encode the ``Run`` items (``encode``: in-place list encoder, ``TextEncoder.encode``) and
    cut each into id items of equal (trained, owner) by the straddling rule."""
    at = [k for k, it in enumerate(items) if type(it) is Run]
    if not at:
        return items, train, owner
    texts: list[Any] = [items[k].text for k in at]
    encode(texts)
    out_items: list[Any] = []
    out_train: list[bool] = []
    out_owner: list[int] = []
    prev = 0
    for k, ids in zip(at, texts):
        out_items += items[prev:k]
        out_train += train[prev:k]
        out_owner += owner[prev:k]
        prev = k + 1
        for a, b, t, o in token_ranges(ids, items[k], byte_len, byte_len_list):
            out_items.append(ids[a:b])
            out_train.append(t)
            out_owner.append(o)
    out_items += items[prev:]
    out_train += train[prev:]
    out_owner += owner[prev:]
    return out_items, out_train, out_owner


def token_ranges(ids: Any, run: Run, byte_len: np.ndarray, byte_len_list: list[int]) -> list[list[Any]]:
    """``[start, end, trained, owner]`` token ranges of the encoded ``run`` (the straddling rule).

    Python for id lists (short runs: no numpy call overhead), ``searchsorted`` for arrays."""
    if isinstance(ids, np.ndarray):
        ends_arr = np.cumsum(byte_len[ids])

        def first_ending_after(x: int) -> int:
            return int(ends_arr.searchsorted(x, "right"))
    else:
        ends = list(accumulate(map(byte_len_list.__getitem__, ids)))

        def first_ending_after(x: int) -> int:
            return bisect_right(ends, x)
    out: list[list[Any]] = []
    a = 0
    for nb, tr, ow in zip(run.nbytes, run.train, run.owner):
        b = a + nb
        if b == a:
            continue
        t0, t1 = first_ending_after(a), first_ending_after(b - 1) + 1  # tokens holding bytes [a, b)
        a = b
        if out and t0 < out[-1][1]:  # token t0 straddles: it is the last of the previous range
            last = out[-1]
            if tr and not last[2]:  # trained if any of its segments is, owned by the first trained one
                if last[1] - last[0] > 1:
                    last[1] -= 1
                    out.append([t0, t0 + 1, True, ow])
                else:
                    last[2], last[3] = True, ow
            t0 += 1
            if t0 >= t1:
                continue
        prev = out[-1] if out else None
        if prev is not None and prev[2] == tr and prev[3] == ow and prev[1] == t0:
            prev[1] = t1
        else:
            out.append([t0, t1, tr, ow])
    return out
