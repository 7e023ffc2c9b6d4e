"""Malformed Harmony from the field (issue 20): generated text is never dropped without a trace.

gpt-oss emits these shapes in production (vLLM, llama.cpp and openai/harmony trackers; the
decoding note's failure catalogue #16-#23).  For each, after the ``<|start|>assistant``
prefill, in id mode (o200k_harmony) and fallback mode (controls spelled as text), and at
every chunking: the answer reaches ``to_openai``'s ``content`` and the stream's visible
deltas, ``parse`` and the stream agree, and every problem is a typed error.
"""

from __future__ import annotations

import random
import re

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.events import Delta, Error, MessageEnd, Stop

ENCODERS = {
    "harmony": lambda: encoder.Encoder("harmony"),
    "harmony-fallback": lambda: encoder.Encoder("harmony", tokenizer=vocab.load("o200k_base")),
    "ocml-2.2": lambda: encoder.Encoder("openchatml-2.2"),
}

#: name -> (completion after "<|start|>assistant", the answer, error codes expected)
SHAPES = {
    "empty channel (issue 20)": ("<|channel|><|message|>Answer<|return|>", "Answer",
                                 ["E-PARSE-HEADER", "E-PARSE-FINAL-RECOVERED"]),
    "doubled <|start|>": ("<|channel|>analysis<|message|>think<|end|><|start|><|start|>assistant<|channel|>final"
                          "<|message|>Answer<|return|>", "Answer", ["E-PARSE-HEADER"]),
    "stray ids between messages": ("<|channel|>analysis<|message|>think<|end|>oops<|start|>assistant<|channel|>final"
                                   "<|message|>Answer<|return|>", "Answer", ["E-PARSE-STRAY-TEXT"]),
    "free text after <|channel|>": ("<|channel|>final blah blah<|message|>Answer<|return|>", "Answer",
                                    ["E-PARSE-HEADER", "E-PARSE-FINAL-RECOVERED"]),
    "final header without <|message|>": ("<|channel|>final Answer<|return|>", "Answer", ["E-PARSE-HEADER"]),
    "trailing <|return|> after <|end|>": ("<|channel|>final<|message|>Answer<|end|><|return|>", "Answer",
                                          ["E-PARSE-STRAY-CONTROL"]),
    "unknown channel ??": ("<|channel|>??<|message|>Answer<|return|>", "Answer", ["E-PARSE-FINAL-RECOVERED"]),
    "unknown channel commentary?": ("<|channel|>commentary?<|message|>Answer<|return|>", "Answer",
                                    ["E-PARSE-FINAL-RECOVERED"]),
    "doubled <|channel|>": ("<|channel|><|channel|>final<|message|>Answer<|return|>", "Answer",
                            ["E-PARSE-HEADER", "E-PARSE-FINAL-RECOVERED"]),
    "no channel markup": ("Answer<|return|>", "Answer", ["E-PARSE-HEADER"]),
    "missing <|start|> and header": ("<|channel|>analysis<|message|>think<|end|>Answer<|return|>", "Answer",
                                     ["E-PARSE-FINAL-RECOVERED"]),
}


def _ids(enc, s):
    tok = enc.tokenizer
    out: list[int] = []
    for part in re.split(r"(<\|[a-z_]+\|>)", s):
        if part:
            i = tok.control_id(part) if part.startswith("<|") else None
            out += [i] if i is not None else tok.encode_text(part)
    return out


@pytest.fixture(scope="module")
def encs():
    return {k: f() for k, f in ENCODERS.items()}


@pytest.mark.parametrize("key", list(ENCODERS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_malformed_shape_keeps_the_answer(encs, key, shape):
    enc = encs[key]
    text, answer, codes = SHAPES[shape]
    if key == "harmony-fallback" and shape == "no channel markup":
        codes = ["E-PARSE-HEADER"]
    ids = _ids(enc, text)
    choice = enc.to_openai(ids)
    assert choice.message["content"] == answer
    assert choice.finish_reason == "stop"
    res = enc.parse(ids, role="assistant", errors="collect")
    got = [e.code for e in res.errors]
    assert [c for c in codes if c not in got] == [], got
    assert all(re.fullmatch(r"E-[A-Z-]+", c) for c in got)
    rng = random.Random(shape)
    for sizes in ([1] * len(ids), [len(ids)], None):
        dec = enc.decoder(role="assistant")
        ev: list = []
        k = 0
        while k < len(ids):
            s = sizes[0] if sizes else rng.randint(1, 5)
            ev += dec.feed(ids[k:k + s])
            k += s
        ev += dec.finish()
        assert "".join(e.text for e in ev if type(e) is Delta and e.visible) == answer
        stop = next(e for e in ev if type(e) is Stop)
        assert stop.reason == "return"
        ref = enc.parse(ids[:stop.position + 1], role="assistant", errors="collect")
        assert [e.message for e in ev if type(e) is MessageEnd] == ref.messages
        assert [(e.code, e.position, e.text) for e in ev if type(e) is Error] == \
            [(e.code, e.position, e.text) for e in ref.errors]
        # concatenated deltas of a message are its content
        for end in (e for e in ev if type(e) is MessageEnd):
            assert end.message.content in "".join(e.text for e in ev if type(e) is Delta)
        assert dec.status == "final" and dec.final_message.content == answer


def test_unknown_channel_ended_by_end_stays_hidden(encs):
    """Only <|return|> makes an unknown channel the answer; with <|end|> it is held and then
    given as one hidden delta (never shown to users)."""
    enc = encs["harmony"]
    ids = _ids(enc, "<|channel|>??<|message|>secret<|end|>")
    dec = enc.decoder(role="assistant")
    ev = [e for i in ids for e in dec.feed([i])] + dec.finish()
    deltas = [e for e in ev if type(e) is Delta]
    assert [(d.text, d.channel, d.visible) for d in deltas] == [("secret", "??", False)]
    assert enc.to_openai(ids).message["content"] is None
    assert enc.parse(ids, role="assistant")[0].channel == "??"


def test_analysis_ended_by_return_is_not_shown(encs):
    """A known non-final channel keeps its channel: analysis is never displayed (spec §5 rule 3)."""
    enc = encs["harmony"]
    ids = _ids(enc, "<|channel|>analysis<|message|>private<|return|>")
    choice = enc.to_openai(ids)
    assert choice.message["content"] is None and choice.message.get("reasoning_content") == "private"
    dec = enc.decoder(role="assistant")
    ev = dec.feed(ids) + dec.finish()
    assert not any(type(e) is Delta and e.visible for e in ev)


def test_strict_mode_raises_the_recovery_code(encs):
    enc = encs["harmony"]
    ids = _ids(enc, "<|channel|>??<|message|>Answer<|return|>")
    with pytest.raises(encoder.errors.ParseError) as exc:
        enc.parse(ids, role="assistant", strict=True)
    assert exc.value.code == "E-PARSE-FINAL-RECOVERED"
