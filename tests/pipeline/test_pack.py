"""encoder.pack: conservation, labels, positions, fill, windows, determinism, overlong, errors."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import InputError, InputIndexError, InputTypeError, OcmlError, UnknownNameError
from ocml.encoder.pack import IGNORE, PAD_DOC, Packed, Packer, PackReport, concat_packed, pack
from ocml.encoder.packing.bfd import best_fit_decreasing
from ocml.encoder.packing.overlong import message_ends

from support.gen import harmony_conversation
from support.pack import ragged

PAD = 7


def lognormal(n: int, seed: int = 0, hi: int = 12_288) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(np.rint(rng.lognormal(np.log(401), 1.0, n)), 1, hi).astype(np.int64)


def doc_of(r: dict[str, np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = r["offsets"][k], r["offsets"][k + 1]
    return r["ids"][a:b], r["mask"][a:b]


def check_rows(p: Packed, pad_id: int = PAD) -> None:
    """Shape, padding, labels and positions of every row, read from the segment table."""
    rows, seq_len = p.input_ids.shape
    assert p.labels.shape == p.position_ids.shape == (rows, seq_len)
    assert p.input_ids.dtype == np.int32 and p.labels.dtype == np.int64
    assert p.segment_offsets[0] == 0 and p.segment_offsets[-1] == p.segment_lengths.size
    assert all(int(x.sum()) == seq_len for x in p.seq_lengths)
    assert all(c[0] == 0 and c[-1] == seq_len and np.all(np.diff(c) > 0) for c in p.cu_seqlens)
    for docs in p.doc_index:  # padding, if any, is the last segment and only there
        assert not np.any(docs[:-1] == PAD_DOC)
    flat_ids, flat_lab, flat_pos = p.input_ids.ravel(), p.labels.ravel(), p.position_ids.ravel()
    starts = p.segment_offsets_tokens()
    for s, n, d in zip(starts.tolist(), p.segment_lengths.tolist(), p.segment_doc.tolist()):
        assert np.array_equal(flat_pos[s:s + n], np.arange(n))
        assert flat_lab[s] == IGNORE
        if d == PAD_DOC:
            assert np.all(flat_ids[s:s + n] == pad_id) and np.all(flat_lab[s:s + n] == IGNORE)
    rep = p.report
    assert rep.tokens + rep.padding_tokens == rows * seq_len == rep.rows * rep.seq_len
    assert rep.padding_tokens == int(p.padding.sum())
    assert rep.trained_tokens == int(np.count_nonzero(p.labels != IGNORE))


def check_labels(p: Packed, r: dict[str, np.ndarray], index_to_pos: dict[int, int]) -> None:
    """Every segment's labels: the id where the document's mask is true, -100 elsewhere and at its start."""
    flat_ids, flat_lab = p.input_ids.ravel(), p.labels.ravel()
    starts = p.segment_offsets_tokens()
    for s, n, d, st0 in zip(starts.tolist(), p.segment_lengths.tolist(), p.segment_doc.tolist(),
                            p.segment_start.tolist()):
        if d == PAD_DOC:
            continue
        ids, mask = doc_of(r, index_to_pos[d])
        ids, mask = ids[st0:st0 + n], mask[st0:st0 + n]
        assert np.array_equal(flat_ids[s:s + n], ids)
        want = np.where(mask, ids, IGNORE)
        want[0] = IGNORE
        assert np.array_equal(flat_lab[s:s + n], want)


def reassemble(p: Packed, index: int) -> np.ndarray:
    return p.document_tokens(index)


# -- conservation, labels, positions -------------------------------------------------

@pytest.mark.parametrize("overlong", ["split", "truncate", "drop"])
def test_lognormal_mix_conserved_and_labelled(overlong):
    lengths = lognormal(3000, seed=1)
    r = ragged(lengths, seed=1)
    p = pack(r, 4096, pad_id=PAD, overlong=overlong)
    check_rows(p)
    check_labels(p, r, {i: i for i in range(lengths.size)})
    rep = p.report
    over = set(np.flatnonzero(lengths > 4096).tolist())
    assert over, "the mix must contain overlong documents"
    handled = {x.index for x in rep.dropped + rep.truncated + rep.split}
    assert handled == over  # every overlong document reported, nothing else
    for k in range(lengths.size):
        ids, _ = doc_of(r, k)
        if k not in over:
            assert np.array_equal(reassemble(p, k), ids)
    if overlong == "split":
        assert rep.tokens == int(lengths.sum()) and rep.dropped_tokens == 0
        for rec in rep.split:
            assert np.array_equal(reassemble(p, rec.index), doc_of(r, rec.index)[0])
            assert rec.pieces == -(-rec.length // 4096)
    assert rep.tokens + rep.dropped_tokens == int(lengths.sum())
    assert rep.fill_rate >= 0.99
    assert rep.documents == lengths.size - len(rep.dropped)


@pytest.fixture(scope="module")
def harmony_batch(harmony_encoder):
    convs = [harmony_conversation(random.Random(i)) for i in range(300)]
    convs[5] = {"messages": [{"role": "bogus", "content": "x"}]}  # a failed render
    convs[17] = 42
    return harmony_encoder.render_batch(convs, errors="collect")


def test_batch_ragged_keeps_input_index(harmony_batch):
    b = harmony_batch
    rg = b.ragged()
    assert {"ids", "mask", "offsets", "index", "message_index"} <= set(rg)
    ok = [i for i, x in enumerate(b.results) if x is not None]
    assert 5 not in ok and 17 not in ok
    assert rg["index"].tolist() == ok
    for k, i in enumerate(ok):
        a, e = rg["offsets"][k], rg["offsets"][k + 1]
        assert np.array_equal(rg["ids"][a:e], b.results[i].ids)
        assert np.array_equal(rg["message_index"][a:e], b.results[i].message_index)


@pytest.mark.parametrize("seq_len", [256, 1024])
def test_harmony_renders_packed(harmony_batch, harmony_encoder, seq_len):
    b = harmony_batch
    p = pack(b, seq_len, encoder=harmony_encoder, overlong="split")
    pad = harmony_encoder.tokenizer.control_id("<|endoftext|>")
    assert p.pad_id == pad
    check_rows(p, pad)
    rg = b.ragged()
    check_labels(p, rg, {int(i): k for k, i in enumerate(rg["index"])})
    assert sorted(p.report.skipped) == [5, 17]
    for i, res in enumerate(b.results):
        if res is not None:
            assert np.array_equal(p.document_tokens(i), res.ids)
    assert set(p.segment_doc.tolist()) - {PAD_DOC} == {i for i, x in enumerate(b.results) if x is not None}
    # list of RenderResult (None = failed) and the ragged dict give the same rows
    p2 = pack(list(b.results), seq_len, encoder=harmony_encoder)
    p3 = pack(rg, seq_len, pad_id=pad)
    for q in (p2, p3):
        assert np.array_equal(q.input_ids, p.input_ids) and np.array_equal(q.labels, p.labels)
        assert np.array_equal(q.segment_doc, p.segment_doc)


def test_single_render_result_and_default_pad(harmony_encoder):
    enc = encoder.Encoder()  # openchatml-2.2 on o200k_base + registered controls
    r = enc.render([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}])
    p = encoder.pack(r, 64, encoder=enc)
    assert p.rows == 1 and p.seq_lengths[0].tolist() == [len(r), 64 - len(r)]
    assert p.pad_id == enc.tokenizer.control_id("<|endoftext|>")
    want = r.labels.copy()
    want[0] = IGNORE
    assert np.array_equal(p.labels[0, :len(r)], want)
    assert np.array_equal(p.position_ids[0], np.concatenate([np.arange(len(r)), np.arange(64 - len(r))]))


# -- fill, windows, determinism --------------------------------------------------------

def test_fill_and_window_within_a_tenth_of_a_percent():
    lengths = lognormal(20_000, seed=2, hi=4096)
    r = ragged(lengths, seed=2)
    g = pack(r, 4096, pad_id=PAD)
    assert g.report.fill_rate >= 0.995
    for window in (2_000, 5_000):
        w = pack(r, 4096, pad_id=PAD, window=window)
        assert w.report.tokens == g.report.tokens
        assert g.report.fill_rate - w.report.fill_rate <= 0.001, window
    # the default window covers all of this input: same rows as global
    d = Packer(4096, pad_id=PAD)
    d.add_ragged(r["ids"], r["mask"], r["offsets"])
    assert not list(d.ready())
    assert np.array_equal(d.finish().input_ids, g.input_ids)


def test_deterministic_whatever_the_chunking():
    lengths = lognormal(4_000, seed=3)
    r = ragged(lengths, seed=3)
    a = pack(r, 2048, pad_id=PAD, window=700)
    b = pack(r, 2048, pad_id=PAD, window=700)
    # streaming the same documents in uneven chunks (as workers would hand them over)
    packer = Packer(2048, pad_id=PAD, window=700)
    chunks = []
    cuts = [0, 1, 5, 999, 1000, 2345, 3999, 4000]
    for lo, hi in zip(cuts, cuts[1:]):
        off = r["offsets"][lo:hi + 1]
        t0, t1 = off[0], off[-1]
        packer.add_ragged(r["ids"][t0:t1], r["mask"][t0:t1], off - t0, np.arange(lo, hi),
                          r["message_index"][t0:t1])
        chunks += list(packer.ready())
    chunks.append(packer.finish())
    assert len(chunks) > 3
    s = concat_packed(chunks)
    for q in (b, s):
        for name in ("input_ids", "labels", "position_ids", "segment_offsets", "segment_lengths", "segment_doc",
                     "segment_start"):
            assert np.array_equal(getattr(q, name), getattr(a, name)), name
    assert packer.report.to_dict() == a.report.to_dict()
    check_rows(s)


def test_ties_broken_by_input_index():
    # equal lengths: the earlier input index is placed first (in the first row)
    r = ragged([3, 3, 3, 3], seed=4)
    p = pack(dict(r, index=np.array([40, 10, 30, 20])), 6, pad_id=PAD)
    assert [d.tolist() for d in p.doc_index] == [[10, 20], [30, 40]]


def test_add_one_document_at_a_time():
    lengths = lognormal(300, seed=5, hi=900)
    r = ragged(lengths, seed=5)
    packer = Packer(1024, pad_id=PAD, window=None)
    for k in range(lengths.size):
        a, b = r["offsets"][k], r["offsets"][k + 1]
        packer.add(r["ids"][a:b], r["mask"][a:b], index=k, message_index=r["message_index"][a:b])
    p = packer.finish()
    q = pack(r, 1024, pad_id=PAD)
    assert np.array_equal(p.input_ids, q.input_ids) and np.array_equal(p.labels, q.labels)


# -- overlong ------------------------------------------------------------------------------

def test_split_pieces_restart_positions():
    r = ragged([10, 3], seed=6)
    p = pack(r, 4, pad_id=PAD, overlong="split")
    check_rows(p)
    rec = p.report.split[0]
    assert (rec.index, rec.length, rec.kept, rec.pieces) == (0, 10, 10, 3)
    pieces = p.segment_doc == 0
    assert sorted(p.segment_start[pieces].tolist()) == [0, 4, 8]
    assert sorted(p.segment_lengths[pieces].tolist()) == [2, 4, 4]
    assert np.array_equal(p.document_tokens(0), r["ids"][:10])
    assert p.report.documents == 2 and p.report.segments == 4


def test_truncate_at_assistant_message_end(harmony_encoder):
    enc = harmony_encoder
    conv = [{"role": "user", "content": "hi"}]
    for k in range(6):
        conv += [{"role": "assistant", "channel": "final", "content": f"answer number {k} " * 5},
                 {"role": "user", "content": f"question {k}"}]
    conv = conv[:-1]
    r = enc.render(conv)
    ends = message_ends(r.mask, r.message_index)
    assert len(ends) == 6 and ends[-1] == len(r)
    # every cut is right after an assistant terminator
    term = {enc.tokenizer.control_id(t) for t in ("<|end|>", "<|return|>")}
    assert all(int(r.ids[e - 1]) in term for e in ends)
    seq_len = int(ends[2]) + 3  # three assistant messages fit, not four
    short = enc.render([{"role": "user", "content": "yo"}, {"role": "assistant", "content": "ok"}])
    p = pack([r, short], seq_len, encoder=enc, overlong="truncate")
    check_rows(p, p.pad_id)
    (rec,) = p.report.truncated
    assert (rec.index, rec.length, rec.kept, rec.pieces) == (0, len(r), int(ends[2]), 1)
    assert np.array_equal(p.document_tokens(0), r.ids[:ends[2]])
    assert p.report.dropped_tokens == len(r) - int(ends[2])
    # not even the prompt + first assistant message fits: dropped and reported
    p = pack([r], int(ends[0]) - 1, encoder=enc, overlong="truncate")
    (rec,) = p.report.dropped
    assert rec.index == 0 and rec.kept == 0 and "first assistant message" in rec.reason
    assert p.rows == 0 and p.report.dropped_tokens == len(r)


def test_truncate_without_message_index_uses_mask_spans():
    r = ragged([23], seed=7, turn=5)  # trained runs end at 10, 20
    del r["message_index"]
    p = pack(r, 16, pad_id=PAD, overlong="truncate")
    assert p.report.truncated[0].kept == 10


def test_drop_reports_and_empty_documents():
    r = ragged([5, 0, 12, 4], seed=8)
    p = pack(r, 8, pad_id=PAD, overlong="drop")
    assert sorted((x.index, x.length, x.kept) for x in p.report.dropped) == [(1, 0, 0), (2, 12, 0)]
    assert set(p.segment_doc.tolist()) - {PAD_DOC} == {0, 3}
    assert p.report.tokens == 9 and p.report.dropped_tokens == 12


def test_nothing_to_pack():
    p = pack({"ids": [], "mask": [], "offsets": [0]}, 16, pad_id=PAD)
    assert p.input_ids.shape == (0, 16) and p.report.rows == 0 and p.report.fill_rate == 0.0
    assert pack([None, None], 16, pad_id=PAD).report.skipped == [0, 1]


# -- hypothesis: invariants on arbitrary inputs ----------------------------------------

@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), max_size=40), seq_len=st.integers(1, 24),
       overlong=st.sampled_from(["split", "truncate", "drop"]), window=st.sampled_from([None, 1, 3, 10]),
       seed=st.integers(0, 2**16))
def test_invariants(lengths, seq_len, overlong, window, seed):
    r = ragged(lengths, seed=seed, turn=3)
    p = pack(r, seq_len, pad_id=PAD, overlong=overlong, window=window)
    check_rows(p)
    check_labels(p, r, {i: i for i in range(len(lengths))})
    rep = p.report
    reported = {x.index for x in rep.dropped + rep.truncated + rep.split}
    assert reported == {i for i, n in enumerate(lengths) if n == 0 or n > seq_len}
    for i, n in enumerate(lengths):
        if 0 < n <= seq_len or (n > seq_len and overlong == "split"):
            assert np.array_equal(p.document_tokens(i), doc_of(r, i)[0])
    assert rep.tokens + rep.dropped_tokens == sum(lengths)


def naive_bfd(lengths, cap, open_space=()):
    """Sequential best-fit-decreasing, one item at a time (the definition)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    space = list(open_space)
    arrival = list(range(len(space)))  # ties among equal spaces: the bin that got there first
    clock = len(space)
    for i in order:
        fits = [b for b, s in enumerate(space) if 0 < s and lengths[i] <= s]
        if fits:
            b = min(fits, key=lambda b: (space[b], arrival[b]))
        else:
            space.append(cap)
            arrival.append(clock)
            b = len(space) - 1
        space[b] -= lengths[i]
        arrival[b] = clock = clock + 1
    return space


