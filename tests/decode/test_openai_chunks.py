"""``enc.chunker()``: OpenAI ``chat.completion.chunk`` streams, for every format, registered and fallback.

Invariants: the deltas merged as OpenAI clients merge them (``accumulate``) equal
``enc.to_openai(ids)`` - message, tool call ids and finish reason - whatever the chunking
(one id at a time, all at once, random cuts: hypothesis), and no delta holds control text.
Also: the chunk envelope, usage, ``finish(stop_reason=...)`` / ``eos=True`` for engines that
strip the stop token, and prefilled (``mode="continue"``) streams.
"""

from __future__ import annotations

import json

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import InputError, InputTypeError, UnrepresentableError
from ocml.encoder.openai_chunks import accumulate

from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.openai_chunks import NO_REASONING, USER, after, completion, turns

#: (format, tokenizer): registered (the format's default) and fallback (o200k_base: no controls)
SETUPS = [(f, None) for f in vocab.FORMAT_NAMES] + [(f, "o200k_base") for f in vocab.FORMAT_NAMES if f != "harmony"]
IDS = [f"{f}-{'fallback' if t else 'registered'}" for f, t in SETUPS]
_ENCS: dict[tuple[str, str | None], encoder.Encoder] = {}


def enc_for(fmt: str, tok: str | None) -> encoder.Encoder:
    if (fmt, tok) not in _ENCS:
        _ENCS[(fmt, tok)] = encoder.Encoder(fmt, tokenizer=tok)
    return _ENCS[(fmt, tok)]


def stream(enc: encoder.Encoder, ids: list[int], cuts: list[int], **kw) -> list[dict]:
    ck = enc.chunker(id="chatcmpl-1", created=7, model="m", **kw)
    out: list[dict] = []
    a = 0
    for b in [*sorted(cuts), len(ids)]:
        out += ck.feed(ids[a:b])
        a = b
    return out + ck.finish()


def expected(enc: encoder.Encoder, ids: list[int]) -> dict:
    ch = enc.to_openai(ids)
    return {"message": ch.message, "finish_reason": ch.finish_reason}


def controls_in(enc: encoder.Encoder, chunks: list[dict]) -> list[str]:
    names = [*enc.format.table.controls, *enc.format.table.markers]
    found = []
    for c in chunks:
        for ch in c["choices"]:
            text = json.dumps(ch["delta"], ensure_ascii=False)
            found += [n for n in names if n in text]
    return found


