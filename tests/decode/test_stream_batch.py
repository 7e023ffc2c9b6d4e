"""Batched stream decoding (encoder.stream.batch): a step is B single-id feeds.

THE property: for every row, every ``BatchDecoder.step`` returns exactly what
``StreamDecoder.feed([id])`` of that row's own decoder returns (same events, unmerged),
``finish`` what ``finish()`` returns, and status / done / messages / scanner positions agree
- in id mode (Harmony) and fallback mode (OpenChatML 2.2 on o200k_base, controls as text),
on both step paths (numpy-gathered and the Python row loop), with stop strings, stop ids,
``include_stop_str_in_output``, UTF-8 split over tokens, pad ids (no token this step), rows
finishing at different times, and slots reused for new requests with other options.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ocml import encoder
import ocml.encoder.stream.batch as batch_mod
from ocml.encoder.errors import ParseError
from ocml.encoder.events import Error, Stop
from ocml.encoder.stream.batch import BatchDecoder, BatchParseError, batch_decoder
from ocml.encoder.stream.decoder import StreamDecoder

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.stream import STOPS, build, byte_ids, cases, ctl, final_prefix, pool  # noqa: E402

PAD = -1


@pytest.fixture(scope="module")
def encs():
    return {
        "harmony": encoder.Encoder("harmony"),
        "ocml-text": encoder.Encoder("openchatml-2.2", tokenizer="o200k_base"),
    }


MODES = ["harmony", "ocml-text"]
PATHS = [True, False]  # vectorized


# -- the harness --------------------------------------------------------------------------

class Row:
    """A slot's schedule: requests (decoder kwargs, ids) one after the other, with pads."""

    def __init__(self, segments, rng: random.Random, pad_p: float, delay: int) -> None:
        self.segments = list(segments)
        self.rng = rng
        self.pad_p = pad_p
        self.delay = delay
        self.seg = 0
        self.pos = 0


def drive(enc, rows: list[Row], vectorized: bool, base_kw: dict, *, pad_id=PAD, sync_p: float = 0.05,
          rng: random.Random | None = None) -> tuple[BatchDecoder, list[StreamDecoder]]:
    """Run the schedule through a BatchDecoder and through one StreamDecoder per row; compare every call."""
    rng = rng or random.Random(0)
    n = len(rows)
    bd = BatchDecoder(enc, n, vectorized=vectorized, pad_id=pad_id, **base_kw)
    refs: list[StreamDecoder] = []
    for r, row in enumerate(rows):
        kw = row.segments[0][0]
        if kw != base_kw:
            bd.reset(r, **kw)
        refs.append(StreamDecoder(enc, **kw))
    pad = PAD if pad_id is None else pad_id
    steps = 0
    while any(row.seg < len(row.segments) for row in rows):
        steps += 1
        assert steps < 10_000
        ids, expect = [], []
        for r, row in enumerate(rows):
            i = pad
            if row.seg < len(row.segments):
                if row.delay > 0:
                    row.delay -= 1
                elif row.rng.random() >= row.pad_p:
                    seg_ids = row.segments[row.seg][1]
                    # after a stop the row may still be sent ids (ignored) for a while
                    ended = row.pos >= len(seg_ids) or (refs[r].done and row.rng.random() < 0.5)
                    if not ended:
                        i = seg_ids[row.pos]
                        row.pos += 1
                    else:
                        # end of this request: finish it (max tokens / EOS), reuse the slot
                        want = refs[r].finish()
                        got = bd.finish([r])
                        assert got[r] == want and all(g == [] for k, g in enumerate(got) if k != r)
                        assert refs[r].done and bd.done[r]
                        row.seg += 1
                        row.pos = 0
                        if row.seg < len(row.segments):
                            kw = row.segments[row.seg][0]
                            if rng.random() < 0.5 and kw == row.segments[row.seg - 1][0]:
                                bd.reset(r)  # same options: the slot's decoder is reused
                                refs[r].reset()
                            else:
                                bd.reset(r, **kw)
                                refs[r] = StreamDecoder(enc, **kw)
                            assert not bd.done[r] and bd.status_of(r) == "running"
            ids.append(i)
            expect.append([] if i == pad and pad_id is not None else refs[r].feed([i]))
        arg = np.array(ids, dtype=np.int64) if rng.random() < 0.5 else ids
        got = bd.step(arg)
        assert len(got) == n
        for r in range(n):
            assert got[r] == expect[r], (r, ids[r], got[r], expect[r])
        assert bd.done.tolist() == [d.done for d in refs]
        if rng.random() < sync_p:
            r = rng.randrange(n)
            assert bd.decoder(r).scanner.index == refs[r].scanner.index
            assert bd.decoder(r).scanner.pending == refs[r].scanner.pending
            assert bd.decoder(r).scanner.run_index == refs[r].scanner.run_index
    final = bd.finish()
    for r in range(n):
        assert final[r] == refs[r].finish()
    check_same(bd, refs)
    return bd, refs


