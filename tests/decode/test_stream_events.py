"""OpenChatML 2.2 §9 streaming events (``ocml.encoder.stream.transport``) and ``cancel()``.

What is sent (visible slices only), paragraph flushes, ``response.cancel`` with the open
message marked truncated, ``tool.cancel {call_id, reason}`` for calls that never got
their ``<|call|>``, ``E-STREAM-TRUNCATED`` when the stream ends without ``<|return|>`` /
``<|call|>``; the same §9 events at any chunking (hypothesis); ``BatchDecoder.cancel``.
"""

from __future__ import annotations

import random

import pytest

from ocml.encoder.events import Error, MessageEnd, Stop
from ocml.encoder.stream.batch import BatchDecoder
from ocml.encoder.stream.transport import (DeltaFlush, ResponseCancel, ResponseDelta, ResponseDone, ResponseError,
                                      ToolCancel, Transport, merge_deltas)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.stream import MODES, build, cases, msgs  # noqa: E402

HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(enc, ids, sizes, *, end="finish", **kw):
    """Feed ``ids`` in chunks of ``sizes`` (the rest in one), then finish / cancel: §9 events."""
    tr = Transport(enc.decoder(role="assistant", **kw), message_id="m")
    out, k = [], 0
    for s in sizes:
        if k >= len(ids):
            break
        out += tr.feed(ids[k:k + s])
        k += s
    if k < len(ids):
        out += tr.feed(ids[k:])
    out += tr.finish() if end == "finish" else tr.cancel(end)
    return out, tr


def sizes_for(n: int, rng: random.Random) -> list[int]:
    return [rng.randint(1, 7) for _ in range(n)]


def visible_text(events) -> str:
    return "".join(e.text for e in events if type(e) is ResponseDelta)


def _answer(enc, text: str, end: str = "ctl:<|return|>") -> list[int]:
    return build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "secret thoughts", "ctl:<|end|>",
                 "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", text, end)


# -- the mapping --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_only_visible_text_is_sent(encs, mode):
    enc = encs[mode]
    out, _ = run(enc, _answer(enc, "The answer."), [1] * 100)
    out = merge_deltas(out)
    assert out == [ResponseDelta("The answer.", "final", "m"), DeltaFlush("m"), ResponseDone("return", "m")]
    assert [e.to_dict() for e in out][0] == {"type": "response.delta", "text": "The answer.", "channel": "final",
                                             "message_id": "m"}
    assert ResponseDone("call").to_dict() == {"type": "response.done", "reason": "call"}  # no message_id: left out
    if mode != "harmony":  # 2.2: a preamble is visible, other commentary is not
        ids = build(enc, "ctl:<|channel|>", "commentary intent=preamble", "ctl:<|message|>", "Plan.", "ctl:<|end|>",
                    "ctl:<|start|>", "assistant", "ctl:<|channel|>", "commentary", "ctl:<|message|>", "hidden",
                    "ctl:<|end|>")
        out, _ = run(enc, ids, [3] * 50)
        assert merge_deltas(out) == [ResponseDelta("Plan.", "commentary", "m"), DeltaFlush("m"),
                                     ResponseError("E-STREAM-TRUNCATED", out[-1].message, "m")]


@pytest.mark.parametrize("mode", MODES)
def test_paragraph_flushes(encs, mode):
    enc = encs[mode]
    out, _ = run(enc, _answer(enc, "One.\n\nTwo\n \n\nThree\nfour"), [2] * 100)
    assert [(type(e).__name__, getattr(e, "text", None)) for e in merge_deltas(out)] == [
        ("ResponseDelta", "One.\n\n"), ("DeltaFlush", None), ("ResponseDelta", "Two\n \n"), ("DeltaFlush", None),
        ("ResponseDelta", "\nThree\nfour"), ("DeltaFlush", None), ("ResponseDone", None)]