@settings(max_examples=150, deadline=None)
@given(cap=st.integers(1, 30), data=st.data())
def test_grouped_bfd_is_sequential_bfd(cap, data):
    lengths = data.draw(st.lists(st.integers(1, cap), max_size=50))
    open_space = data.draw(st.lists(st.integers(1, cap), max_size=4)) if cap > 1 else []
    res = best_fit_decreasing(np.array(lengths, dtype=np.int64), cap, open_space=np.array(open_space, dtype=np.int64))
    assert res.space.tolist() == naive_bfd(lengths, cap, open_space)
    used = np.bincount(res.bin, weights=np.array(lengths, dtype=np.int64), minlength=res.space.size)
    start = np.concatenate([np.array(open_space, dtype=np.int64), np.full(res.space.size - len(open_space), cap)])
    assert np.array_equal(used.astype(np.int64) + res.space, start)  # every item in exactly one bin
    assert sorted(res.order.tolist()) == list(range(len(lengths)))


# -- result helpers ------------------------------------------------------------------------

def test_trl_columns_and_flat_cu_seqlens():
    r = ragged([5, 6, 2, 7], seed=9)
    p = pack(r, 8, pad_id=PAD)
    for i in range(p.rows):
        row = p.row(i, padding=False)
        n = int(row["seq_lengths"].sum())
        assert row["input_ids"].shape == (n,) and PAD_DOC not in p.doc_index[i][:len(row["seq_lengths"])]
        full = p.row(i)
        assert int(full["seq_lengths"].sum()) == 8
    cu = p.flat_cu_seqlens(slice(1, 3))
    assert cu[0] == 0 and cu[-1] == 16
    assert np.array_equal(cu, np.concatenate([[0], np.cumsum(np.concatenate(p.seq_lengths[1:3]))]))
    d = p.report.to_dict()
    assert d["rows"] == p.rows and isinstance(p.report, PackReport)