def check_same(bd: BatchDecoder, refs: list[StreamDecoder]) -> None:
    assert bd.status == [d.status for d in refs]
    assert bd.done.tolist() == [d.done for d in refs]
    assert bd.stopped == [d.stopped for d in refs]
    for r, d in enumerate(refs):
        assert bd.messages(r) == d.messages
        assert bd.final_message(r) == d.final_message
        assert bd.decoder(r).scanner.index == d.scanner.index
        assert bd.decoder(r).scanner.run_index == d.scanner.run_index


def kw_options(enc) -> list[dict]:
    eot = enc.tokenizer.control_id("<|endoftext|>")
    base = dict(role="assistant", strict=False, stop_strings=(), stop_channels=("final",), stop_ids=(),
                include_stop_str_in_output=False)
    return [
        base,
        dict(base, stop_strings=tuple(STOPS)),
        dict(base, stop_strings=tuple(STOPS), include_stop_str_in_output=True),
        dict(base, stop_strings=("Pari", "hello"), stop_channels=None, stop_ids=(eot,)),
        dict(base, stop_ids=(eot,)),
    ]


# -- property: batch == per-row single-id feeds ------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_step_equals_single_id_feeds(encs, mode, vectorized, data):
    enc = encs[mode]
    pieces = pool(enc, mode)
    eot = enc.tokenizer.control_id("<|endoftext|>")
    opts = kw_options(enc)
    analysis = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>")
    n_rows = data.draw(st.integers(1, 6))
    rows = []
    for _ in range(n_rows):
        segs = []
        for _ in range(data.draw(st.integers(1, 3))):
            picks = data.draw(st.lists(st.integers(0, len(pieces) - 1), max_size=25))
            head = data.draw(st.sampled_from(["final", "analysis", "none"]))
            ids = (final_prefix(enc) if head == "final" else analysis if head == "analysis" else [])
            ids = ids + [i for k in picks for i in pieces[k]]
            tail = data.draw(st.sampled_from(["", "return", "eot", "end"]))
            if tail == "return":
                ids += build(enc, "ctl:<|return|>", "tail")
            elif tail == "eot":
                ids += [eot] + build(enc, "more")
            elif tail == "end":
                ids += ctl(enc, "<|end|>")
            segs.append((opts[data.draw(st.integers(0, len(opts) - 1))], ids))
        rows.append(Row(segs, random.Random(data.draw(st.integers(0, 2 ** 16))),
                        pad_p=data.draw(st.sampled_from([0.0, 0.0, 0.2, 0.6])), delay=data.draw(st.integers(0, 5))))
    drive(enc, rows, vectorized, opts[data.draw(st.integers(0, len(opts) - 1))],
          rng=random.Random(data.draw(st.integers(0, 2 ** 16))))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
def test_generated_completions(encs, mode, vectorized):
    """Rendered assistant turns (tests/support/gen.py), many rows at once, starting and ending at different steps."""
    enc = encs[mode]
    rng = random.Random(21)
    comps = [c for c, _ in cases(enc, 24, 31)]
    opts = kw_options(enc)
    rows = [Row([(rng.choice(opts), c) for c in comps[k::8]], random.Random(k), pad_p=rng.choice([0.0, 0.1]),
                delay=rng.randrange(20)) for k in range(8)]
    bd, refs = drive(enc, rows, vectorized, opts[0], rng=rng)
    # without stop options, a row's last request reads like the batch parser
    for r, row in enumerate(rows):
        kw, ids = row.segments[-1]
        if kw == opts[0]:
            stop = refs[r].stopped
            upto = ids[:stop.position + 1] if stop else ids
            assert bd.messages(r) == enc.parse(upto, role="assistant")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
