"""pack(pad_to_multiple_of=N): conservation, positions, labels, padded seq_lengths, packing
by padded length, seq_idx; the same through ocml pack (Parquet / .npy)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import InputError, OcmlError
from ocml.encoder.pack import IGNORE, PAD_DOC, Packed, Packer, pack

from support.pack import ragged

PAD = 7


def check_padded(p: Packed, r: dict[str, np.ndarray], multiple: int) -> None:
    """Every document's real tokens exactly once; segments padded to ``multiple`` with pad id /
    label -100 / positions continuing; labels = mask elsewhere (first token -100)."""
    seq_len = p.seq_len
    flat_ids, flat_lab, flat_pos = p.input_ids.ravel(), p.labels.ravel(), p.position_ids.ravel()
    seen: dict[int, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for s, n, pad, d, st0 in zip(p.segment_offsets_tokens().tolist(), p.segment_lengths.tolist(),
                                 p.segment_pad.tolist(), p.segment_doc.tolist(), p.segment_start.tolist()):
        assert np.array_equal(flat_pos[s:s + n], np.arange(n))  # positions continue inside the pad
        assert np.all(flat_lab[s + n - pad:s + n] == IGNORE) and np.all(flat_ids[s + n - pad:s + n] == PAD)
        assert flat_lab[s] == IGNORE
        if d == PAD_DOC:
            assert pad == n
            continue
        assert n % multiple == 0 and 0 <= pad < multiple and n - pad > 0
        seen.setdefault(d, []).append((st0, flat_ids[s:s + n - pad], flat_lab[s:s + n - pad]))
    for x in p.seq_lengths:
        assert int(x.sum()) == seq_len
        assert all(v % multiple == 0 for v in x.tolist())
    assert all(c[-1] == seq_len for c in p.cu_seqlens)
    real_total = 0
    for d, pieces in seen.items():
        pieces.sort(key=lambda t: t[0])
        ids = np.concatenate([t[1] for t in pieces])
        a, b = int(r["offsets"][d]), int(r["offsets"][d + 1])
        assert np.array_equal(ids, r["ids"][a:b])  # conservation: each real token once, in order
        assert np.array_equal(p.document_tokens(d), r["ids"][a:b])
        for st0, pid, plab in pieces:
            mask = r["mask"][a + st0:a + st0 + len(pid)]
            want = np.where(mask, pid, IGNORE)
            want[0] = IGNORE
            assert np.array_equal(plab, want)
        real_total += b - a
    assert p.report.tokens == real_total
    assert p.report.padding_tokens == p.rows * seq_len - real_total
    trained = p.labels != IGNORE
    assert p.report.trained_tokens == int(trained.sum())
    # seq_idx: constant over each segment, counting segments from 0 in every row.
    for i, lens in enumerate(p.seq_lengths):
        assert np.array_equal(p.seq_idx[i], np.repeat(np.arange(len(lens)), lens))


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=40), multiple=st.sampled_from([1, 2, 8, 16]),
       rows_of=st.integers(2, 8), window=st.sampled_from([None, 3, 7]),
       overlong=st.sampled_from(["split", "drop", "truncate"]),
       seed=st.integers(0, 3))
def test_pad_to_multiple_invariants(lengths, multiple, rows_of, window, overlong, seed):
    seq_len = multiple * rows_of * 4
    r = ragged(lengths, seed=seed)
    p = pack(r, seq_len, pad_id=PAD, pad_to_multiple_of=multiple, window=window, overlong=overlong)
    # A truncated document keeps its prefix: compare with the input cut where the report says.
    cut = {rec.index: rec.kept for rec in p.report.truncated}
    lens = [cut.get(k, n) for k, n in enumerate(lengths)]
    ids = np.concatenate([r["ids"][r["offsets"][k]:r["offsets"][k] + n] for k, n in enumerate(lens)])
    mask = np.concatenate([r["mask"][r["offsets"][k]:r["offsets"][k] + n] for k, n in enumerate(lens)])
    check_padded(p, {"ids": ids, "mask": mask, "offsets": np.concatenate(([0], np.cumsum(lens)))}, multiple)
    kept = {int(d) for d in p.segment_doc if d != PAD_DOC}
    dropped = {rec.index for rec in p.report.dropped}
    assert kept | dropped == set(range(len(lengths))) and not kept & dropped


def test_packing_places_padded_lengths():
    r = ragged([5, 5, 5])
    assert pack(r, 16, pad_id=PAD).rows == 1                          # 15 tokens fit one row...
    p = pack(r, 16, pad_id=PAD, pad_to_multiple_of=8)                 # ...but 3 x 8 padded slots do not
    assert p.rows == 2 and [x.tolist() for x in p.seq_lengths] == [[8, 8], [8, 8]]
    assert p.segment_doc.tolist() == [0, 1, 2, PAD_DOC]
    assert p.position_ids[0].tolist() == list(range(8)) * 2
    assert p.labels[0, 5:8].tolist() == [IGNORE] * 3 and p.input_ids[0, 5:8].tolist() == [PAD] * 3
    assert p.report.tokens == 15 and p.report.padding_tokens == 17


def test_multiple_of_one_is_no_padding():
    r = ragged([30, 7, 100, 64, 1], seed=2)
    a, b = pack(r, 128, pad_id=PAD), pack(r, 128, pad_id=PAD, pad_to_multiple_of=1)
    for name in ("input_ids", "labels", "position_ids", "segment_lengths", "segment_doc"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_streaming_equals_one_call():
    r = ragged(np.random.default_rng(1).integers(1, 300, 200), seed=1)
    whole = pack(r, 256, pad_id=PAD, pad_to_multiple_of=16, window=50)
    pk = Packer(256, pad_id=PAD, pad_to_multiple_of=16, window=50)
    for a in range(0, 200, 17):
        b = min(a + 17, 200)
        o0, o1 = int(r["offsets"][a]), int(r["offsets"][b])
        pk.add_ragged(r["ids"][o0:o1], r["mask"][o0:o1], r["offsets"][a:b + 1] - o0, np.arange(a, b))
    chunks = list(pk.ready()) + [pk.finish()]
    got = np.concatenate([c.input_ids for c in chunks])
    assert np.array_equal(got, whole.input_ids)


@pytest.mark.parametrize("kwargs, field", [
    (dict(pad_to_multiple_of=0), "pad_to_multiple_of"),
    (dict(pad_to_multiple_of="8"), "pad_to_multiple_of"),
    (dict(pad_to_multiple_of=24), "pad_to_multiple_of"),   # 64 is not a multiple of 24
])
def test_bad_multiple(kwargs, field):
    with pytest.raises(OcmlError) as e:
        pack(ragged([3]), 64, pad_id=PAD, **kwargs)
    assert e.value.field == field


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])  # registered / fallback
def test_rendered_documents_conserved(tokenizer):
    from support.gen import harmony_conversation
    import random

    enc = encoder.Encoder("openchatml-2.2", tokenizer)
    rng = random.Random(3)
    results = [enc.render(harmony_conversation(rng)) for _ in range(12)]
    p = pack(results, 512, encoder=enc, pad_to_multiple_of=64)
    for k, res in enumerate(results):
        assert np.array_equal(p.document_tokens(k), res.ids)
    assert all(int(n) % 64 == 0 for n in p.segment_lengths)
    flat_ids, flat_lab = p.input_ids.ravel(), p.labels.ravel()
    tails = [(s + n - pad, s + n) for s, n, pad in zip(p.segment_offsets_tokens().tolist(),
                                                       p.segment_lengths.tolist(), p.segment_pad.tolist())]
    assert sum(b - a for a, b in tails) == p.report.padding_tokens > 0
    for a, b in tails:
        assert np.all(flat_ids[a:b] == p.pad_id) and np.all(flat_lab[a:b] == IGNORE)


# -- ocml pack ------------------------------------------------------------------------------------

def test_pipeline_pad_to_multiple_and_seq_idx(tmp_path: Path):
    import pyarrow.parquet as pq

    from ocml.encoder.pipeline.run import PackOptions, run

    convs = [{"messages": [{"role": "user", "content": f"question {i} " + "word " * (i * 7 % 50)},
                           {"role": "assistant", "content": f"answer {i} " + "more " * (i * 11 % 40)}]}
             for i in range(40)]
    src = tmp_path / "d.jsonl"
    src.write_text("\n".join(json.dumps(c) for c in convs) + "\n")
    out = tmp_path / "out"
    res = run(PackOptions(inputs=(str(src),), out=out, seq_len=256, workers=1, outputs=("parquet", "npy"),
                          plot=False, pad_to_multiple_of=32, seq_idx=True))
    assert res.report["pack"]["pad_to_multiple_of"] == 32 and "padded to multiples of 32" in res.text
    enc = encoder.Encoder("openchatml-2.2")
    want = [enc.render(c) for c in convs]
    t = pq.read_table(out / "data" / "train-00000.parquet").to_pylist()
    seen = []
    for row in t:
        assert len(row["input_ids"]) == sum(row["seq_lengths"]) == len(row["seq_idx"])
        assert all(n % 32 == 0 for n in row["seq_lengths"])
        assert row["seq_idx"] == [j for j, n in enumerate(row["seq_lengths"]) for _ in range(n)]
        pos = 0
        for n in row["seq_lengths"]:
            assert row["position_ids"][pos:pos + n] == list(range(n))
            seen.append(row["input_ids"][pos:pos + n])
            pos += n
    # every document once: its ids followed by < 32 pad ids with label -100
    pad = json.loads((out / "manifest.json").read_text())["pad_id"]
    for r in want:
        matches = [s for s in seen if s[:len(r)] == r.ids.tolist() and set(s[len(r):]) <= {pad}
                   and len(s) - len(r) < 32]
        assert matches, r.ids[:10]
    npy = out / "npy" / "train-00000"
    si, sl, so = (np.load(npy / f"{n}.npy") for n in ("seq_idx", "seq_lengths", "seq_offsets"))
    for i in range(si.shape[0]):
        lens = sl[so[i]:so[i + 1]]
        assert np.array_equal(si[i], np.repeat(np.arange(len(lens)), lens))
    m = json.loads((out / "manifest.json").read_text())
    assert m["columns"][-1] == "seq_idx" and m["pad_to_multiple_of"] == 32


@pytest.mark.parametrize("kw, field", [
    (dict(seq_len=100, pad_to_multiple_of=64), "--pad-to-multiple-of"),
    (dict(pack=False, pad_to_multiple_of=8), "--pad-to-multiple-of"),
    (dict(pack=False, seq_idx=True), "--seq-idx"),
])
def test_pipeline_option_errors(tmp_path: Path, kw, field):
    from ocml.encoder.pipeline.run import PackOptions, run

    src = tmp_path / "d.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}))
    base = dict(seq_len=128, workers=1, plot=False) | kw
    with pytest.raises(InputError) as e:
        run(PackOptions(inputs=(str(src),), out=tmp_path / "o", **base))
    assert e.value.field == field and e.value.code == "E-USAGE"
    assert not (tmp_path / "o").exists()  # checked before the output folder is claimed
