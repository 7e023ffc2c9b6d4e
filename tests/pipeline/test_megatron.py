"""ocml pack --output megatron: Megatron-LM MMIDIDX .bin/.idx pairs (ids + loss mask), read back
by megatron-core's own IndexedDataset (when it imports) and by a reader of the documented layout."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.cli import EXIT_OK, EXIT_USAGE, main
from ocml.encoder.errors import InputError
from ocml.encoder.pipeline.megatron import IndexedDataset, IndexedWriter, token_dtype

from support.megatron import mcore
from support.paths import ROOT

DOCS = [[1, 2, 3], [65000], [5, 6], [7]]


def write(prefix: Path, docs: list[list[int]], dtype: np.dtype) -> None:
    w = IndexedWriter(prefix, dtype)
    flat = np.array([t for d in docs for t in d], dtype=np.int64)
    w.add(flat, np.concatenate(([0], np.cumsum([len(d) for d in docs]))))
    w.commit()


def test_idx_bytes_follow_the_documented_layout(tmp_path: Path):
    write(tmp_path / "x", DOCS, np.dtype(np.uint16))
    lengths = [3, 1, 2, 1]
    want = (b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 8)  # uint16 = code 8
            + struct.pack("<Q", 4) + struct.pack("<Q", 5)                         # sequences; documents + 1
            + struct.pack("<4i", *lengths) + struct.pack("<4q", 0, 6, 8, 12)      # lengths; byte pointers
            + struct.pack("<5q", 0, 1, 2, 3, 4))                                  # one sequence per document
    assert (tmp_path / "x.idx").read_bytes() == want
    assert (tmp_path / "x.bin").read_bytes() == struct.pack("<7H", 1, 2, 3, 65000, 5, 6, 7)
    assert not list(tmp_path.glob(".*"))  # temporaries renamed away


def test_token_dtype_follows_megatron_rule():
    assert token_dtype(50_257) == np.uint16 and token_dtype(65_499) == np.uint16
    assert token_dtype(65_500) == np.int32 and token_dtype(201_088) == np.int32


def test_own_reader_round_trip_and_errors(tmp_path: Path):
    write(tmp_path / "a", DOCS, np.dtype(np.int32))
    ds = IndexedDataset.open(tmp_path / "a")
    assert len(ds) == 4 and ds.dtype == np.int32 and [ds[k].tolist() for k in range(4)] == DOCS
    assert ds.document_indices.tolist() == [0, 1, 2, 3, 4]
    (tmp_path / "b.idx").write_bytes(b"NOTMMIDX" + bytes(40))
    with pytest.raises(InputError, match="not a Megatron"):
        IndexedDataset.open(tmp_path / "b")
    (tmp_path / "a.bin").write_bytes((tmp_path / "a.bin").read_bytes()[:-4])  # truncated copy
    with pytest.raises(InputError, match="index needs"):
        IndexedDataset.open(tmp_path / "a")
    with pytest.raises(InputError):
        IndexedDataset.open(tmp_path / "missing")
    w = IndexedWriter(tmp_path / "c", np.dtype(np.uint16))
    with pytest.raises(InputError, match="outside uint16"):
        w.add(np.array([70_000]), np.array([0, 1]))
    w.abort()
    assert not list(tmp_path.glob("*c*"))


@pytest.mark.needs_torch
def test_byte_identical_to_megatron_core_builder(tmp_path: Path):
    idx = mcore()
    import torch

    for dtype in (np.uint16, np.int32):
        b = idx.IndexedDatasetBuilder(str(tmp_path / f"m{dtype.__name__}.bin"), dtype=dtype)
        for d in DOCS:
            b.add_item(torch.tensor(d))
            b.end_document()
        b.finalize(str(tmp_path / f"m{dtype.__name__}.idx"))
        write(tmp_path / f"o{dtype.__name__}", DOCS, np.dtype(dtype))
        for ext in ("bin", "idx"):
            assert (tmp_path / f"o{dtype.__name__}.{ext}").read_bytes() == \
                (tmp_path / f"m{dtype.__name__}.{ext}").read_bytes(), (dtype, ext)


CONVS = [
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Tokyo?"},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"id": "c1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 20}"},
                  {"role": "assistant", "content": "20 °C and sunny.", "reasoning_content": "The tool said 20."}],
     "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                                 "parameters": {"type": "object",
                                                                "properties": {"city": {"type": "string"}}}}}]},
    *[{"messages": [{"role": "user", "content": f"question {i} " + "東京 😀 " * i},
                    {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]}]} for i in range(6)],
]


@pytest.fixture(scope="module")
def megatron_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("meg")
    src = d / "chats.jsonl"
    src.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CONVS) + "\n{\"messages\": 5}\n")
    out = d / "out"
    # One bad record in 8 (skipped, in errors.jsonl): over the default --max-bad-fraction 0.05.
    assert main(["pack", str(src), "--format", "harmony", "--output", "megatron", "--shard-size", "4",
                 "--workers", "1", "--max-bad-fraction", "0.2", "--out", str(out)]) == EXIT_OK
    return out


def expected() -> list[tuple[np.ndarray, np.ndarray]]:
    enc = encoder.Encoder("harmony")
    return [(r.ids, r.mask) for r in (enc.render(c) for c in CONVS)]


def same_documents(got: list[tuple[np.ndarray, np.ndarray]], want: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """The same documents, each with its own mask, as a multiset: ``ocml pack`` writes them in a
    seeded random order (issue 16's shuffle; ``--no-shuffle`` keeps input order)."""
    def key(d: tuple[np.ndarray, np.ndarray]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
        return tuple(np.asarray(d[0]).tolist()), tuple(np.asarray(d[1]).astype(bool).tolist())

    assert sorted(map(key, got)) == sorted(map(key, want))


def shards(out: Path) -> list[Path]:
    return sorted(p.with_name(p.name.removesuffix("_text_document.idx"))
                  for p in (out / "megatron").glob("*_text_document.idx"))


def test_pack_megatron_read_back_by_own_reader(megatron_out: Path):
    want = expected()
    got = []
    prefixes = shards(megatron_out)
    assert [p.name for p in prefixes] == ["train-00000", "train-00001"]  # 7 documents, 4 per shard
    for p in prefixes:
        ids = IndexedDataset.open(p.with_name(p.name + "_text_document"))
        mask = IndexedDataset.open(p.with_name(p.name + "_loss_mask_document"))
        assert ids.dtype == np.int32 and mask.dtype == np.uint8  # o200k_harmony: 201,088 ids > 65,500
        assert np.array_equal(ids.sequence_lengths, mask.sequence_lengths)
        assert ids.document_indices.tolist() == list(range(len(ids) + 1))
        got += [(ids[k], mask[k]) for k in range(len(ids))]
    same_documents(got, want)
    m = json.loads((megatron_out / "manifest.json").read_text())
    assert m["shards"]["megatron"] == ["megatron/train-00000", "megatron/train-00001"] and not m["packed"]


@pytest.mark.needs_torch
def test_pack_megatron_read_back_by_megatron_core(megatron_out: Path):
    idx = mcore()
    want = expected()
    got = []
    for p in shards(megatron_out):
        ids = idx.IndexedDataset(str(p) + "_text_document")
        mask = idx.IndexedDataset(str(p) + "_loss_mask_document")
        assert len(ids) == len(mask) and ids.document_indices.tolist() == list(range(len(ids) + 1))
        assert ids.index.dtype == np.int32 and mask.index.dtype == np.uint8
        # copies: megatron-core's arrays are views of an mmap it closes when the dataset is freed
        got += [(np.array(ids[k]), np.array(mask[k])) for k in range(len(ids))]
        assert [x.tolist() for x in ids[0:len(ids)]] == [x.tolist() for x, _ in got[-len(ids):]]  # slice reads
    same_documents(got, want)


@pytest.mark.parametrize("extra, field", [
    (["--seq-len", "128", "--no-pack"], "--seq-len"),  # packed with --seq-len: Megatron-Bridge's .sft pair
    (["--pad-to-multiple-of", "8"], "--pad-to-multiple-of"),
    (["--seq-idx"], "--seq-idx"),
])
def test_megatron_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra, field):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(CONVS[1]) + "\n")
    assert main(["pack", str(src), "--output", "megatron", "--out", str(tmp_path / "o"), *extra]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("ocml: [E-USAGE]") and field in err


# -- resume: a killed Megatron run, rerun, gives the uninterrupted output ---------------------------

RESUME_KW = dict(pack=False, shard_size=6, epoch_tokens=2500, chunk_records=8, outputs=["megatron"], plot=False)
CHILD = """
import json, sys
from pathlib import Path
from ocml.encoder.pipeline.run import PackOptions, run
if __name__ == "__main__":
    kw = json.loads(sys.argv[1])
    kw["outputs"] = tuple(kw["outputs"])
    run(PackOptions(inputs=(sys.argv[2],), out=Path(sys.argv[3]), workers=1, **kw))
"""


@pytest.mark.parametrize("fault", ["shard:1", "epoch:2"])
def test_megatron_resume_after_kill(tmp_path: Path, fault: str):
    import os
    import signal
    import subprocess
    import sys

    from ocml.encoder.pipeline.run import FAULT_ENV, PackOptions, run
    from support.pipeline import write_data

    src = tmp_path / "a.jsonl"
    write_data(src, 60, seed=5)
    kw = dict(RESUME_KW, outputs=("megatron",))
    run(PackOptions(inputs=(str(src),), out=tmp_path / "ref", workers=1, **kw))
    env = dict(os.environ, **{FAULT_ENV: fault})
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(RESUME_KW), str(src), str(tmp_path / "out")],
                       env=env, cwd=ROOT, capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()[-2000:]
    res = run(PackOptions(inputs=(str(src),), out=tmp_path / "out", workers=1, **kw))
    assert res.resumed
    ref = sorted(q.relative_to(tmp_path / "ref") for q in (tmp_path / "ref" / "megatron").rglob("*"))
    got = sorted(q.relative_to(tmp_path / "out") for q in (tmp_path / "out" / "megatron").rglob("*"))
    assert ref == got and len(ref) >= 8  # several shards, no temporaries left
    for f in ref:
        assert (tmp_path / "ref" / f).read_bytes() == (tmp_path / "out" / f).read_bytes(), f