def test_long_rows_lean_path(encs, mode, vectorized):
    """Mostly lean steps (every row inside content at once), then stops at different times."""
    enc = encs[mode]
    rng = random.Random(5)
    words = ["hello", " world", " Paris", " is", " nice", ".", "\n", " 日本", " é", " 🙂", " x"]
    opts = kw_options(enc)
    rows = []
    for k in range(20):
        body = "".join(rng.choice(words) for _ in range(rng.randint(20, 120)))
        ids = final_prefix(enc) + enc.tokenizer.encode_text(body)
        if k % 3 == 0:
            ids += ctl(enc, "<|return|>")
        elif k % 3 == 1:
            ids += byte_ids(enc, "🙂 Paris".encode())
        rows.append(Row([(opts[k % 3], ids)], random.Random(k), pad_p=0.0, delay=0))
    bd, refs = drive(enc, rows, vectorized, opts[0], rng=rng)
    assert any(d.status == "final" for d in refs) and any(d.stopped and d.stopped.reason == "stop_string"
                                                         for d in refs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
def test_utf8_split_across_steps(encs, mode, vectorized):
    """Multi-byte characters one byte per step; rows at different phases of the same character."""
    enc = encs[mode]
    text = "🙂日本é👨‍👩‍👧 ok 结束"
    body = byte_ids(enc, text.encode())
    rows = [Row([(kw, final_prefix(enc) + body + ctl(enc, "<|end|>"))], random.Random(k), pad_p=0.0, delay=k)
            for k, kw in enumerate([dict(role="assistant"), dict(role="assistant", stop_strings=("结束",))] * 3)]
    bd, refs = drive(enc, rows, vectorized, dict(role="assistant"))
    for r, d in enumerate(refs):
        ds = d.messages[0].content
        assert "\ufffd" not in ds
        assert ds == (text if r % 2 == 0 else text[:text.index("结束")])


@pytest.mark.parametrize("vectorized", PATHS)
@pytest.mark.parametrize("max_lanes", [2, 4, 6])
def test_many_channels_flush_lanes(encs, monkeypatch, vectorized, max_lanes):
    """More (table, channel, visible) lanes than MAX_LANES: caches flushed or rows without a lane, same events."""
    monkeypatch.setattr(batch_mod, "MAX_LANES", max_lanes)
    enc = encs["harmony"]
    rng = random.Random(max_lanes)
    vocab = [" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta", " iota", " kappa", " lambda",
             " mu", " nu", " xi", " omicron", " pi", " rho", " sigma", " tau", " upsilon"]
    rows = []
    for k in range(8):
        ids = []
        for m in range(6):
            words = "".join(rng.choice(vocab) for _ in range(rng.randint(1, 12)))
            ids += build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", f"ch{rng.randrange(7)}",
                         "ctl:<|message|>", words, "ctl:<|end|>")
        rows.append(Row([(dict(role=None), ids)], random.Random(k), pad_p=0.0, delay=0))
    bd, refs = drive(enc, rows, vectorized, dict(role=None), rng=rng)
    assert len({m.channel for d in refs for m in d.messages}) == 7


@pytest.mark.parametrize("vectorized", PATHS)
def test_same_channel_other_visibility(encs, vectorized):
    """commentary with intent=preamble is visible, plain commentary is not: separate Delta caches."""
    enc = encs["ocml-text"]
    body = "I will look it up"
    pre = build(enc, "ctl:<|channel|>", "commentary intent=preamble", "ctl:<|message|>", body, "ctl:<|end|>")
    plain = build(enc, "ctl:<|channel|>", "commentary", "ctl:<|message|>", body, "ctl:<|end|>")
    rows = [Row([(dict(role="assistant"), ids)], random.Random(k), pad_p=0.0, delay=k % 3)
            for k, ids in enumerate([pre, plain, plain, pre, pre, plain])]
    bd, refs = drive(enc, rows, vectorized, dict(role="assistant"))
    assert [d.messages[0].content for d in refs] == [body] * 6
    if refs[0].messages[0].intent == "preamble":
        assert bd.messages(0)[0].intent == "preamble" and bd.messages(1)[0].intent is None


