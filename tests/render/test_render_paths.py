"""The renderer's fast paths give exactly what the plain paths give.

- header ids cached by ``Format.header_key`` + ``plain_body`` == building every plan;
- long text through numpy buffers == ``encode_text``; threads == one thread;
- ``render_batch`` (views into one set of arrays, chunked) == ``render`` one by one;
- the encode thread pool survives ``fork``.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random

import numpy as np
import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder import textenc

from support.gen import WORDS, harmony_conversation
from support.render import ENCODERS, enc_, plain


def same(a: encoder.RenderResult, b: encoder.RenderResult) -> None:
    assert a.ids.dtype == b.ids.dtype == np.int32
    assert a.ids.tolist() == b.ids.tolist()
    assert a.mask.tolist() == b.mask.tolist()
    assert a.message_index.tolist() == b.message_index.tolist()
    assert a.dropped == b.dropped


def both(a_enc: encoder.Encoder, b_enc: encoder.Encoder, conv, mode: str = "train") -> None:
    """Same result, or the same typed error."""
    try:
        a = a_enc.render(conv, mode)
    except encoder.errors.OcmlError as exc:
        with pytest.raises(type(exc)):
            b_enc.render(conv, mode)
        return
    same(a, b_enc.render(conv, mode))


def corpus(n: int, seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    return [plain(harmony_conversation(rng)) for _ in range(n)]


def long_text(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        # (no lone surrogates: a render refuses them, E-INPUT-ENCODING; the vocab paths repair them alike)
        w = rng.choice(WORDS + ["the", "model", "answer", "über"])
        out.append(w + rng.choice([" ", "", "\n"]))
        size += len(w) + 1
    return "".join(out)


@pytest.mark.parametrize("name", list(ENCODERS))
def test_header_cache_and_plain_body_equal_full_plans(name):
    fast = enc_(name)
    slow = ENCODERS[name]()
    slow.format.plain_body = lambda m: None  # type: ignore[method-assign]  # every message builds its plan
    fresh = itertools.count()
    slow.format.header_key = lambda m: next(fresh)  # type: ignore[method-assign]  # and never hits the cache
    for conv in corpus(60, seed=11):
        for mode in ("train", "prompt", "history"):
            both(fast, slow, conv, mode)


@pytest.mark.parametrize("base", ["o200k_harmony", "o200k_base", "cl100k_base"])
def test_encode_text_array_equals_encode_text(base):
    tok = vocab.load(base)
    rng = random.Random(3)
    for n in (0, 1, 10, 300, 5000):
        t = long_text(rng, n)
        arr = tok.encode_text_array(t)
        assert arr.dtype == np.int32 and arr.tolist() == tok.encode_text(t)


def test_hf_backend_array_path():
    tok = vocab.from_hf(vocab.load("o200k_base").to_hf(), register="openchatml-2.2")
    t = long_text(random.Random(5), 3000)
    assert tok.encode_text_array(t + "\ud800").tolist() == tok.encode_text(t + "\ud800")
    e = encoder.Encoder("openchatml-2.2", tokenizer=tok, threads=2)
    ref = encoder.Encoder("openchatml-2.2", threads=1)
    conv = [{"role": "user", "content": t}, {"role": "assistant", "channel": "final", "content": t[::-1]}]
    assert e.render(conv).ids.tolist() == ref.render(conv).ids.tolist()


def big_conversations(n: int, seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        msgs = []
        for _t in range(rng.randint(1, 6)):
            msgs.append({"role": "user", "content": long_text(rng, rng.choice([10, 300, 4000, 9000]))})
            msgs.append({"role": "assistant", "channel": "analysis", "content": long_text(rng, rng.choice([0, 500, 7000]))})
            msgs.append({"role": "assistant", "channel": "final", "content": long_text(rng, rng.choice([5, 2000, 12000]))})
        out.append(msgs)
    return out


@pytest.mark.parametrize("name", ["harmony", "harmony-fallback", "ocm22-fallback", "ocm20-fallback"])
def test_threads_change_nothing(name, monkeypatch):
    tok = enc_(name).tokenizer
    fmt = enc_(name).format_name
    one = encoder.Encoder(fmt, tokenizer=tok, threads=1)
    many = encoder.Encoder(fmt, tokenizer=tok, threads=3)
    assert many.renderer.text.parallel
    convs = big_conversations(12, seed=2)
    for conv in convs:  # real thresholds: these conversations cross PARALLEL_MIN_CHARS
        both(one, many, conv)
    monkeypatch.setattr(textenc, "LONG_TEXT", 1)  # every piece long, every render parallel
    monkeypatch.setattr(textenc, "PARALLEL_MIN_CHARS", 1)
    for conv in corpus(40, seed=9) + convs[:3]:
        both(one, many, conv, "prompt")


@pytest.mark.parametrize("name", ["harmony", "ocm22", "ocm22-fallback"])
def test_render_batch_equals_render_one_by_one(name):
    enc = enc_(name)
    convs: list = corpus(80, seed=4) + big_conversations(4, seed=1)
    convs.insert(5, [{"role": "user", "channel": "bad channel", "content": "x"}])
    convs.insert(50, "not json")
    out = enc.render_batch(convs, mode="train", errors="collect", chunk=7)
    assert len(out) == len(convs)
    bad = {i for i, _ in out.errors}
    assert {5, 50} <= bad
    for i, conv in enumerate(convs):
        if i in bad:
            assert out[i] is None
            with pytest.raises(encoder.errors.OcmlError):
                enc.render(conv)
        else:
            same(out[i], enc.render(conv))
    flat = out.ragged()
    ok = [r for r in out if r is not None]
    assert flat["offsets"][-1] == sum(len(r) for r in ok) == len(flat["ids"])


def test_render_batch_raise_names_the_first_bad_input():
    enc = enc_("harmony")
    with pytest.raises(encoder.errors.HeaderError) as info:
        enc.render_batch([[{"role": "user", "content": "ok"}], [{"role": "us er", "content": "x"}]])
    assert info.value.field == "role"


def _child_render(conv, q):  # pragma: no cover - runs in the forked child
    enc = encoder.Encoder("harmony", threads=2)
    q.put(enc.render(conv).ids.tolist())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_thread_pool_after_fork():
    conv = big_conversations(1, seed=3)[0]
    enc = encoder.Encoder("harmony", threads=2)
    want = enc.render(conv).ids.tolist()  # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_render, args=(conv, q))
    p.start()
    got = q.get(timeout=60)
    p.join(timeout=60)
    assert got == want


def test_threads_setting(monkeypatch):
    monkeypatch.setenv("OCML_NUM_THREADS", "1")
    assert encoder.Encoder("harmony").renderer.text.threads == 1
    monkeypatch.setenv("OCML_NUM_THREADS", "3")
    assert encoder.Encoder("harmony").renderer.text.threads == 3
    assert encoder.Encoder("harmony", threads=1).renderer.text.parallel is False


@pytest.mark.parametrize("base", ["o200k_harmony", "o200k_base", "cl100k_base"])
def test_encode_joined_equals_encode_text_one_by_one(base):
    """Many texts in one tokenizer call (joined by a special only that call allows) give each
    text's ``encode_text`` ids; a text that spells the separator or holds a lone surrogate gets
    None (the renderer then encodes one by one)."""
    tok = vocab.load(base, register="openchatml-2.2") if base == "o200k_base" else vocab.load(base)
    rng = random.Random(8)
    sep = max(tok.specials, key=tok.specials.__getitem__)
    specials = sorted(set(tok.specials) - {sep})
    for _ in range(30):
        texts = [long_text(rng, rng.choice([0, 1, 5, 40, 700])) for _ in range(rng.randint(1, 12))]
        for k in range(len(texts)):  # controls spelled inside text stay ordinary text
            if rng.random() < 0.2:
                texts[k] += rng.choice(specials) + " \n "
        ids, counts = tok.encode_joined(texts)
        want = [tok.encode_text(t) for t in texts]
        assert ids.dtype == np.int32 and counts.tolist() == [len(w) for w in want]
        assert ids.tolist() == [i for w in want for i in w]
    assert tok.encode_joined(["a", "b" + sep, "c"]) is None
    assert tok.encode_joined(["a", "b\ud800"]) is None


@pytest.mark.parametrize("name", ["harmony", "ocm22", "ocm22-fallback", "ocm20-fallback", "chatml"])
def test_render_without_joined_encoding_is_the_same(name, monkeypatch):
    """The one-call text encoding (``Tokenizer.encode_joined``) and encoding one text at a time
    give the same renders, batched or not (ChatML: whole runs)."""
    enc = encoder.Encoder("chatml") if name == "chatml" else enc_(name)
    convs: list = corpus(40, seed=6) + big_conversations(2, seed=3)
    joined = [enc.render_batch(convs, errors="collect", chunk=k).results for k in (1, 9)]
    monkeypatch.setattr(enc.tokenizer, "encode_joined", lambda texts: None)
    alone = [enc.render_batch(convs, errors="collect", chunk=k).results for k in (1, 9)]
    for a_list, b_list in zip(joined, alone):
        for a, b in zip(a_list, b_list):
            assert (a is None) == (b is None)
            if a is not None:
                same(a, b)
