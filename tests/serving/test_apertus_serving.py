"""Apertus completions in the OpenAI view: ``to_openai``, the stream decoder, the chunker, the
response template (``tests/template/test_response_template.py``) and the round trip agree, registered
tokens and fallback (controls as text).

An Apertus turn is one message of blocks (``Message.structured``: thoughts, response, calls,
outputs); ``Turn.openai_parts`` gives the plain messages the OpenAI message is built from, so
thoughts are ``reasoning_content``, the response ``content`` and the calls ``tool_calls``
(arguments verbatim, ids as for every format), ``finish_reason`` ``tool_calls`` when the turn
stopped on ``<|tools_suffix|>``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import UnrepresentableError
from ocml.encoder.openai_chunks import accumulate

from support.apertus_serving import SHAPES, call, completion, full
from support.engine_stop import engine_stops  # noqa: E402
from support.openai_chunks import no_ids  # noqa: E402

TOKENIZERS = [None, "o200k_base"]  # registered controls (the default), fallback (controls spelled as text)
TOK_IDS = ["registered", "fallback"]


_ENCS: dict[str | None, encoder.Encoder] = {}


def enc_for(tok: str | None) -> encoder.Encoder:
    if tok not in _ENCS:
        _ENCS[tok] = encoder.Encoder("apertus", tokenizer=tok)
    return _ENCS[tok]


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_to_openai_reads_thoughts_response_and_calls(tok, shape):
    enc = enc_for(tok)
    turn, want, finish = SHAPES[shape]
    ids = completion(enc, turn)
    choice = enc.to_openai(ids)
    assert no_ids(choice.message) == want and choice.finish_reason == finish and choice.errors == ()
    for c in choice.message.get("tool_calls", []):
        assert c["id"].startswith("call_") and len(c["id"]) == 29
    assert enc.to_openai(ids).message == choice.message  # deterministic ids
    if "tool_calls" in want:
        ids_a = [c["id"] for c in choice.message["tool_calls"]]
        assert len(set(ids_a)) == len(ids_a)
        assert [c["id"] for c in enc.to_openai(ids, call_id_seed="req-2").message["tool_calls"]] != ids_a


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_message_renders_back_to_the_completion(tok, shape):
    enc = enc_for(tok)
    turn = SHAPES[shape][0]
    ids = full(enc, turn)
    msg = enc.to_openai(completion(enc, turn)).message
    assert full(enc, msg) == ids


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_decoder_and_chunks_equal_to_openai(tok, shape):
    enc = enc_for(tok)
    ids = completion(enc, SHAPES[shape][0])
    want = enc.to_openai(ids)
    for size in (1, 3, len(ids)):
        dec = enc.decoder(role="assistant")
        for k in range(0, len(ids), size):
            dec.feed(ids[k:k + size])
        dec.finish()
        assert dec.to_openai() == want
        ck = enc.chunker(id="x", created=1)
        chunks = [c for k in range(0, len(ids), size) for c in ck.feed(ids[k:k + size])] + ck.finish()
        assert accumulate(chunks) == {"message": want.message, "finish_reason": want.finish_reason}
    # truncated anywhere (max tokens): still equal, "length"
    for k in range(len(ids)):
        ck = enc.chunker(id="x", created=1)
        got = accumulate(ck.feed(ids[:k]) + ck.finish())
        ch = enc.to_openai(ids[:k])
        assert got == {"message": ch.message, "finish_reason": ch.finish_reason} and ch.finish_reason == "length"


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
def test_chunks_stream_reasoning_then_content_then_whole_calls(tok):
    enc = enc_for(tok)
    ids = completion(enc, SHAPES["thoughts+answer+calls"][0])
    ck = enc.chunker(id="x", created=1)
    deltas = [c["choices"][0]["delta"] for i in ids for c in ck.feed([i])]
    assert deltas[0] == {"role": "assistant"} and deltas[-1] == {}
    keys = [next(iter(d)) for d in deltas[1:-1]]
    # reasoning streams first, then the response, then each call whole (the call list is only
    # readable at its <|tools_suffix|>, where the completion stops)
    assert keys == sorted(keys, key=["reasoning_content", "content", "tool_calls"].index)
    assert keys.count("reasoning_content") > 1 or len(enc.tokenizer.encode_text("Two tools.")) == 1
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    want = enc.to_openai(ids).message["tool_calls"]
    assert [c["index"] for c in calls] == [0, 1]
    assert [{k: c[k] for k in ("id", "type", "function")} for c in calls] == want


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
def test_engine_stripped_tools_suffix_gives_tool_calls(tok):
    enc = enc_for(tok)
    ids = completion(enc, SHAPES["thoughts+call"][0])
    want = enc.to_openai(ids)
    for cut, kw in engine_stops(enc, ids, "<|tools_suffix|>"):
        ck = enc.chunker(id="x", created=1)
        got = accumulate(ck.feed(cut) + ck.finish(**kw))
        assert got == {"message": want.message, "finish_reason": "tool_calls"}, kw


def test_tool_outputs_in_a_completion_have_no_place_in_the_message():
    """Outputs are the tools' words: a model that writes them past ``<|tools_suffix|>`` (the
    stream stops there) gets its calls and the text around them; the outputs are reported."""
    enc = enc_for(None)
    ctl = enc.tokenizer.control_id
    ids = [ctl("<|inner_prefix|>"), *enc.tokenizer.encode_text("Check."), ctl("<|tools_prefix|>"),
           *enc.tokenizer.encode_text('[{"get_weather": {"city": "Oslo"}}]'), ctl("<|tools_suffix|>"),
           *enc.tokenizer.encode_text('[{"temp": 3}]Cold.'), ctl("<|inner_suffix|>"),
           *enc.tokenizer.encode_text("It is 3 °C."), ctl("<|assistant_end|>")]
    choice = enc.to_openai(ids)
    assert no_ids(choice.message) == {"role": "assistant", "content": "It is 3 °C.",
                                      "reasoning_content": "Check.\nCold.",
                                      "tool_calls": [call("get_weather", '{"city": "Oslo"}')]}
    assert choice.finish_reason == "stop"
    assert [(e.code, e.text) for e in choice.errors] == [("E-UNREPRESENTABLE", '[{"temp": 3}]')]
    with pytest.raises(UnrepresentableError) as e:
        enc.to_openai(ids, strict=True)
    assert e.value.index == 0  # the turn's message index
    # the stream stops at the call: the turn so far, finish_reason tool_calls
    ck = enc.chunker(id="x", created=1)
    got = accumulate(ck.feed(ids) + ck.finish())
    assert got["finish_reason"] == "tool_calls" and got["message"]["reasoning_content"] == "Check."
    assert got["message"]["tool_calls"] == choice.message["tool_calls"]


def test_empty_blocks_give_no_field():
    enc = enc_for(None)
    ctl = enc.tokenizer.control_id
    ids = [ctl("<|inner_prefix|>"), ctl("<|inner_suffix|>"), *enc.tokenizer.encode_text("Hi."),
           ctl("<|assistant_end|>")]
    choice = enc.to_openai(ids)
    assert choice.message == {"role": "assistant", "content": "Hi."} and choice.finish_reason == "stop"
    ck = enc.chunker(id="x", created=1)
    assert accumulate(ck.feed(ids) + ck.finish())["message"] == choice.message


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_property_every_view_agrees_and_round_trips(tok, data):
    """Random thoughts, response and call arguments, cut anywhere, fed in random chunks: the
    chunks merged, the stream decoder and ``to_openai`` agree; whole, the message renders back."""
    enc = enc_for(tok)
    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
        lambda s: "<|" not in s and not s.startswith("["))
    turn: dict = {"role": "assistant", "content": None}
    if data.draw(st.booleans(), label="thoughts"):
        turn["reasoning_content"] = data.draw(text, label="thoughts text")
    if data.draw(st.booleans(), label="response"):
        turn["content"] = data.draw(text, label="response text")
    n = data.draw(st.integers(0 if turn["content"] is not None else 1, 2), label="calls")
    if n:
        turn["tool_calls"] = [call(name, json.dumps({"city": data.draw(text, label="city")}))
                              for name in ("get_weather", "get_time")[:n]]
    try:
        ids = completion(enc, turn)
    except UnrepresentableError:  # e.g. text a fallback spelling cannot keep apart from a control
        reject()
    assert full(enc, enc.to_openai(ids).message) == full(enc, turn)
    ids = ids[:data.draw(st.integers(0, len(ids)), label="length")]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=6), label="cuts"))
    want = enc.to_openai(ids)
    ck, dec = enc.chunker(id="x", created=1), enc.decoder(role="assistant")
    chunks: list[dict] = []
    for a, b in zip([0, *cuts], [*cuts, len(ids)]):
        chunks += ck.feed(ids[a:b])
        dec.feed(ids[a:b])
    chunks += ck.finish()
    dec.finish()
    assert accumulate(chunks) == {"message": want.message, "finish_reason": want.finish_reason}
    assert dec.to_openai() == want