@pytest.mark.parametrize(("fmt", "tok"), SETUPS, ids=IDS)
def test_deltas_equal_to_openai_at_every_chunking(fmt, tok):
    enc = enc_for(fmt, tok)
    for name, turn in turns(fmt).items():
        ids = completion(enc, turn)
        want = expected(enc, ids)
        assert want["finish_reason"] in ("stop", "tool_calls"), (name, want)
        for cuts in ([], list(range(1, len(ids))), [len(ids) // 3, len(ids) // 2]):
            chunks = stream(enc, ids, cuts)
            assert accumulate(chunks) == want, (name, cuts)
            assert not controls_in(enc, chunks), name
        # truncated anywhere (max tokens): still equal, finish_reason "length"
        for k in range(0, len(ids), max(1, len(ids) // 7)):
            chunks = stream(enc, ids[:k], [])
            assert accumulate(chunks) == expected(enc, ids[:k]), (name, k)
            assert not controls_in(enc, chunks)


@pytest.mark.parametrize(("fmt", "tok"), SETUPS, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_chunk_invariance_property(fmt, tok, data):
    enc = enc_for(fmt, tok)
    all_turns = turns(fmt, data.draw(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                             max_size=30), label="text"))
    name = data.draw(st.sampled_from(sorted(all_turns)), label="turn")
    try:
        ids = completion(enc, all_turns[name])
    except UnrepresentableError:  # e.g. a trailing '<' before a control spelled as text (2.0 fallback)
        reject()
    ids = ids[:data.draw(st.integers(0, len(ids)), label="length")]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=8), label="cuts")
    chunks = stream(enc, ids, cuts)
    assert accumulate(chunks) == expected(enc, ids)
    one = stream(enc, ids, list(range(len(ids))))
    assert accumulate(one) == accumulate(chunks)


def test_chunk_shape_as_openai_sends_it():
    enc = enc_for("harmony", None)
    ids = completion(enc, turns("harmony")["reasoning+call"])
    chunks = stream(enc, ids, list(range(len(ids))), include_usage=True, prompt_tokens=11)
    for c in chunks:
        assert c["id"] == "chatcmpl-1" and c["object"] == "chat.completion.chunk" and c["created"] == 7
        assert c["model"] == "m"
    body, usage = chunks[:-1], chunks[-1]
    assert all(c["usage"] is None for c in body)
    assert usage["choices"] == [] and usage["usage"] == {"prompt_tokens": 11, "completion_tokens": len(ids),
                                                         "total_tokens": 11 + len(ids)}
    deltas = [c["choices"][0]["delta"] for c in body]
    assert deltas[0] == {"role": "assistant"}
    assert all(c["choices"][0]["finish_reason"] is None for c in body[:-1])
    assert deltas[-1] == {} and body[-1]["choices"][0]["finish_reason"] == "tool_calls"
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    first = calls[0]
    assert first["index"] == 0 and first["type"] == "function" and first["function"]["name"] == "get_weather"
    assert first["id"] == enc.to_openai(ids).message["tool_calls"][0]["id"] and first["function"]["arguments"] == ""
    assert all(set(c) == {"index", "function"} and set(c["function"]) == {"arguments"} for c in calls[1:])
    assert "".join(c["function"]["arguments"] for c in calls) == '{"city": "Paris"}'
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "Need the tool."
    # the finish chunk goes out when the stream stops, finish() adds nothing more
    ck = enc.chunker(id="x", created=1)
    got = ck.feed(ids)
    assert got[-1]["choices"][0]["finish_reason"] == "tool_calls" and ck.finish() == []


@pytest.mark.parametrize(("fmt", "tok"), SETUPS, ids=IDS)
def test_engine_stripped_stop(fmt, tok):
    """vLLM strips the stop id / string: finish(stop_reason=...) or eos=True restores stop / tool_calls."""
    enc = enc_for(fmt, tok)
    stops = enc.format.stop_reasons("assistant")
    for name in ("final", "call", "reasoning+call") if fmt not in NO_REASONING else ("final", "call"):
        ids = completion(enc, turns(fmt)[name])
        want = expected(enc, ids)
        # the stop as the engine reports it: the id when registered, else its text (and which ids spell it)
        cut = ids[:]
        text = enc.tokenizer.decode_bytes(cut)
        reg = [n for n in stops if enc.tokenizer.control_id(n) is not None and cut[-1:] == [enc.tokenizer.control_id(n)]]
        stop_name = reg[0] if reg else max((n for n in stops if n.encode() in text), key=lambda n: text.rfind(n.encode()))
        i = enc.tokenizer.control_id(stop_name)
        reason: int | str
        if i is not None:
            cut, reason = cut[:-1], i
        else:  # the engine matched the spelling (maybe inside a token, "<|im_end|>" + "\n") and cut before it
            cut = enc.tokenizer.encode_text(text[:text.rfind(stop_name.encode())].decode())
            reason = stop_name
        stripped = enc.chunker(id="x", created=1)
        chunks = stripped.feed(cut) + stripped.finish()
        assert accumulate(chunks)["finish_reason"] == "length"  # what the engine's output alone says
        for kw in ({"stop_reason": reason}, {"stop_reason": stop_name}, {"eos": True}):
            ck = enc.chunker(id="x", created=1)
            chunks = ck.feed(cut) + ck.finish(**kw)
            assert accumulate(chunks) == want, (name, kw)
            dec = enc.decoder(role="assistant")
            dec.feed(cut)
            dec.finish(**kw)
            assert dec.to_openai().finish_reason == want["finish_reason"]
            ref = enc.decoder(role="assistant")
            ref.feed(ids)
            assert dec.status == ref.status and dec.messages == ref.messages


def test_engine_stop_string_and_stop_id():
    enc = enc_for("harmony", None)
    ids = completion(enc, turns("harmony")["final"])[:-1]  # without <|return|>
    dec = enc.decoder(role="assistant")
    dec.feed(ids)
    ev = dec.finish(stop_reason="STOP")  # a user stop string the engine matched and stripped
    assert ev[-1].reason == "stop_string" and dec.status == "final"
    assert dec.to_openai().finish_reason == "stop" and dec.to_openai().message["content"] == "It is sunny, 24 °C 🌞."
    eot = enc.tokenizer.control_id("<|endoftext|>")
    dec = enc.decoder(role="assistant")
    dec.feed(ids)
    dec.finish(stop_reason=eot)
    assert dec.stopped.reason == "stop_id" and dec.to_openai().finish_reason == "stop"
    for bad, err in ((10 ** 9, InputError), (True, InputTypeError), (1.5, InputTypeError)):
        with pytest.raises(err):
            enc.decoder(role="assistant").finish(stop_reason=bad)
    with pytest.raises(InputError):
        enc.decoder(role="assistant").finish(stop_reason=eot, eos=True)


@pytest.mark.parametrize(("fmt", "tok"), SETUPS, ids=IDS)
def test_prefilled_stream_continues_the_open_message(fmt, tok):
    enc = enc_for(fmt, tok)
    head, tail = "The weather in Paris", " is sunny today."
    conv = [USER, {"role": "assistant", "content": head}]
    r = enc.render(conv, mode="continue")
    full = enc.render([USER, {"role": "assistant", "content": head + tail}], mode="train").ids.tolist()
    gen = after(enc, full, r.ids.tolist())
    for cuts in ([], list(range(1, len(gen)))):
        ck = enc.chunker(prefill=r, id="x", created=1)
        out: list[dict] = []
        a = 0
        for b in [*cuts, len(gen)]:
            out += ck.feed(gen[a:b])
            a = b
        out += ck.finish()
        got = accumulate(out)
        assert got["message"]["content"] == tail and got["finish_reason"] == "stop"
        assert not controls_in(enc, out)
        assert ck.decoder.to_openai().message["content"] == head + tail
    # a message dict works as the prefill too, and role= with prefill= is a usage error
    dec = enc.decoder(prefill=conv)
    dec.feed(gen)
    assert dec.to_openai().message["content"] == head + tail
    with pytest.raises(InputError):
        enc.decoder(role="assistant", prefill=conv)
    with pytest.raises(InputError):
        enc.decoder(prefill=enc.render(conv, mode="train"))


@pytest.mark.parametrize(("fmt", "tok"), [("harmony", None), ("openchatml-2.2", "o200k_base")])
def test_engine_stopped_on_a_control_that_is_no_stop(fmt, tok):
    """stop mode "all" (<|end|> a stop id / string too): the engine stripped <|end|> after an
    analysis message: the message is complete, the stream stopped on purpose (finish_reason stop)."""
    enc = enc_for(fmt, tok)
    ids = completion(enc, turns(fmt)["reasoning+final"])
    text = enc.tokenizer.decode_bytes(ids)
    end = text.find(b"<|end|>")
    head = [i for i in ids[:ids.index(enc.tokenizer.control_id("<|end|>"))]] if not tok else \
        enc.tokenizer.encode_text(text[:end].decode())
    reason = enc.tokenizer.control_id("<|end|>") if not tok else "<|end|>"
    ck = enc.chunker(id="x", created=1)
    got = accumulate(ck.feed(head) + ck.finish(stop_reason=reason))
    assert got == {"message": {"role": "assistant", "content": None, "reasoning_content": "Think: sun.\nOk."},
                   "finish_reason": "stop"}
    assert ck.decoder.stopped.reason == "stop_id" and ck.decoder.status == "no_final"


def test_a_run_merged_across_the_generation_prompt_is_regenerated_from_the_cut():
    """ChatML encodes ``assistant\\n`` + content as one run: content ``"\\n"`` makes one ``\\n\\n``
    token across the cut.  What a model generates after the prompt is ``\\n`` then ``<|im_end|>``
    (found by the property test above under another random seed)."""
    enc = enc_for("chatml", None)
    ids = completion(enc, turns("chatml", "\n")["final"])
    assert ids == enc.tokenizer.encode_text("\n") + [enc.tokenizer.control_id("<|im_end|>")]
    assert accumulate(stream(enc, ids, [])) == expected(enc, ids)
