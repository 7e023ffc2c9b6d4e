"""Packer inputs -> one flat ``Docs`` set (ids, mask, offsets, input index), validated.

Accepted: a ``Batch`` (``render_batch``), a list of ``RenderResult`` / None, one
``RenderResult``, or a ragged dict ``{"ids", "mask", "offsets", "index"?, "message_index"?}``.
Failed renders (None) are not documents: their input indices go to ``Docs.skipped``.
Also the pad-id rule (``resolve_pad_id``), since it reads the same ``encoder`` argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError, article

_RAGGED_KEYS = ("ids", "mask", "offsets")


@dataclass
class Docs:
    """``n`` documents, flat: document k is ``ids[offsets[k]:offsets[k+1]]``."""

    ids: np.ndarray                   # int32 [tokens]
    mask: np.ndarray                  # bool  [tokens]
    offsets: np.ndarray               # int64 [n+1], offsets[0] == 0
    index: np.ndarray                 # int64 [n] input index of each document
    message_index: np.ndarray | None  # int32 [tokens] or None
    skipped: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def as_array(value: Any, name: str, kind: str) -> np.ndarray:
    """``value`` as a 1-D numpy array of integer (``kind="i"``) or bool (``"b"``) values."""
    try:
        arr = np.asarray(value)
    except Exception:  # ragged nested lists and the like
        raise InputTypeError(f"{name} must be a 1-D array", field=name) from None
    if arr.ndim != 1:
        raise InputTypeError(f"{name} must be 1-D, got shape {arr.shape}", field=name)
    if arr.size == 0 and arr.dtype.kind not in "biu":
        arr = arr.astype(np.int64)  # np.asarray([]) is float
    if kind == "b":
        if arr.dtype.kind == "b":
            return arr
        if arr.dtype.kind in "iu" and (arr.size == 0 or (arr.min() >= 0 and arr.max() <= 1)):
            return arr.astype(bool)
        raise InputTypeError(f"{name} must be a bool array (or 0/1 integers), got {arr.dtype}", field=name,
                             hint="the loss mask: True where the token is trained")
    if arr.dtype.kind not in "iu":
        raise InputTypeError(f"{name} must be an integer array, got {arr.dtype}", field=name)
    return arr


def ragged_docs(ids: Any, mask: Any, offsets: Any, index: Any = None, message_index: Any = None,
                *, skipped: Sequence[int] = ()) -> Docs:
    """Check and normalise one ragged document set (every array argument validated)."""
    ids_a = as_array(ids, "ids", "i")
    mask_a = as_array(mask, "mask", "b")
    off = as_array(offsets, "offsets", "i").astype(np.int64, copy=False)
    if ids_a.size and (ids_a.min() < 0 or ids_a.max() > np.iinfo(np.int32).max):
        raise InputError("ids must be token ids in [0, 2**31)", field="ids")
    if mask_a.shape != ids_a.shape:
        raise InputError(f"mask has {mask_a.size} entries for {ids_a.size} ids", field="mask",
                         hint="ids and mask are flat arrays of the same length")
    if off.size == 0 or off[0] != 0 or off[-1] != ids_a.size or (off.size > 1 and np.any(np.diff(off) < 0)):
        raise InputError(f"offsets must rise from 0 to len(ids)={ids_a.size}", field="offsets",
                         hint="offsets has n+1 entries for n documents (np.cumsum of the lengths, 0 first)")
    n = off.size - 1
    if index is None:
        idx = np.arange(n, dtype=np.int64)
    else:
        idx = as_array(index, "index", "i").astype(np.int64, copy=False)
        if idx.size != n:
            raise InputError(f"index has {idx.size} entries for {n} documents", field="index",
                             hint="one input index per document (len(offsets) - 1)")
    mi = None
    if message_index is not None:
        mi = as_array(message_index, "message_index", "i")
        if mi.shape != ids_a.shape:
            raise InputError(f"message_index has {mi.size} entries for {ids_a.size} ids", field="message_index")
    return Docs(ids_a.astype(np.int32, copy=False), mask_a, off, idx, mi, list(skipped))


def _from_results(results: Sequence[Any]) -> Docs:
    from ..render import RenderResult

    index = []
    for i, r in enumerate(results):
        if r is None:
            continue
        if not isinstance(r, RenderResult):
            raise InputTypeError(f"docs[{i}] is {article(type(r).__name__)}, not a RenderResult or None", field="docs",
                                 hint="pass render/render_batch output or a ragged dict")
        index.append(i)
    skipped = [i for i, r in enumerate(results) if r is None]
    ids, mask, offsets, message_index = concat_results([results[i] for i in index])
    return ragged_docs(ids, mask, offsets, np.array(index, dtype=np.int64), message_index, skipped=skipped)


def concat_results(results: Sequence[Any], message_index: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``RenderResult``s -> flat ``ids``, ``mask``, ``offsets`` [n+1] and (if asked) ``message_index``."""
    offsets = np.zeros(len(results) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in results], out=offsets[1:])

    def cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype)

    return (cat([r.ids for r in results], np.int32), cat([r.mask for r in results], bool), offsets,
            cat([r.message_index for r in results], np.int32) if message_index else None)


