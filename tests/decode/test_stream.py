"""Stream decoder (encoder.stream.decoder) and stop helpers (encoder.stops).

Id mode (Harmony, OpenChatML 2.2 registered) and fallback mode (OpenChatML 2.2 on plain
o200k_base, controls spelled as text): chunk invariance, agreement with the batch
parser and with what was rendered, visibility, stops, errors, adversarial cases from
the decoding note §5, and a differential against openai-harmony's completion parser.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ocml.encoder.errors import HeaderError, ParseError
from ocml.encoder.events import Delta, Error, MessageEnd, MessageStart, Stop

from support.stream import MODES, build, byte_ids, cases, check_stream, msgs, split_assistant, stream

N_CONVERSATIONS = 60


# -- fixtures and helpers -------------------------------------------------------------


# -- rendered conversations ----------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_rendered_assistant_turns(encs, mode):
    enc = encs[mode]
    rng = random.Random(7)
    for completion, expected in cases(enc, N_CONVERSATIONS, 11):
        ev = check_stream(enc, completion, rng, role="assistant")
        got = msgs(ev)
        stops = [e for e in ev if type(e) is Stop]
        upto = completion[:stops[0].position + 1] if stops else completion
        assert got == enc.parse(upto, role="assistant")
        assert [(m.role, m.channel, m.recipient, m.content) for m in got] == \
               [(m.role, m.channel, m.recipient, m.content) for m in expected][:len(got)]
        assert len(got) == len(expected) or got[-1].recipient
        assert not [e for e in ev if type(e) is Error]
        # visibility
        for e in ev:
            if type(e) is Delta:
                assert e.visible == (e.channel in (None, "final"))
        if stops:
            assert len(stops) == 1 and stops[0].reason in ("return", "call") and ev[-1] is stops[0]
            assert stops[0].reason == "return" or got[-1].recipient


@pytest.mark.parametrize("mode", MODES)
def test_trailing_ids_after_stop(encs, mode):
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "Hi there", "ctl:<|return|>")
    extra = build(enc, "ctl:<|start|>", "assistant more text")
    dec = enc.decoder(role="assistant")
    ev = dec.feed(ids + extra)
    assert type(ev[-1]) is Stop and ev[-1].reason == "return" and ev[-1].trailing == len(extra)
    assert msgs(ev)[0].content == "Hi there" and msgs(ev)[0].channel == "final"
    assert dec.feed(extra) == [] and dec.finish() == []
    # split so the stop is in the middle of the second chunk
    dec.reset()
    ev = dec.feed(ids[:3]) + dec.feed(ids[3:] + extra[:2])
    assert ev[-1].trailing == 2
    # call
    ids = build(enc, "ctl:<|channel|>", "commentary to=functions.f ", "ctl:<|constrain|>", "json",
                "ctl:<|message|>", '{"a": 1}', "ctl:<|call|>")
    ev = check_stream(enc, ids + extra[:1], role="assistant")
    m = msgs(ev)[0]
    assert m.recipient == "functions.f" and m.content == '{"a": 1}' and m.constrain == "json"
    assert ev[-2].reason == "call" and ev[-1] == Stop("call", "<|call|>", ev[-1].position, 0)


@pytest.mark.parametrize("mode", MODES)
def test_visibility_preamble(encs, mode):
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "think", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "commentary", "ctl:<|message|>", "hidden",
                "ctl:<|end|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [(d.text, d.visible) for d in ev if type(d) is Delta] == [("think", False), ("hidden", False)]
    fm_ids = build(enc, "ctl:<|channel|>", "commentary intent=preamble", "ctl:<|message|>", "I will look", "ctl:<|end|>")
    starts = [e for e in check_stream(enc, fm_ids, role="assistant") if type(e) is MessageStart]
    if starts and starts[0].intent == "preamble":
        ev = check_stream(enc, fm_ids, role="assistant")
        assert [d.visible for d in ev if type(d) is Delta] == [True]
    elif mode != "harmony":
        pytest.fail(f"intent not parsed: {starts}")


@pytest.mark.parametrize("mode", MODES)
def test_truncated_finish(encs, mode):
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "partial answer é") + byte_ids(enc, "🙂".encode())[:2]
    ev = check_stream(enc, ids, role="assistant")
    errs = [e for e in ev if type(e) is Error]
    assert [e.code for e in errs] == ["E-STREAM-TRUNCATED"]
    end = [e for e in ev if type(e) is MessageEnd][0]
    assert end.reason == "truncated" and end.message.content == "partial answer é\ufffd"
    assert not any(type(e) is Stop for e in ev)


@pytest.mark.parametrize("mode", MODES)
def test_resync_after_garbage(encs, mode):
    enc = encs[mode]
    ids = build(enc, "garbage here", "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>",
                "ok", "ctl:<|end|>")
    ev = check_stream(enc, ids)
    assert [e.code for e in ev if type(e) is Error] == ["E-PARSE-STRAY-TEXT"]
    assert msgs(ev) == enc.parse(ids) and msgs(ev)[0].content == "ok"
    with pytest.raises(ParseError):
        dec = enc.decoder(strict=True)
        dec.feed(ids)


@pytest.mark.parametrize("mode", MODES)
def test_strict_truncation_raises(encs, mode):
    enc = encs[mode]
    dec = enc.decoder(role="assistant", strict=True)
    dec.feed(build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "x"))
    with pytest.raises(ParseError):
        dec.finish()


# -- adversarial (decoding note §5) ----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_split_utf8(encs, mode):
    """C15-17: emoji / ZWJ family / CJK split into byte tokens, also right before a control."""
    enc = encs[mode]
    text = "é🙂 👨‍👩‍👧 日本語 ü"
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", byte_ids(enc, text.encode()), "ctl:<|end|>")
    for k in (1, 2, 3):
        raw, _ = stream(enc, ids, [k] * len(ids), role="assistant")
        deltas = [e.text for e in raw if type(e) is Delta]
        assert "".join(deltas) == text
        assert not any("\ufffd" in d for d in deltas)
    check_stream(enc, ids, role="assistant")
    # C18: valid prefix of a multibyte char cut by <|end|>: one U+FFFD, nothing carried over
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "a", byte_ids(enc, "🙂".encode())[:3],
                "ctl:<|end|>", "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "b",
                "ctl:<|end|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [m.content for m in msgs(ev)] == ["a\ufffd", "b"] == [m.content for m in enc.parse(ids, role="assistant")]


@pytest.mark.parametrize("mode", MODES)
def test_return_after_end(encs, mode):
    """D24 (vllm#50690): <|return|> in ExpectStart: error event, then the stream stops."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "done", "ctl:<|end|>", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [type(e).__name__ for e in ev] == ["MessageStart", "Delta", "MessageEnd", "Error", "Stop"]
    assert ev[3].code == "E-PARSE-STRAY-CONTROL" and ev[4].reason == "return"


@pytest.mark.parametrize("mode", MODES)
def test_free_text_after_end(encs, mode):
    """F42 (vllm PR #35906): text after <|end|> without <|start|>."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "t", "ctl:<|end|>", "oops more",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "ans", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [e.code for e in ev if type(e) is Error] == ["E-PARSE-STRAY-TEXT"]
    assert msgs(ev) == enc.parse(ids, role="assistant")
    assert [m.content for m in msgs(ev)] == ["t", "ans"]


@pytest.mark.parametrize("mode", MODES)
def test_missing_message_token(encs, mode):
    """F41 (vllm PR #45213): header runs into a terminator: lenient salvage."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final the answer", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [e.code for e in ev if type(e) is Error] == ["E-PARSE-HEADER"]
    assert msgs(ev) == enc.parse(ids, role="assistant")
    assert msgs(ev)[0].content == "the answer" and msgs(ev)[0].channel == "final"
    assert type(ev[-1]) is Stop


@pytest.mark.parametrize("mode", MODES)
def test_unknown_role(encs, mode):
    """F43: unknown role -> header error (with the header text), the body is reported as
    skipped (with its text: nothing is lost silently), next <|start|> resyncs."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|start|>", "robot", "ctl:<|channel|>", "final", "ctl:<|message|>", "beep", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "hi", "ctl:<|end|>")
    ev = check_stream(enc, ids)
    assert msgs(ev) == enc.parse(ids)
    assert [m.content for m in msgs(ev)] == ["hi"]
    errs = [e for e in ev if type(e) is Error]
    assert [(e.code, e.text) for e in errs] == [("E-PARSE-HEADER", "robot<|channel|>final"), ("E-PARSE-SKIPPED", "beep")]
    assert errs[1].position == ids.index(build(enc, "beep")[0])
    with pytest.raises((ParseError, HeaderError)):  # the frame machine re-raises the header error
        enc.decoder(strict=True).feed(ids)


@pytest.mark.parametrize("mode", MODES)
def test_invalid_and_special_ids(encs, mode):
    """B12/B13: out-of-vocab and non-structural special ids are errors, never text or a stall."""
    enc = encs[mode]
    eot = enc.tokenizer.control_id("<|endoftext|>")
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "ab", [10 ** 7, -5, eot], "cd", "ctl:<|end|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [e.code for e in ev if type(e) is Error] == ["E-VOCAB-ID", "E-VOCAB-ID", "E-PARSE-STRAY-CONTROL"]
    assert msgs(ev)[0].content == "abcd" == enc.parse(ids, role="assistant")[0].content
    # as a stop id
    dec = enc.decoder(role="assistant", stop_ids=[eot])
    ev = dec.feed(ids)
    assert ev[-1] == Stop("stop_id", "<|endoftext|>", ids.index(eot), len(ids) - ids.index(eot) - 1)


@pytest.mark.parametrize("mode", MODES)
def test_registered_control_in_content(encs, mode):
    """B9: a <|start|> inside content truncates the message (never the text "<|start|>")."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "x", "ctl:<|start|>", "assistant",
                "ctl:<|channel|>", "final", "ctl:<|message|>", "y", "ctl:<|end|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [(m.content, r) for m, r in [(e.message, e.reason) for e in ev if type(e) is MessageEnd]] == \
           [("x", "truncated"), ("y", "end")]
    assert "E-PARSE-UNTERMINATED" in [e.code for e in ev if type(e) is Error]


def test_ordinary_spelling_of_registered_control_is_text(encs):
    """B10: in id mode the ASCII spelling of a control is plain text."""
    enc = encs["harmony"]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "see <|end|> and <|start|>", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    assert msgs(ev)[0].content == "see <|end|> and <|start|>"


def test_fallback_escapes_and_literals(encs):
    """A7, E33-36: escapes and literal blocks spelled as text, split at every byte."""
    enc = encs["ocml-text"]
    body = "a<<|end|>b<<<|start|>c<|literal|>x<|end|><|return|><<|start|>y<|endliteral|>z<|"
    text = "<|channel|>final<|message|>" + body + "<|end|>"
    for ids in (enc.tokenizer.encode_text(text), byte_ids(enc, text.encode())):
        ev = check_stream(enc, ids, role="assistant")
        m = msgs(ev)
        assert [x.content for x in m] == ["a<|end|>b<<|start|>cx<|end|><|return|><<|start|>yz<|"]
        assert m == enc.parse(ids, role="assistant")
        assert not any(type(e) in (Error, Stop) for e in ev)
    # rendered content with control text round-trips (the renderer escapes it)
    conv = {"messages": [{"role": "user", "content": "q"},
                         {"role": "assistant", "channel": "final", "content": "quote <|end|> and <|return|> <<|x"}]}
    completion, expected = split_assistant(enc, conv)
    ev = check_stream(enc, completion, role="assistant")
    assert msgs(ev)[0].content == expected[0].content
    assert type(ev[-1]) is Stop and ev[-1].reason == "return"


def test_fallback_split_control_near_misses(encs):
    """A4/A5/A6: overlapping prefixes and near misses are released as text; partial control at EOS."""
    enc = encs["ocml-text"]
    text = "<|channel|>final<|message|><|<|en<|starts|><|START|><|sta"
    ids = byte_ids(enc, text.encode())
    ev = check_stream(enc, ids, role="assistant")
    # the partial control at the end ("<|sta": max tokens cut a control) is left out of the
    # content and given as the text of E-STREAM-TRUNCATED (parse agrees)
    assert msgs(ev)[0].content == "<|<|en<|starts|><|START|>"
    assert msgs(ev)[0].content == enc.parse(ids, role="assistant")[0].content
    assert [(e.code, e.text) for e in ev if type(e) is Error] == [("E-STREAM-TRUNCATED", "<|sta")]
    # holdback is minimal: "<|sta" + "rtle" is released on the second token
    dec = enc.decoder(role="assistant")
    dec.feed(enc.tokenizer.encode_text("<|channel|>final<|message|>x"))
    assert "".join(e.text for e in dec.feed(byte_ids(enc, b"<|sta")) if type(e) is Delta) == ""
    assert "".join(e.text for e in dec.feed(enc.tokenizer.encode_text("rtle")) if type(e) is Delta) == "<|startle"


@pytest.mark.parametrize("mode", MODES)
def test_stop_strings_final_only(encs, mode):
    """D27/D31: user stop strings, split or inside a token, only on the final channel."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "Paris is nice", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "It is Paris, yes",
                "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant", stop_strings=["Pari"])
    m = msgs(ev)
    assert [x.content for x in m] == ["Paris is nice", "It is "]
    assert ev[-1].reason == "stop_string" and ev[-1].token == "Pari"
    assert [e.reason for e in ev if type(e) is MessageEnd] == ["end", "truncated"]
    assert not any(type(e) is Error for e in ev)
    last = enc.decoder(role="assistant", stop_strings=["Pari"]).feed(ids)[-1]
    assert last.trailing == len(ids) - 1 - last.position > 0
    ev = check_stream(enc, ids, role="assistant", stop_strings=["Pari"], stop_channels=None)
    assert msgs(ev)[0].content == "" and ev[-1].reason == "stop_string"


# -- chunk invariance on random id soups ------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_random_soup_chunk_invariance(encs, mode):
    enc = encs[mode]
    rng = random.Random(3)
    pool = [build(enc, "ctl:" + c) for c in ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>")]
    pool += [build(enc, w) for w in ("assistant", "user", "final", "analysis", " to=functions.f", "json", "hi", " ",
                                     "<|", "|>", "<<", "end", "\n")]
    pool += [byte_ids(enc, "🙂".encode())[:k] for k in (1, 2, 3, 4)] + [[10 ** 7]]
    if mode == "ocml-text":
        pool += [byte_ids(enc, b"<|lit"), byte_ids(enc, b"eral|>"), build(enc, "<|endliteral|>")]
    for _ in range(150):
        ids = [i for _ in range(rng.randint(1, 25)) for i in rng.choice(pool)]
        if rng.random() < 0.5:
            ids += build(enc, "ctl:<|return|>") + build(enc, "x")
        role = rng.choice([None, "assistant"])
        ev = check_stream(enc, ids, rng, role=role)
        stop = [e for e in ev if type(e) is Stop]
        upto = ids[:stop[0].position + 1] if stop else ids
        assert msgs(ev) == enc.parse(upto, role=role)
        if mode != "ocml-text":  # text-mode error positions are per control in the stream
            from ocml.encoder.parse import parse_ids

            res = parse_ids(enc, upto, role=role, detailed=True)
            assert [e.code for e in ev if type(e) is Error] == [e.code for e in res.errors]


# -- differential vs openai-harmony ----------------------------------------------------------

def test_differential_openai_harmony(harmony, harmony_encoder):
    oh = pytest.importorskip("openai_harmony")
    rng = random.Random(5)
    n = 0
    for completion, _ in cases(harmony_encoder, 200, 23):
        cut = [k for k, i in enumerate(completion) if i in (200002, 200012)]
        completion = completion[:cut[0] + 1] if cut else completion  # the sampler stops there
        ref = harmony.parse_messages_from_completion_tokens(completion, oh.Role.ASSISTANT)
        dec = harmony_encoder.decoder(role="assistant")
        k, ev = 0, []
        while k < len(completion):
            s = rng.randint(1, 8)
            ev += dec.feed(completion[k:k + s])
            k += s
        ev += dec.finish()
        got = msgs(ev)
        assert len(got) == len(ref), completion
        for g, r in zip(got, ref):
            d = r.to_dict()
            assert g.role == d["role"]
            assert g.channel == d.get("channel")
            assert g.recipient == d.get("recipient")
            assert g.content == "".join(c["text"] for c in d["content"])
            ct = d.get("content_type")
            ours = g.content_type if g.constrain is None else (
                f"<|constrain|>{g.constrain}" if g.content_type is None else f"{g.content_type} <|constrain|>{g.constrain}")
            assert ours == ct, (g, d)
        n += 1
    assert n == 200


# -- stops -------------------------------------------------------------------------------------

def test_stop_ids_and_strings(encs):
    from ocml.encoder.stops import hf_stopping_criteria, stop_ids, stop_strings, vllm_sampling_kwargs

    h = encs["harmony"]
    assert stop_ids(h) == h.stop_ids() == [200002, 200012]
    assert stop_ids(h, "all") == [200002, 200012, 200007]
    assert stop_strings(h) == []
    o = encs["ocml-id"]
    assert stop_ids(o) == [o.tokenizer.control_id("<|return|>"), o.tokenizer.control_id("<|call|>")]
    f = encs["ocml-text"]
    assert stop_ids(f) == [] and f.stop_strings() == ["<|return|>", "<|call|>"]
    assert vllm_sampling_kwargs(h) == {"stop_token_ids": [200002, 200012], "stop": []}
    assert vllm_sampling_kwargs(f) == {"stop_token_ids": [], "stop": ["<|return|>", "<|call|>"]}
    with pytest.raises(KeyError):
        stop_ids(h, "bogus")

    crit = hf_stopping_criteria(h)
    got = crit([[1, 2, 200002], [1, 200007], [5, 200012]], None)
    assert got.tolist() == [True, False, True]
    crit = hf_stopping_criteria(f)
    ids = f.tokenizer.encode_text("hello <|return|>")
    done = [crit([ids[:k]], None)[0] for k in range(1, len(ids) + 1)]
    assert done[-1] and not any(done[:-1])
    both = f.tokenizer.encode_text("a <|return|>") + f.tokenizer.encode_text(" more")
    assert crit(np.array([both]), None).tolist() == [False]  # fired earlier, not at this step


@pytest.mark.parametrize("mode", MODES)
def test_unbounded_header(encs, mode):
    """F44: a header that never reaches <|message|> is bounded; the run is dropped, then resync."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|start|>", "assistant" + " blah" * 1200, "ctl:<|start|>", "assistant", "ctl:<|channel|>",
                "final", "ctl:<|message|>", "ok", "ctl:<|end|>")
    ev = check_stream(enc, ids)
    assert [e.code for e in ev if type(e) is Error] == ["E-PARSE-HEADER"]
    assert msgs(ev) == enc.parse(ids) and msgs(ev)[0].content == "ok"


def test_literal_block_with_control_ids(encs):
    """E33/E38 in id mode: registered control ids inside a literal block are its text."""
    enc = encs["ocml-id"]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "a", "ctl:<|literal|>", "x", "ctl:<|end|>",
                "ctl:<|return|>", "ctl:<|start|>", "ctl:<|endliteral|>", "b", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [m.content for m in msgs(ev)] == ["ax<|end|><|return|><|start|>b"]
    assert msgs(ev) == enc.parse(ids, role="assistant")
    assert [type(e).__name__ for e in ev][-2:] == ["MessageEnd", "Stop"] and not any(type(e) is Error for e in ev)


@pytest.mark.parametrize("mode", ["ocml-id", "ocml-text"])
def test_stray_endliteral_is_the_same_error_in_parse_and_stream(encs, mode):
    """An <|endliteral|> with no block to close is E-PARSE-STRAY-CONTROL everywhere; a real
    block's closing marker is silent and its body stays opaque."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "Hi", "ctl:<|endliteral|>", "there",
                "ctl:<|literal|>", "a<|end|>b", "ctl:<|endliteral|>", "!", "ctl:<|return|>")
    events = check_stream(enc, ids, role="assistant")
    errs = [(e.code, e.message) for e in events if type(e) is Error]
    assert errs == [("E-PARSE-STRAY-CONTROL", "<|endliteral|> inside message content")]
    parsed = enc.parse(ids, role="assistant")
    assert [m.content for m in msgs(events)] == [m.content for m in parsed] == ["Hithere" + "a<|end|>b" + "!"]
    from ocml.encoder.parse import parse_ids
    detail = parse_ids(enc, ids, role="assistant", detailed=True)
    assert [(e[0] if isinstance(e, tuple) else e.code) for e in detail.errors] == ["E-PARSE-STRAY-CONTROL"]


@pytest.mark.parametrize("bad", [["x"], [1.5], "abc", None, [[1, 2]]])
def test_non_integer_ids_are_a_typed_error_not_a_guess(encs, bad):
    """Floats are never truncated into ids, strings never iterated as tokens: E-INPUT-TYPE
    from parse and from the stream decoder (lean path included)."""
    from ocml.encoder.errors import InputTypeError

    enc = encs["harmony"]
    with pytest.raises(InputTypeError) as info:
        enc.parse(bad, role="assistant")
    assert info.value.code == "E-INPUT-TYPE" and info.value.field == "ids"
    dec = enc.decoder(role="assistant")
    dec.feed(build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "hi"))  # inside content: lean path armed
    with pytest.raises(InputTypeError):
        dec.feed(bad)