@pytest.mark.parametrize("mode", MODES)
def test_end_without_stop_token_is_truncated(encs, mode):
    enc = encs[mode]
    # the answer ended with <|end|>, then the stream ended: no <|return|>
    out, tr = run(enc, _answer(enc, "Hi", end="ctl:<|end|>"), [5] * 40)
    assert type(out[-1]) is ResponseError and out[-1].code == "E-STREAM-TRUNCATED"
    assert tr.decoder.status == "final"  # the decoder's own view: an answer was given
    # cut inside the answer
    out, tr = run(enc, _answer(enc, "Hi there", end="partial"), [5] * 40)
    assert [type(e) for e in merge_deltas(out)] == [ResponseDelta, DeltaFlush, ResponseError]
    assert tr.decoder.status == "truncated"
    # a stop id
    eot = enc.tokenizer.control_id("<|endoftext|>")
    out, _ = run(enc, _answer(enc, "Hi", end="partial") + [eot], [5] * 40, stop_ids=[eot])
    assert out[-1].code == "E-STREAM-TRUNCATED" and "<|endoftext|>" in out[-1].message
    # a stop string is a stop the caller asked for
    out, _ = run(enc, _answer(enc, "Hi STOP more"), [5] * 40, stop_strings=["STOP"])
    assert merge_deltas(out)[-1] == ResponseDone("stop_string", "m")
    assert visible_text(out) == "Hi "


@pytest.mark.parametrize("mode", MODES)
def test_cancel(encs, mode):
    enc = encs[mode]
    ids = _answer(enc, "Partial answer", end="")
    out, tr = run(enc, ids, [3] * 60, end="user pressed stop")
    assert merge_deltas(out) == [ResponseDelta("Partial answer", "final", "m"), DeltaFlush("m"),
                                 ResponseCancel("user pressed stop", "m")]
    dec = tr.decoder
    assert dec.status == "cancelled" and dec.cancel_reason == "user pressed stop" and dec.done
    assert dec.messages[-1].content == "Partial answer"
    assert not [e for e in dec.errors if e.code == "E-STREAM-TRUNCATED"]
    assert tr.cancel() == [] and tr.finish() == [] and tr.feed(ids[:2]) == []
    # the decoder's own events: the open message ends truncated, then Stop(cancel)
    dec = enc.decoder(role="assistant")
    dec.feed(ids)
    ev = dec.cancel()
    assert type(ev[-2]) is MessageEnd and ev[-2].reason == "truncated" and ev[-1] == Stop("cancel", None, len(ids), 0)
    assert not [e for e in ev if type(e) is Error]
    # between messages: nothing is open
    dec = enc.decoder(role="assistant")
    dec.feed(_answer(enc, "x", end="ctl:<|end|>"))
    assert [type(e) for e in dec.cancel()] == [Stop]
    # inside a header: never became a message; its text is reported
    dec = enc.decoder(role="assistant")
    dec.feed(build(enc, "ctl:<|channel|>", "fin"))
    ev = dec.cancel()
    assert [(e.code, e.text) for e in ev if type(e) is Error] == [("E-STREAM-TRUNCATED", "<|channel|>fin")]
    # strict mode: a cut is not malformed input
    dec = enc.decoder(role="assistant", strict=True)
    dec.feed(build(enc, "ctl:<|channel|>", "fin"))
    assert [type(e) for e in dec.cancel()] == [Stop]


@pytest.mark.parametrize("mode", MODES)
def test_tool_cancel(encs, mode):
    enc = encs[mode]
    head = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "t", "ctl:<|end|>",
                 "ctl:<|start|>", "assistant to=functions.get_weather", "ctl:<|channel|>", "commentary",
                 "ctl:<|message|>", '{"city": "Pa')
    out, tr = run(enc, head, [4] * 40, end="client gone")
    want_id = tr.decoder.to_openai().message["tool_calls"][0]["id"]
    assert out == [ToolCancel(want_id, "client gone", "m"), ResponseCancel("client gone", "m")]
    # cut by the end of the stream
    out, _ = run(enc, head, [4] * 40)
    assert out == [ToolCancel(want_id, "truncated", "m"), ResponseError("E-STREAM-TRUNCATED", out[-1].message, "m")]
    # a new message before the call's <|call|>: never run
    ids = head + build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "ok",
                       "ctl:<|return|>")
    out, _ = run(enc, ids, [4] * 40)
    assert [type(e) for e in merge_deltas(out)] == [ToolCancel, ResponseDelta, DeltaFlush, ResponseDone]
    assert out[0] == ToolCancel(want_id, "unterminated", "m")
    # a finished call is not cancelled
    out, _ = run(enc, head + build(enc, 'ris"}', "ctl:<|call|>"), [4] * 40)
    assert out == [ResponseDone("call", "m")]
    if mode != "harmony":  # OpenChatML 2.2: the header's call_id
        ids = build(enc, "ctl:<|start|>", "assistant to=functions.f call_id=c9", "ctl:<|channel|>", "commentary",
                    "ctl:<|message|>", "{")
        tr = Transport(enc.decoder(), call_id_seed="x")
        assert (tr.feed(ids) + tr.cancel())[0] == ToolCancel("c9", "cancelled")