def test_report_merge_counts():
    a, b = PackReport(8, documents=1, tokens=5, rows=1, padding_tokens=3), PackReport(8, tokens=8, rows=1)
    a.merge(b)
    assert (a.documents, a.tokens, a.rows, a.fill_rate) == (1, 13, 2, 13 / 16)


# -- bad arguments: typed errors -------------------------------------------------------------

R = ragged([3, 4])


@pytest.mark.parametrize("kwargs,err,field", [
    ({"seq_len": 0}, InputError, "seq_len"),
    ({"seq_len": -5}, InputError, "seq_len"),
    ({"seq_len": "4096"}, InputTypeError, "seq_len"),
    ({"seq_len": 8, "overlong": "wrap"}, UnknownNameError, "overlong"),
    ({"seq_len": 8, "window": 0}, InputError, "window"),
    ({"seq_len": 8, "pad_id": None}, InputError, "pad_id"),
    ({"seq_len": 8, "pad_id": -1}, InputError, "pad_id"),
    ({"seq_len": 8, "pad_id": 1.5}, InputTypeError, "pad_id"),
    ({"seq_len": 8, "encoder": "harmony", "pad_id": None}, InputTypeError, "encoder"),
])
def test_bad_options(kwargs, err, field):
    kw = {"pad_id": PAD, **kwargs}
    with pytest.raises(err) as ei:
        pack(R, **kw)
    assert ei.value.field == field and ei.value.code.startswith("E-")


