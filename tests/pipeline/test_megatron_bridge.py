"""``ocml pack --output megatron --seq-len N``: Megatron-Bridge's packed SFT dataset
(``docs/training/packed-sft-indexed-dataset.md``), read back with megatron-core's own
``IndexedDataset`` and decoded by the spec (megatron-bridge's PyPI release, 0.3.1, has no
reader for this layout yet), then fed through the collation Bridge's ``GPTSFTPackedDataset``
does: the (position, target) pairs it trains are exactly the tokens ocml's labels train.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ocml.encoder.pipeline.run import PackOptions, run

from support.paths import FIXTURES

MAGIC, VERSION = 0x53465442, 1  # the spec's "SFTB" and format version
CORPUS = FIXTURES / "datasets"


pytestmark = pytest.mark.needs_torch


def mcore_indexed() -> Any:
    """megatron-core's IndexedDataset (test_megatron's guard: skips only when it cannot import)."""
    from support.megatron import mcore

    return mcore().IndexedDataset


def decode(words: np.ndarray) -> dict[str, Any]:
    """One item by the spec: int32 header (magic, version, boundary count), the sequence start
    offsets, then one word per token (id: low 31 bits, loss bit: the high bit)."""
    assert words.dtype == np.int32 and int(words[0]) == MAGIC and int(words[1]) == VERSION
    n = int(words[2])
    starts = words[3:3 + n].astype(np.int64)
    tokens = words[3 + n:].view(np.uint32)
    assert n > 0 and starts[0] == 0 and np.all(np.diff(starts) > 0) and starts[-1] < tokens.size
    return {"input_ids": (tokens & 0x7FFFFFFF).astype(np.int64), "loss_mask": (tokens >> 31).astype(np.int64),
            "seq_start_id": starts.tolist()}


def bridge_targets(row: dict[str, Any]) -> list[tuple[int, int]]:
    """(position in the row, target id) of every trained target, as Bridge's collator builds
    them per sequence: tokens ``ids[s:e-1]``, labels ``ids[s+1:e]``, loss mask ``mask[s:e-1]``."""
    ids, mask = row["input_ids"], row["loss_mask"]
    bounds = [*row["seq_start_id"], len(ids)]
    out = []
    for s, e in zip(bounds, bounds[1:]):
        out += [(j, int(ids[j + 1])) for j in range(s, e - 1) if mask[j]]
    return out


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("bridge")
    src = tmp / "in.jsonl"
    recs = [json.loads(x) for name in ("openai_function_calling.jsonl", "sharegpt_tools.jsonl",
                                       "multilingual_thinking.jsonl", "alpaca.jsonl", "trl_standard.jsonl")
            for x in (CORPUS / name).read_text("utf-8").splitlines()]
    src.write_text("".join(json.dumps(r) + "\n" for r in recs * 6), encoding="utf-8")
    outs = []
    for kind in ("megatron", "parquet"):
        out = tmp / kind
        run(PackOptions(inputs=(str(src),), out=out, format="harmony", seq_len=512, outputs=(kind,), workers=1,
                        plot=False, shard_size=8, max_bad_fraction=1.0, pad_to_multiple_of=4))
        outs.append(out)
    return outs[0], outs[1]


def test_rows_train_exactly_ocmls_labels(packed):
    IndexedDataset = mcore_indexed()
    import pyarrow.parquet as pq

    meg, par = packed
    m = json.loads((meg / "manifest.json").read_text())
    prefixes = [meg / (p + ".sft") for p in m["shards"]["megatron"]]
    assert prefixes and all(Path(str(p) + ".bin").exists() and Path(str(p) + ".idx").exists() for p in prefixes)
    rows = []
    for p in prefixes:
        ds = IndexedDataset(str(p), mmap=True)
        assert list(ds.document_indices) == list(range(len(ds) + 1))  # one item, one document per row
        rows += [decode(np.array(ds[k])) for k in range(len(ds))]
    table = pq.read_table(sorted((par / "data").glob("*.parquet"))).to_pydict()
    assert len(rows) == len(table["input_ids"]) > 1
    trained = 0
    for row, ids, labels, lengths, docs in zip(rows, table["input_ids"], table["labels"], table["seq_lengths"],
                                               table["doc_record"]):
        n = sum(length for length, d in zip(lengths, docs) if d != -1)  # the padding segment is left out
        assert row["input_ids"].tolist() == ids[:n]
        assert row["seq_start_id"] == np.cumsum([0, *[x for x, d in zip(lengths, docs) if d != -1]])[:-1].tolist()
        # ocml's labels: token j trained = a target predicted at position j - 1
        want = [(j - 1, t) for j, t in enumerate(labels[:n]) if t != -100]
        assert bridge_targets(row) == want
        trained += len(want)
    assert trained > 0


def test_seq_len_with_no_pack_is_a_usage_error(tmp_path):
    from ocml.encoder.cli import EXIT_USAGE, main

    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})
                   + "\n")
    assert main(["pack", str(src), "--output", "megatron", "--seq-len", "64", "--no-pack", "--out",
                 str(tmp_path / "o")]) == EXIT_USAGE


# -- Megatron-LM: GPTDataset over the unpacked ids, with ocml's mask (integrations.megatron_lm) ----------

class _Tokenizer:
    """What GPTDatasetConfig reads from a tokenizer (Harmony's o200k: ids above uint16)."""

    vocab_size, eod, pad = 201088, 199999, 199999
    unique_identifiers = {"class": "ocml-test"}


def test_megatron_lm_samples_train_ocmls_mask(tmp_path):
    mcore_indexed()
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig

    from ocml.encoder.integrations.megatron_lm import MaskedGPTDataset
    from ocml.encoder.pipeline.megatron import IndexedDataset as OwnReader

    src = CORPUS / "openai_function_calling.jsonl"
    run(PackOptions(inputs=(str(src), str(CORPUS / "alpaca.jsonl")), out=tmp_path / "o", format="harmony",
                    outputs=("megatron",), pack=False, workers=1, plot=False, max_bad_fraction=1.0))
    prefix = str(tmp_path / "o" / "megatron" / "train-00000_text_document")
    seq = 32
    cfg = GPTDatasetConfig(random_seed=1, sequence_length=seq, blend=([prefix], None), split="100,0,0",
                           tokenizer=_Tokenizer(), reset_position_ids=False, reset_attention_mask=False,
                           eod_mask_loss=False, path_to_cache=str(tmp_path / "cache"))
    ds = BlendedMegatronDatasetBuilder(MaskedGPTDataset, [8, None, None], lambda: True, cfg).build()[0]
    ids = OwnReader.open(prefix)
    mask = OwnReader.open(prefix.replace("_text_document", "_loss_mask_document"))
    # the stream GPTDataset cuts its samples from: documents in its document_index order
    order = [int(d) for d in ds.document_index]
    flat_ids = np.concatenate([np.asarray(ids[d], np.int64) for d in order])
    flat_mask = np.concatenate([np.asarray(mask[d], bool) for d in order])
    starts = np.concatenate(([0], np.cumsum([len(ids[d]) for d in order])))
    trained = 0
    for k in range(len(ds)):
        s = ds[k]
        doc, offset = ds.sample_index[ds.shuffle_index[k]]
        a = int(starts[int(doc)]) + int(offset)
        assert s["tokens"].tolist() == flat_ids[a:a + seq].tolist()  # the span GPTDataset drew
        want = flat_mask[a + 1:a + seq + 1]                            # label j = token j + 1
        assert (s["loss_mask"].numpy() == 1).tolist() == want.tolist()
        trained += int(want.sum())
    assert 0 < trained < len(ds) * seq