# -- chunk invariance ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_generated_completions_same_events_at_any_chunking(encs, mode):
    enc = encs[mode]
    rng = random.Random(9)
    for ids, _ in cases(enc, 30, 41):
        ref, tr = run(enc, ids, [len(ids)])
        ref = merge_deltas(ref)
        content = "".join(m.content for m in tr.decoder.messages if m.role == "assistant"
                          and (m.channel in (None, "final") or (m.channel == "commentary" and m.intent == "preamble"
                                                                and m.recipient is None)))
        assert visible_text(ref) == content
        for _ in range(3):
            got, _ = run(enc, ids, sizes_for(len(ids), rng))
            assert merge_deltas(got) == ref
        cut = rng.randint(0, len(ids))  # cancel anywhere: the same events however the prefix came
        a, _ = run(enc, ids[:cut], [1] * cut, end="stop")
        b, _ = run(enc, ids[:cut], sizes_for(cut, rng), end="stop")
        assert merge_deltas(a) == merge_deltas(b)


_PIECE = st.one_of(st.sampled_from(["\n", "\n\n", " ", "word", "é", "🙂", "Para.", "\r\n", "x\n \ny"]),
                   st.text(alphabet="ab \n", max_size=6))


@pytest.mark.parametrize("mode", MODES)
@HYP
@given(pieces=st.lists(_PIECE, max_size=12), seed=st.integers(0, 2 ** 16), cancel=st.booleans())
def test_flushes_are_chunk_invariant(encs, mode, pieces, seed, cancel):
    enc = encs[mode]
    text = "".join(pieces)
    ids = _answer(enc, text, end="" if cancel else "ctl:<|return|>")
    end = "stop" if cancel else "finish"
    ref, _ = run(enc, ids, [1] * len(ids), end=end)
    got, _ = run(enc, ids, sizes_for(len(ids), random.Random(seed)), end=end)
    assert merge_deltas(got) == merge_deltas(ref)
    assert visible_text(ref) == text
    # a flush follows exactly the paragraph breaks (and the message end)
    pos, breaks = 0, []
    for e in ref:
        if type(e) is ResponseDelta:
            pos += len(e.text)
        elif type(e) is DeltaFlush:
            breaks.append(pos)
    nl, want = 0, []
    for i, c in enumerate(text):
        if c == "\n":
            nl += 1
            if nl == 2:
                want.append(i + 1)
        elif not c.isspace():
            nl = 0
    if text and (not want or want[-1] != len(text)):
        want.append(len(text))
    assert breaks == want


# -- BatchDecoder.cancel ------------------------------------------------------------------------

@pytest.mark.parametrize("vectorized", [False, True])
def test_batch_cancel(encs, vectorized):
    enc = encs["harmony"]
    rows = [_answer(enc, "first answer", end=""), _answer(enc, "done"), _answer(enc, "third", end="")]
    n = max(map(len, rows))
    bd = BatchDecoder(enc, 3, vectorized=vectorized)
    for k in range(n):
        bd.step([r[k] if k < len(r) else -1 for r in rows])
    out = bd.cancel([0, 1], reason="shutdown")
    singles = []
    for r in rows[:2]:
        d = enc.decoder(role="assistant")
        d.feed(r)
        singles.append(d.cancel("shutdown"))
    assert out[0] == singles[0] and out[1] == [] == singles[1] and out[2] == []  # row 1 had stopped
    assert bd.status == ["cancelled", "final", "running"] and bd.done.tolist() == [True, True, False]
    assert msgs(out[0])[0].content == "first answer"
    assert bd.cancel()[2][-1] == Stop("cancel", None, len(rows[2]), 0)
    with pytest.raises(Exception) as info:
        bd.cancel(reason=None)
    assert info.value.field == "reason"