@pytest.mark.parametrize("docs,field", [
    (dict(R, mask=R["mask"][:-1]), "mask"),
    (dict(R, offsets=np.array([0, 3, 6])), "offsets"),
    (dict(R, offsets=np.array([0, 5, 3, 7])), "offsets"),
    (dict(R, index=np.array([1])), "index"),
    (dict(R, message_index=R["message_index"][:2]), "message_index"),
    (dict(R, ids=R["ids"].astype(float)), "ids"),
    (dict(R, ids=-R["ids"]), "ids"),
    (dict(R, mask=np.full(7, 2)), "mask"),
    ({"ids": R["ids"], "mask": R["mask"]}, "offsets"),
    (["not a result"], "docs"),
    ("text", "docs"),
])
def test_bad_inputs(docs, field):
    with pytest.raises(OcmlError) as ei:
        pack(docs, 8, pad_id=PAD)
    assert ei.value.field == field
    assert isinstance(ei.value, (InputError, InputTypeError))


def test_document_not_in_rows_and_finished_packer():
    p = pack(R, 8, pad_id=PAD)
    with pytest.raises(InputIndexError):
        p.document_tokens(99)
    packer = Packer(8, pad_id=PAD)
    packer.finish()
    with pytest.raises(InputError):
        packer.add([1, 2], [True, False], index=0)


