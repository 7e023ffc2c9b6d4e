"""Megatron-LM indexed datasets (``.bin`` / ``.idx``, the ``MMIDIDX`` layout): write and read.

The layout, as ``megatron/core/datasets/indexed_dataset.py`` (megatron-core 0.16) writes
and reads it, all little-endian:

``.idx``: ``b"MMIDIDX\\x00\\x00"`` (9 bytes), version ``<Q`` = 1, dtype code ``<B`` (``DType``:
uint8 1, int8 2, int16 3, int32 4, int64 5, float64 6, float32 7, uint16 8), sequence count
``<Q``, document count ``<Q`` (= documents + 1: ``document_indices`` starts with 0),
``sequence_lengths`` int32 [sequences], ``sequence_pointers`` int64 [sequences] (byte
offsets into ``.bin``), ``document_indices`` int64 [documents + 1] (the sequence index
where each document ends, 0 first).  ``.bin``: the tokens of every sequence, end to end,
in the dtype.  Token dtype: ``DType.optimal_dtype(vocab size)``: uint16 below 65,500
ids, else int32.

What ocml writes (``ocml pack --output megatron``): one sequence per document, one
document per rendered conversation, *unpacked*: Megatron's ``GPTDataset`` concatenates
documents and cuts them into ``seq_length`` samples at train time itself.  Beside the ids
(``<shard>_text_document``, ``preprocess_data.py``'s naming) the loss mask is its own
indexed dataset (``<shard>_loss_mask_document``, uint8 0/1, same sequence lengths): the
format holds one array per sequence, ids only.  The mask is aligned with the ids (token
k trained or not); a trainer that shifts labels by one takes ``mask[1:]``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np

from ..errors import InputError

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
UINT16_LIMIT = 65500  # megatron-core's DType.optimal_dtype threshold
IDS_KEY = "text_document"
MASK_KEY = "loss_mask_document"


class DTypeCode(IntEnum):
    """megatron-core's ``DType`` codes (the ``.idx`` header byte)."""

    uint8 = 1
    int8 = 2
    int16 = 3
    int32 = 4
    int64 = 5
    float64 = 6
    float32 = 7
    uint16 = 8


def token_dtype(vocab_size: int) -> np.dtype:
    """The ``.bin`` dtype for ids of a vocabulary of ``vocab_size`` (megatron-core's rule)."""
    return np.dtype(np.uint16 if vocab_size < UINT16_LIMIT else np.int32)


def dtype_code(dtype: np.dtype) -> int:
    return int(DTypeCode[np.dtype(dtype).name])


class IndexedWriter:
    """One ``prefix.bin`` / ``prefix.idx`` pair, written sequence by sequence.

    The files are written under hidden temporary names and renamed into place by
    ``commit()`` (``.bin`` first, then ``.idx``: a reader that finds the ``.idx`` finds a
    complete pair)."""

    def __init__(self, prefix: Path, dtype: np.dtype) -> None:
        self.prefix, self.dtype = prefix, np.dtype(dtype)
        self.bin = prefix.with_name(prefix.name + ".bin")
        self.idx = prefix.with_name(prefix.name + ".idx")
        self.tmp_bin = prefix.with_name("." + prefix.name + ".bin.tmp")
        self.tmp_idx = prefix.with_name("." + prefix.name + ".idx.tmp")
        self.lengths: list[np.ndarray] = []
        self.f = open(self.tmp_bin, "wb")

    def add(self, values: np.ndarray, offsets: np.ndarray) -> None:
        """Sequences ``values[offsets[k]:offsets[k+1]]`` (one document each)."""
        if values.size and self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            if values.min() < info.min or values.max() > info.max:
                raise InputError(f"values outside {self.dtype.name} in {self.bin.name}", field="ids",
                                 hint="the vocabulary size decides the dtype: is the tokenizer the one rendered with?")
        self.f.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.lengths.append(np.diff(offsets).astype(np.int32))

    def commit(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int32)
        write_index(self.tmp_idx, self.dtype, lengths, np.arange(lengths.shape[0] + 1, dtype=np.int64))
        os.replace(self.tmp_bin, self.bin)
        os.replace(self.tmp_idx, self.idx)

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()
        self.tmp_bin.unlink(missing_ok=True)
        self.tmp_idx.unlink(missing_ok=True)


