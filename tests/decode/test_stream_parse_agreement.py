"""Stream decoder == ``Encoder.parse`` on every input, valid or not (issue 15 item 4).

The differential harness (``tests/support/agreement.py``) reads random and mutated id sequences
(renders with ids dropped / duplicated / swapped / cut, non-control special ids, control
ids and invalid ids inserted; soups of control ids, control spellings and their pieces)
over every format x {registered, fallback}, with and without the ``<|start|>assistant``
prefill, with the stream decoder (random chunks) and with ``parse(errors="collect")`` of
the ids the stream consumed: same messages, end reasons and errors (code, position, text).
``scripts/stream_parse_agreement.py`` runs the same at any size.
"""

from __future__ import annotations

import random

import pytest

from support import agreement as A
from ocml.encoder.events import Delta, Error, MessageEnd, Stop

CASES_PER_KEY = 300


@pytest.mark.parametrize(("fmt", "mode"), A.KEYS, ids=[f"{f}-{m}" for f, m in A.KEYS])
def test_stream_and_parse_agree(fmt, mode):
    bad: list[str] = []

    def report(f, m, case, diff):
        bad.append(f"{case.kind} role={case.role} ids={case.ids}\n{diff}")

    res = A.run([(fmt, mode)], CASES_PER_KEY, seed=0, report=report)
    assert res[(fmt, mode)] == (0, CASES_PER_KEY), "\n\n".join(bad[:3])


def test_the_harness_sees_a_disagreement():
    """The comparison is not vacuous: a stream that drops one error is caught."""
    enc = A.encoder_for("openchatml-2.2", "registered")
    tok = enc.tokenizer
    ids = [tok.control_id("<|end|>")] + tok.encode_text("stray")
    case = A.Case(ids, None, "soup")
    assert A.compare(enc, case, random.Random(0)) is None
    real = A.stream_read
    try:
        A.stream_read = lambda *a: (lambda r: (r[0], r[1], r[2][1:], r[3]))(real(*a))  # type: ignore[assignment]
        assert "errors differ" in (A.compare(enc, case, random.Random(0)) or "")
    finally:
        A.stream_read = real


def _both(enc, ids, role=None):
    dec = enc.decoder(role=role)
    ev = dec.feed(ids) + dec.finish()
    return ev, enc.parse(ids, role=role, errors="collect")


@pytest.mark.parametrize("mode", A.MODES)
def test_special_id_in_a_literal_block_is_an_error_in_both(mode):
    """One rule (encoder.read.route): a control id of the format inside a literal block is
    its text; an id that is not part of the format (<|endoftext|>) is never text, there too."""
    enc = A.encoder_for("openchatml-2.2", mode)
    tok = enc.tokenizer

    def ctl(name):
        i = tok.control_id(name)
        return [i] if i is not None else tok.encode_text(name)

    eot = tok.specials["<|endoftext|>"]
    ids = (ctl("<|start|>") + tok.encode_text("user") + ctl("<|message|>") + ctl("<|literal|>")
           + tok.encode_text("a") + [eot] + ctl("<|end|>") + tok.encode_text("b") + ctl("<|endliteral|>")
           + ctl("<|end|>"))
    ev, res = _both(enc, ids)
    msgs = [e.message for e in ev if type(e) is MessageEnd]
    assert msgs == res.messages and len(msgs) == 1
    assert msgs[0].content == "a<|end|>b"  # the literal block's <|end|> is content; <|endoftext|> is not
    codes = [(e.code, e.position) for e in ev if type(e) is Error]
    assert codes == [(e.code, e.position) for e in res.errors] == [("E-PARSE-STRAY-CONTROL", ids.index(eot))]


def test_rest_of_a_stop_token_is_past_the_stop():
    """Fallback mode: "<|return|>" can end inside a token (``>\\n//``); the stream stops there.
    The token's tail is past the end of the turn (the sampler stopped on that token): not read,
    given in ``Stop.rest`` and ``ParseResult.tail``; parse of the ids up to the stop agrees."""
    enc = A.encoder_for("harmony", "fallback")
    tok = enc.tokenizer
    ids = tok.encode_text("<|channel|>final<|message|>Hi<|return|>\n// tail")
    k = next(j for j in range(len(ids)) if "<|return|>" in tok.decode(ids[:j + 1]))
    tail = tok.decode(ids[:k + 1]).split("<|return|>", 1)[1]
    assert tail == "\n//"  # o200k: the control's last token is ">\n//"
    dec = enc.decoder(role="assistant")
    ev = dec.feed(ids) + dec.finish()
    stop = next(e for e in ev if type(e) is Stop)
    assert stop.position == k and stop.reason == "return"
    res = enc.parse(ids[:k + 1], role="assistant", errors="collect")
    assert [e.message for e in ev if type(e) is MessageEnd] == res.messages
    assert res.messages[0].content == "Hi"
    assert [(e.code, e.position, e.text) for e in ev if type(e) is Error] == \
        [(e.code, e.position, e.text) for e in res.errors]
    assert res.errors == [] and res.tail == stop.rest == tail
    assert enc.to_openai(ids[:k + 1]).finish_reason == "stop"
    assert "".join(e.text for e in ev if type(e) is Delta and e.visible) == "Hi"


@pytest.mark.parametrize("fmt", ["openchatml-2.2", "openchatml-2.0", "harmony", "chatml", "apertus"])
def test_stream_stops_are_the_data_stops(fmt):
    """The controls the stream stops at for an assistant turn are the data's
    (``stops.assistant`` in ``encoder/formats/<pkg>/<format>.tokens.json``), which ``enc.stop_ids()`` /
    ``stop_strings()`` give the sampler: decoder and sampler stop at the same tokens."""
    enc = A.encoder_for(fmt, "registered")
    assert set(enc.decoder(role="assistant").stop_controls) == set(A.vocab.control_table(fmt).stops["assistant"])