def test_open_bins_carry_across_windows():
    # window=1: every document is its own window; half-empty rows stay open for the next one
    p = pack(ragged([3, 3, 3, 3]), 6, pad_id=PAD, window=1)
    assert p.rows == 2 and p.report.padding_tokens == 0
    assert [d.tolist() for d in p.doc_index] == [[0, 1], [2, 3]]


def test_add_rejects_bad_document():
    packer = Packer(8, pad_id=PAD)
    with pytest.raises(InputTypeError):
        packer.add([[1, 2]], [[True, False]], index=0)
    with pytest.raises(InputTypeError):
        packer.add([1, 2], [True, False], index="a")


@pytest.mark.needs_torch
@pytest.mark.needs_trl
def test_trl_collator_reads_our_rows():
    """TRL's padding-free collator, given our rows' columns, rebuilds our positions,
    labels and cu_seqlens (with or without the padding segment)."""
    pytest.importorskip("torch")
    trl_sft = pytest.importorskip("trl.trainer.sft_trainer")
    r = ragged(lognormal(60, seed=10, hi=300), seed=10)
    p = pack(r, 512, pad_id=PAD)
    collate = trl_sft.DataCollatorForLanguageModeling(pad_token_id=PAD, padding_free=True)
    for padding in (True, False):
        rows = [p.row(i, padding=padding) for i in range(3)]
        out = collate([{k: v.tolist() for k, v in row.items()} for row in rows])
        cat = {k: np.concatenate([row[k] for row in rows]) for k in ("input_ids", "labels", "position_ids")}
        assert np.array_equal(out["input_ids"][0].numpy(), cat["input_ids"])
        assert np.array_equal(out["position_ids"][0].numpy(), cat["position_ids"])
        assert np.array_equal(out["labels"][0].numpy(), cat["labels"])
        if padding:
            assert np.array_equal(out["cu_seq_lens_q"].numpy(), p.flat_cu_seqlens(slice(0, 3)))