def as_docs(docs: Any) -> Docs:
    """Any accepted packer input -> ``Docs`` (typed errors for everything else)."""
    from ..batch import Batch
    from ..render import RenderResult

    if isinstance(docs, Docs):
        return docs
    if isinstance(docs, Batch):
        return _from_results(docs.results)
    if isinstance(docs, RenderResult):
        return _from_results([docs])
    if isinstance(docs, Mapping):
        missing = [k for k in _RAGGED_KEYS if k not in docs]
        if missing:
            raise InputError(f"ragged input lacks {', '.join(missing)}", field=missing[0],
                             hint="a ragged dict has ids, mask, offsets (+ index, message_index)")
        return ragged_docs(docs["ids"], docs["mask"], docs["offsets"], docs.get("index"), docs.get("message_index"))
    if isinstance(docs, (list, tuple)):
        return _from_results(docs)
    raise InputTypeError(f"cannot pack {article(type(docs).__name__)}", field="docs",
                         hint="pass a Batch, a list of RenderResult (None = failed), or a ragged dict")


def resolve_pad_id(pad_id: int | None, encoder: Any) -> int:
    """``pad_id`` if given; else ``encoder``'s tokenizer pad token (an HF tokenizer's
    ``pad_token``; ``<|endoftext|>`` where registered, as ``Tokenizer.to_hf`` declares it);
    else the encoder format's first registered stop id (its end-of-turn / eos)."""
    import operator

    if pad_id is not None:
        try:
            pid = operator.index(pad_id)
        except TypeError:
            raise InputTypeError(f"pad_id must be an integer, got {pad_id!r}", field="pad_id") from None
        if not 0 <= pid <= np.iinfo(np.int32).max:
            raise InputError(f"pad_id={pid} is not a token id", field="pad_id")
        return pid
    if encoder is None:
        raise InputError("no pad id: pass pad_id= or encoder=", field="pad_id",
                         hint="e.g. pack(docs, seq_len, encoder=enc) uses the tokenizer's pad / the format's end id")
    from ..codec import Codec
    from ..stops.ids import stop_ids

    if not isinstance(encoder, Codec):
        raise InputTypeError(f"encoder must be an Encoder, got {type(encoder).__name__}", field="encoder")
    tok = encoder.tokenizer
    hf = getattr(tok, "_hf_object", None)  # the transformers object vocab.from_hf wrapped, if any
    name = getattr(hf, "pad_token", None) if hf is not None else None
    for candidate in (name, "<|endoftext|>"):
        if candidate is not None:
            cid = tok.control_id(str(candidate))
            if cid is not None:
                return cid
    stops = stop_ids(encoder)
    if stops:
        return int(stops[0])
    raise InputError(f"{encoder!r} has no pad token and no registered stop id", field="pad_id",
                     hint="pass pad_id= explicitly")