# -- API details ----------------------------------------------------------------------------------

@pytest.mark.parametrize("vectorized", PATHS)
def test_pad_ids_and_input_types(encs, vectorized):
    enc = encs["harmony"]
    ids = final_prefix(enc) + enc.tokenizer.encode_text("ab cd") + ctl(enc, "<|end|>")
    for conv in (list, np.array, lambda x: np.array(x, dtype=np.int32), lambda x: np.array(x, dtype=object),
                 lambda x: [np.int64(i) for i in x]):
        bd = BatchDecoder(enc, 2, vectorized=vectorized)
        ev0 = []
        for i in ids:
            out = bd.step(conv([i, PAD]))
            ev0 += out[0]
            assert out[1] == []
        ref = enc.decoder(role="assistant")
        assert ev0 == [e for i in ids for e in ref.feed([i])]
        assert bd.decoder(1).scanner.index == 0 and bd.status == [ref.status, "running"] == ["running"] * 2
    bd = BatchDecoder(enc, 2, vectorized=vectorized)
    with pytest.raises(ValueError):
        bd.step([1, 2, 3])
    with pytest.raises(TypeError):
        bd.step(np.array([1.5, 2.0]) if vectorized else [1.5, 2])
    with pytest.raises(IndexError):
        bd.reset(2)
    # pad_id=None: -1 is fed (E-VOCAB-ID), as StreamDecoder does; a non-negative pad id
    for pad_id, probe in ((None, -1), (ids[-2], ids[-2]), (-7, 10 ** 12)):
        bd = BatchDecoder(enc, 3, vectorized=vectorized, pad_id=pad_id)
        bd.step([ids[0]] * 3)
        bd.step([ids[1]] * 3)
        bd.step([ids[2]] * 3)
        ref = enc.decoder(role="assistant")
        for i in ids[:3]:
            ref.feed([i])
        out = bd.step([probe, ids[3], 2 ** 70 if vectorized else probe])
        want = [] if probe == pad_id else ref.feed([probe])
        assert out[0] == want
        if probe == -1:
            assert [e.code for e in out[0] if type(e) is Error] == ["E-VOCAB-ID"]


def test_default_path_and_factory(encs):
    enc = encs["harmony"]
    assert batch_decoder(enc, batch_mod.VECTOR_MIN_ROWS)._vectorized
    assert not batch_decoder(enc, max(batch_mod.VECTOR_MIN_ROWS - 1, 1))._vectorized or batch_mod.VECTOR_MIN_ROWS <= 1
    bd = batch_decoder(enc, 4, stop_strings=["Pari"])
    assert len(bd) == 4 and bd.decoder(0).stop_strings == ("Pari",) and bd.decoder(0).role == "assistant"
    with pytest.raises(ValueError):
        BatchDecoder(enc, 0)