def write_index(path: Path, dtype: np.dtype, lengths: np.ndarray, document_indices: np.ndarray) -> None:
    """The ``.idx`` file for sequences of ``lengths`` (pointers derived) and ``document_indices``."""
    lengths = np.asarray(lengths, dtype=np.int32)
    pointers = np.zeros(lengths.shape[0], dtype=np.int64)
    if lengths.shape[0] > 1:
        np.cumsum(lengths[:-1].astype(np.int64) * np.dtype(dtype).itemsize, out=pointers[1:])
    docs = np.asarray(document_indices, dtype=np.int64)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", VERSION))
        f.write(struct.pack("<B", dtype_code(dtype)))
        f.write(struct.pack("<Q", lengths.shape[0]))
        f.write(struct.pack("<Q", docs.shape[0]))
        f.write(lengths.tobytes())
        f.write(pointers.tobytes())
        f.write(docs.tobytes())
        f.flush()
        os.fsync(f.fileno())


@dataclass
class IndexedDataset:
    """A ``prefix.bin`` / ``prefix.idx`` pair read by the documented layout (memory-mapped).

    ``ds[k]``: sequence k (a read-only view); ``sequence_lengths``, ``sequence_pointers``,
    ``document_indices`` as in the ``.idx``."""

    prefix: Path
    dtype: np.dtype
    sequence_lengths: np.ndarray
    sequence_pointers: np.ndarray
    document_indices: np.ndarray
    tokens: np.ndarray  # the whole .bin as one flat array

    @classmethod
    def open(cls, prefix: str | Path) -> IndexedDataset:
        prefix = Path(prefix)
        idx_path = prefix.with_name(prefix.name + ".idx")
        bin_path = prefix.with_name(prefix.name + ".bin")
        try:
            raw = np.memmap(idx_path, dtype=np.uint8, mode="r")
        except FileNotFoundError:
            raise InputError(f"{idx_path}: no such file", code="E-INPUT-FILE", field="prefix",
                             hint="pass the path without .bin / .idx") from None
        if bytes(raw[:9]) != MAGIC:
            raise InputError(f"{idx_path} is not a Megatron MMIDIDX index", code="E-INPUT-FILE", field="prefix")
        version, = struct.unpack("<Q", bytes(raw[9:17]))
        if version != VERSION:
            raise InputError(f"{idx_path}: index version {version}, expected {VERSION}", code="E-INPUT-FILE",
                             field="prefix")
        try:
            dtype = np.dtype(DTypeCode(int(raw[17])).name)
        except ValueError:
            raise InputError(f"{idx_path}: unknown dtype code {int(raw[17])}", code="E-INPUT-FILE",
                             field="prefix") from None
        n_seq, n_doc = struct.unpack("<QQ", bytes(raw[18:34]))
        off = 34
        lengths = np.frombuffer(raw, dtype=np.int32, count=n_seq, offset=off)
        off += 4 * n_seq
        pointers = np.frombuffer(raw, dtype=np.int64, count=n_seq, offset=off)
        off += 8 * n_seq
        docs = np.frombuffer(raw, dtype=np.int64, count=n_doc, offset=off)
        size = bin_path.stat().st_size if bin_path.exists() else -1
        need = int(pointers[-1]) + int(lengths[-1]) * dtype.itemsize if n_seq else 0
        if size < need:
            raise InputError(f"{bin_path} holds {max(size, 0)} bytes, the index needs {need}", code="E-INPUT-FILE",
                             field="prefix", hint="a .bin / .idx pair from different runs, or a partial copy")
        tokens = np.memmap(bin_path, dtype=dtype, mode="r") if size > 0 else np.zeros(0, dtype)
        return cls(prefix, dtype, lengths, pointers, docs, tokens)

    def __len__(self) -> int:
        return int(self.sequence_lengths.shape[0])

    def __getitem__(self, k: int) -> np.ndarray:
        start = int(self.sequence_pointers[k]) // self.dtype.itemsize
        return self.tokens[start:start + int(self.sequence_lengths[k])]
