"""Megatron-Bridge's packed SFT dataset (``--output megatron`` with ``--seq-len``): packed rows
as an MCore ``.sft.bin`` / ``.sft.idx`` pair, the layout of Megatron-Bridge's
``docs/training/packed-sft-indexed-dataset.md`` (``data/packing/indexed.py``).

One IndexedDataset item (and one document) per packed row, int32 words:

- a versioned header: the magic ``0x53465442`` (ASCII ``SFTB``), the format version ``1``,
  the number of sequences in the row;
- ``seq_start_id``: the start offset of each sequence in the row (0 first, strictly
  increasing);
- one word per token: the token id in the low 31 bits, the **target-aligned** loss bit in the
  high bit.  Target-aligned: Bridge's collator feeds ``input_ids[s:e-1]`` and predicts
  ``input_ids[s+1:e]`` with ``loss_mask[s:e-1]`` per sequence, so word ``j`` carries whether
  token ``j + 1`` is trained (ocml's label of that token is not -100); the last word of a
  sequence carries 0.

Rows hold the documents only (Bridge's collator pads a row itself): ocml's padding segment
is left out; ``--pad-to-multiple-of`` pads belong to their document's sequence, as Bridge's
``pad_seq_to_mult`` does.  Pass ``DIR/megatron/train-NNNNN.sft`` (or the folder) as Bridge's
``packed_train_data_path``; ``micro_batch_size`` must be 1 and ``seq_length`` equal ``--seq-len``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..masks import IGNORE
from .megatron import IndexedWriter

ROW_MAGIC = 0x53465442  # ASCII "SFTB"
FORMAT_VERSION = 1
HEADER_WORDS = 3
TOKEN_BITS = 31
SFT_SUFFIX = ".sft"


def encode_row(ids: np.ndarray, labels: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One packed row (its document segments' ``lengths``, back to back from token 0) as
    int32 words: header, sequence starts, ``id | trained(next token) << 31``."""
    n = int(lengths.sum())
    ids = np.asarray(ids[:n], dtype=np.int64)
    trained = np.asarray(labels[:n]) != IGNORE
    starts = np.zeros(lengths.shape[0], dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    loss = np.zeros(n, dtype=np.uint32)
    loss[:-1] = trained[1:]
    loss[(starts + lengths - 1)] = 0  # a sequence's last token predicts nothing inside it
    words = ids.astype(np.uint32) | (loss << np.uint32(TOKEN_BITS))
    header = np.array([ROW_MAGIC, FORMAT_VERSION, starts.shape[0]], dtype=np.int32)
    return np.concatenate((header, starts.astype(np.int32), words.view(np.int32)))


class SftPart:
    """One shard of packed rows as ``<shard>.sft.bin`` / ``<shard>.sft.idx`` (``shards.ShardWriter``)."""

    @staticmethod
    def paths(prefix: Path) -> tuple[list[Path], list[Path]]:
        """(files, folders) this part creates (``IndexedWriter``'s temporary and final names)."""
        p = prefix.with_name(prefix.name + SFT_SUFFIX)
        return [p.with_name("." + p.name + ".bin.tmp"), p.with_name("." + p.name + ".idx.tmp"),
                p.with_name(p.name + ".bin"), p.with_name(p.name + ".idx")], []

    def __init__(self, prefix: Path) -> None:
        self.writer = IndexedWriter(prefix.with_name(prefix.name + SFT_SUFFIX), np.dtype(np.int32))

    def write(self, block: Any) -> None:
        """Rows of a packed ``shards.Block``: each its own item and document."""
        rows = []
        for r in range(block.rows):
            a, b = int(block.seg_offsets[r]), int(block.seg_offsets[r + 1])
            docs = block.seg_doc[a:b] != -1  # -1: the padding segment
            rows.append(encode_row(block.input_ids[r], block.labels[r], block.seg_lengths[a:b][docs]))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([w.shape[0] for w in rows], out=offsets[1:])
        self.writer.add(np.concatenate(rows) if rows else np.zeros(0, np.int32), offsets)

    def commit(self) -> None:
        self.writer.commit()

    def abort(self) -> None:
        self.writer.abort()