@pytest.mark.parametrize("vectorized", PATHS)
def test_done_rows_ignore_ids_and_finish(encs, vectorized):
    enc = encs["harmony"]
    a = final_prefix(enc) + enc.tokenizer.encode_text("yes") + ctl(enc, "<|return|>")
    b = final_prefix(enc) + enc.tokenizer.encode_text("no no no no")
    bd = BatchDecoder(enc, 2, vectorized=vectorized)
    for k in range(len(b)):
        bd.step([a[k] if k < len(a) else b[0], b[k]])
    assert bd.done.tolist() == [True, False]
    assert bd.stopped[0] == Stop("return", "<|return|>", len(a) - 1, 0) and bd.stopped[1] is None
    assert bd.step([a[0], PAD]) == [[], []]  # a stopped row ignores its ids
    out = bd.finish([1])
    assert out[0] == [] and [type(e).__name__ for e in out[1]] == ["Error", "MessageEnd"]
    assert bd.status == ["final", "truncated"] and bd.done.all()
    assert bd.finish() == [[], []]
    bd.reset(0)
    assert bd.done.tolist() == [False, True] and bd.status_of(0) == "running"
    # done is a copy
    bd.done[:] = True
    assert not bd.done[0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
def test_strict_row_error_does_not_abort_the_step(encs, mode, vectorized):
    enc = encs[mode]
    eot = enc.tokenizer.control_id("<|endoftext|>")
    good = final_prefix(enc) + enc.tokenizer.encode_text("fine words")
    bad = final_prefix(enc) + enc.tokenizer.encode_text("x") + [eot]
    # raises on the stray text, flushed at <|start|>: the decoder itself is not done
    stray = final_prefix(enc) + enc.tokenizer.encode_text("hi") + ctl(enc, "<|end|>") + \
        enc.tokenizer.encode_text("garbage") + ctl(enc, "<|start|>") + enc.tokenizer.encode_text("assistant")
    bd = BatchDecoder(enc, 4, vectorized=vectorized, strict=True, stop_ids=[eot])
    refs = [enc.decoder(role="assistant", strict=True, stop_ids=[eot]) for _ in range(4)]
    n = max(len(good), len(bad), len(stray))
    raised = None
    seen: set[int] = set()
    for k in range(n):
        ids = [good[k] if k < len(good) else PAD, bad[k] if k < len(bad) else PAD, good[k] if k < len(good) else PAD,
               stray[k] if k < len(stray) and 3 not in seen else PAD]
        want, errs = [], {}
        for r, i in enumerate(ids):
            try:
                want.append([] if i == PAD else refs[r].feed([i]))
            except ParseError as e:
                want.append([])
                errs[r] = e
        if errs:
            with pytest.raises(BatchParseError) as ei:
                bd.step(ids)
            raised = ei.value
            assert set(raised.errors) == set(errs) and set(errs) <= {1, 3} and raised.events == want
            first = min(errs)
            assert raised.code == errs[first].code and isinstance(raised, ParseError)
            seen |= set(errs)
        else:
            assert bd.step(ids) == want
    assert raised is not None and seen == {1, 3}
    assert not refs[3].done  # the decoder that raised on stray text does not call itself done
    assert bd.done.tolist() == [False, True, False, True] and bd.status_of(1) == "truncated"
    assert bd.step([PAD, good[0], PAD, good[0]]) == [[], [], [], []]  # rows that raised are out until reset
    bd.reset(1)
    refs[1].reset()
    bd.reset(3)
    refs[3].reset()
    assert bd.step([PAD, good[0], PAD, good[0]]) == [[], refs[1].feed([good[0]]), [], refs[3].feed([good[0]])]
    want, errs = [], set()
    for r, d in enumerate(refs):
        try:
            want.append(d.finish())
        except ParseError:
            want.append([])
            errs.add(r)
    assert {0, 2} <= errs  # rows 0 and 2 end inside a message: truncation raises in strict mode
    with pytest.raises(BatchParseError) as ei:
        bd.finish()
    assert set(ei.value.errors) == errs and ei.value.events == want
    assert bd.done.all() and bd.status == [d.status for d in refs]


@pytest.mark.parametrize("vectorized", PATHS)
def test_reset_with_other_options(encs, vectorized):
    """Continuous batching: a slot gets a request with its own role / stop strings."""
    enc = encs["ocml-text"]
    ids = final_prefix(enc) + enc.tokenizer.encode_text("It is Paris, yes") + ctl(enc, "<|end|>")
    bd = BatchDecoder(enc, 2, vectorized=vectorized)
    bd.reset(1, stop_strings=["Pari"], include_stop_str_in_output=True)
    outs = [[], []]
    for i in ids:
        for r, ev in enumerate(bd.step([i, i])):
            outs[r] += ev
    assert bd.messages(0)[0].content == "It is Paris, yes"
    assert bd.messages(1)[0].content == "It is Pari" and bd.stopped[1].reason == "stop_string"
    assert bd.decoder(1).role == "assistant"
    bd.reset(1)  # keeps the row's own options
    assert bd.decoder(1).stop_strings == ("Pari",)
    bd.reset(1, role=None)
    assert bd.decoder(1).role is None and bd.decoder(1).stop_strings == ()


@pytest.mark.parametrize("vectorized", PATHS)
def test_fallback_literal_blocks(encs, vectorized):
    """OpenChatML 2.2 literal blocks in fallback mode: rows switch to the literal fast_text table and back."""
    enc = encs["ocml-text"]
    rng = random.Random(9)
    opts = kw_options(enc)
    rows = []
    for k in range(6):
        body = "before <|literal|> inside <|end|> still Paris " + "words " * rng.randint(0, 30) + \
            "<|endliteral|> after Paris 结束"
        ids = final_prefix(enc) + enc.tokenizer.encode_text(body) + ctl(enc, "<|end|>")
        rows.append(Row([(opts[k % len(opts)], ids)], random.Random(k), pad_p=0.1, delay=k))
    bd, refs = drive(enc, rows, vectorized, opts[0], rng=rng)
    assert "<|end|> still" in refs[0].messages[0].content
    # some row streamed inside the literal block on the lean path (its own lane)
    assert any(lane.ft is refs[0].tables.literal.fast_text for _, lane in bd._lanes.values())


# -- engines that strip the stop token: finish(stop_reason=..., eos=...) per row ------------

def _stripped_rows(enc):
    """Four rows whose engine stripped the stop: an answer (<|return|>), a tool call (<|call|>),
    a stop string, and a row that hit max tokens (no stop)."""
    tok = enc.tokenizer
    answer = final_prefix(enc) + tok.encode_text("It is sunny")
    call = (ctl(enc, "<|channel|>") + tok.encode_text("commentary to=functions.get_weather ")
            + ctl(enc, "<|constrain|>") + tok.encode_text("json") + ctl(enc, "<|message|>")
            + tok.encode_text('{"city": "Oslo"}'))
    return [answer, call, final_prefix(enc) + tok.encode_text("Observation: x"), final_prefix(enc) + tok.encode_text("cut")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vectorized", PATHS)
def test_finish_with_engine_stops_equals_each_decoder(encs, mode, vectorized):
    enc = encs[mode]
    rows = _stripped_rows(enc)
    reasons = {0: ctl(enc, "<|return|>")[0] if len(ctl(enc, "<|return|>")) == 1 else "<|return|>",
               2: "Observation:"}
    eos = {1: True}
    bd = BatchDecoder(enc, len(rows), vectorized=vectorized)
    width = max(map(len, rows))
    for k in range(width):
        bd.step([r[k] if k < len(r) else PAD for r in rows])
    got = bd.finish(stop_reason=reasons, eos=eos)
    for r, ids in enumerate(rows):
        ref = StreamDecoder(enc, role="assistant")
        ref.feed(ids)
        want = ref.finish(reasons.get(r), eos=eos.get(r, False))
        assert got[r] == want, r
        assert bd.status_of(r) == ref.status and bd.decoder(r).to_openai() == ref.to_openai()
    assert bd.status == ["final", "tool_call", "final", "truncated"]
    assert bd.decoder(1).to_openai().finish_reason == "tool_calls"


@pytest.mark.parametrize("vectorized", PATHS)
def test_finish_one_value_for_the_rows_asked_and_bad_values_end_no_row(encs, vectorized):
    enc = encs["harmony"]
    rows = _stripped_rows(enc)[:2]
    bd = BatchDecoder(enc, 2, vectorized=vectorized)
    for k in range(max(map(len, rows))):
        bd.step([r[k] if k < len(r) else PAD for r in rows])
    with pytest.raises(TypeError):  # checked for every row before any row ends
        bd.finish(stop_reason={0: "<|return|>", 1: 3.5})
    with pytest.raises(ValueError):
        bd.finish(stop_reason="<|return|>", eos=True)
    assert not bd.done.any()
    out = bd.finish([0], stop_reason="<|return|>")
    assert bd.done.tolist() == [True, False] and out[1] == [] and bd.status_of(0) == "final"
    bd.finish(eos=True)
    assert bd.status == ["final", "tool_call"]


def test_finish_reads_rows_once(encs):
    """``rows`` may be a generator: read once, every row it names finishes."""
    enc = encs["harmony"]
    rows = _stripped_rows(enc)[:2]
    bd = BatchDecoder(enc, 2)
    for k in range(max(map(len, rows))):
        bd.step([r[k] if k < len(r) else PAD for r in rows])
    out = bd.finish((r for r in [0, 1]), stop_reason="<|return|>")
    assert bd.done.all() and all(out)
