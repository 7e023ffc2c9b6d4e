"""``Encoder.to_openai`` / ``StreamDecoder.to_openai``: completions as OpenAI Chat Completions messages.

* Round trip, every format (Harmony, OpenChatML 2.2 with ids and spelled as text, 2.0):
  a completion of the usual shapes, projected and rendered back after the prompt with
  ``render(..., mode="train")``, gives the completion's ids.  These read the message back
  through ``ocml.encoder.adapters``' OpenAI mapping (content -> ``final``, reasoning_content ->
  ``analysis``, tool calls -> ``commentary`` to ``functions.NAME`` with ``<|constrain|>json``):
  ``test_round_trip_*`` depend on it.
* Finish reasons, tool call ids (format's ``call_id`` or deterministic), function names,
  messages that have no place in an assistant message, and the stream decoder agreeing
  with ``enc.to_openai`` at any chunking.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from ocml import encoder
from ocml.encoder.errors import UnrepresentableError
from ocml.encoder.openai_message import ChatChoice, tool_call_ids

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.stream import MODES, build, cases  # noqa: E402

USER = {"role": "user", "content": "What is the weather in Paris?"}
CALL = {"role": "assistant", "channel": "commentary", "recipient": "functions.get_weather", "constrain": "json",
        "content": '{"city": "Paris"}'}


def _encs(mode: str) -> tuple[encoder.Encoder, encoder.Encoder]:
    """(the encoder reading native messages, the one reading OpenAI dicts) for a mode."""
    fmt, tok = {"harmony": ("harmony", None), "ocml-id": ("openchatml-2.2", None),
                "ocml-text": ("openchatml-2.2", "o200k_base"), "ocml-2.0": ("openchatml-2.0", None)}[mode]
    key = f"_h2_{mode}"
    if key not in _CACHE:
        _CACHE[key] = (encoder.Encoder(fmt, tokenizer=tok, shape="native"), encoder.Encoder(fmt, tokenizer=tok))
    return _CACHE[key]


_CACHE: dict[str, tuple[encoder.Encoder, encoder.Encoder]] = {}
ALL_MODES = [*MODES, "ocml-2.0"]


def completion(nat: encoder.Encoder, turn: list[dict]) -> list[int]:
    """The ids a model generates after ``[USER]``'s generation prompt for ``turn`` (native messages)."""
    full = nat.render([USER, *turn], mode="train", cot="keep-all").ids.tolist()
    prompt = nat.render([USER], mode="prompt").ids.tolist()
    assert full[:len(prompt)] == prompt
    return full[len(prompt):]


def rendered_back(chat: encoder.Encoder, message: dict) -> list[int]:
    """``message`` rendered after ``[USER]`` in train mode, from the prompt on."""
    full = chat.render([USER, message], mode="train").ids.tolist()
    prompt = chat.render([USER], mode="prompt").ids.tolist()
    assert full[:len(prompt)] == prompt
    return full[len(prompt):]


def shapes(mode: str, a: str, b: str, args: str) -> dict[str, list[dict]]:
    call = dict(CALL, content=args)
    if mode == "ocml-id" or mode == "ocml-text":
        call["call_id"] = "wx1"  # OpenChatML 2.2 calls carry call_id (§8.2)
    out = {
        "final": [{"role": "assistant", "channel": "final", "content": b}],
        "analysis+final": [{"role": "assistant", "channel": "analysis", "content": a},
                           {"role": "assistant", "channel": "final", "content": b}],
        "analysis+call": [{"role": "assistant", "channel": "analysis", "content": a}, call],
        "analysis+preamble+call": [{"role": "assistant", "channel": "analysis", "content": a},
                                   {"role": "assistant", "channel": "commentary", "intent": "preamble", "content": b},
                                   call],
    }
    if mode != "harmony":  # the gpt-oss template reads content next to calls as analysis
        out["preamble+call"] = [{"role": "assistant", "channel": "commentary", "intent": "preamble", "content": b}, call]
    if mode not in ("ocml-id", "ocml-text"):  # 2.2: a call without call_id gets the generated one
        out["call"] = [dict(CALL, content=args)]
    return out


# -- round trip (relies on the adapters' OpenAI mapping) --------------------------------------

@pytest.mark.parametrize("mode", ALL_MODES)
def test_round_trip_shapes(mode):
    nat, chat = _encs(mode)
    for name, turn in shapes(mode, "Need the weather.", "It is sunny.", '{"city": "Paris"}').items():
        ids = completion(nat, turn)
        choice = chat.to_openai(ids)
        assert not choice.errors, (name, choice.errors)
        assert rendered_back(chat, choice.message) == ids, name
        assert choice.finish_reason == ("tool_calls" if "call" in name else "stop"), name
        # the stream decoder's final state gives the same choice
        dec = chat.decoder(role="assistant")
        dec.feed(ids)
        dec.finish()
        assert dec.to_openai() == choice


_TEXT = st.text(alphabet=st.sampled_from(list("abc xyz\n.,é日🙂<|>{}\":")), min_size=1, max_size=30).filter(
    lambda s: s.strip() == s and s.strip())


@pytest.mark.parametrize("mode", ALL_MODES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=_TEXT, b=_TEXT, data=st.data())
def test_round_trip_property(mode, a, b, data):
    """Any text (control spellings included: escaped in fallback mode, never controls)."""
    nat, chat = _encs(mode)
    turns = shapes(mode, a, b, '{"q": %s}' % json.dumps(a, ensure_ascii=False))
    name = data.draw(st.sampled_from(sorted(turns)))
    ids = completion(nat, turns[name])
    choice = chat.to_openai(ids)
    assert not choice.errors
    assert rendered_back(chat, choice.message) == ids


def test_harmony_preamble_without_analysis_does_not_round_trip():
    """Documented: the gpt-oss template reads content next to tool calls as analysis."""
    nat, chat = _encs("harmony")
    ids = completion(nat, [{"role": "assistant", "channel": "commentary", "content": "Checking."}, CALL])
    choice = chat.to_openai(ids)
    assert choice.message["content"] == "Checking." and choice.finish_reason == "tool_calls"
    assert rendered_back(chat, choice.message) != ids


# -- the projection ----------------------------------------------------------------------------

def test_message_shape_and_names():
    nat, chat = _encs("harmony")
    turn = [{"role": "assistant", "channel": "analysis", "content": "A"},
            {"role": "assistant", "channel": "analysis", "content": "B"},
            {"role": "assistant", "channel": "commentary", "recipient": "browser.search", "content": '{"q":1}'}]
    choice = chat.to_openai(completion(nat, turn))
    m = choice.message
    assert m["content"] is None and m["reasoning_content"] == "A\nB"
    assert [c["function"]["name"] for c in m["tool_calls"]] == ["browser.search"]  # built-in: full recipient
    assert set(m) == {"role", "content", "reasoning_content", "tool_calls"}
    assert choice.to_dict(3) == {"index": 3, "message": m, "finish_reason": "tool_calls"}
    ids = completion(nat, [{"role": "assistant", "channel": "final", "content": "Hi"}])
    assert chat.to_openai(ids).message == {"role": "assistant", "content": "Hi"}  # no empty keys


def test_openchatml_visibility():
    """2.2: commentary with an intent other than preamble is not content (§5)."""
    nat, chat = _encs("ocml-id")
    turn = [{"role": "assistant", "channel": "commentary", "intent": "status", "content": "working"},
            {"role": "assistant", "channel": "commentary", "intent": "preamble", "content": "Plan."},
            {"role": "assistant", "channel": "final", "content": "Done."}]
    m = chat.to_openai(completion(nat, turn)).message
    assert m == {"role": "assistant", "content": "Plan.\nDone.", "reasoning_content": "working"}


@pytest.mark.parametrize("mode", MODES)
def test_finish_reasons(encs, mode):
    enc = encs[mode]
    fin = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "Hi")
    call = build(enc, "ctl:<|channel|>", "commentary to=functions.f ", "ctl:<|constrain|>", "json",
                 "ctl:<|message|>", '{"a": 1}')
    cases_ = {
        "return": (fin + build(enc, "ctl:<|return|>"), "stop"),
        "call": (call + build(enc, "ctl:<|call|>"), "tool_calls"),
        "call ended by end": (call + build(enc, "ctl:<|end|>"), "length"),
        "no stop token": (fin + build(enc, "ctl:<|end|>"), "length"),
        "truncated": (fin, "length"),
        "return after end (ignore_eos)": (fin + build(enc, "ctl:<|end|>", "ctl:<|return|>"), "stop"),
        "<|call|> closing an answer": (fin + build(enc, "ctl:<|call|>"), "stop"),
        "empty": ([], "length"),
        "refusal": (build(enc, "I must refuse", "ctl:<|return|>"), "stop"),
    }
    for name, (ids, want) in cases_.items():
        got = enc.to_openai(ids)
        assert got.finish_reason == want, name
        dec = enc.decoder(role="assistant")
        dec.feed(ids)
        assert dec.to_openai().finish_reason == (want if dec.done else None), name
        dec.finish()
        assert dec.to_openai() == got, name
    assert enc.to_openai(cases_["refusal"][0]).message == {"role": "assistant", "content": "I must refuse"}
    # a truncated call is still reported (finish_reason says it is incomplete)
    choice = enc.to_openai(call)
    assert choice.finish_reason == "length" and choice.message["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'
    # stream-only endings
    dec = enc.decoder(role="assistant", stop_strings=["Hi"])
    dec.feed(fin)
    assert dec.to_openai().finish_reason == "stop"
    dec = enc.decoder(role="assistant")
    dec.feed(fin)
    dec.cancel()
    assert dec.to_openai().finish_reason == "stop" and dec.to_openai().message["content"] == "Hi"
    eot = enc.tokenizer.control_id("<|endoftext|>")
    dec = enc.decoder(role="assistant", stop_ids=[eot])
    dec.feed(fin + [eot])
    assert dec.to_openai().finish_reason == "stop"


def test_tool_call_ids():
    nat, chat = _encs("harmony")
    turn = [{"role": "assistant", "channel": "analysis", "content": "A"}, CALL]
    ids = completion(nat, turn)
    c1 = chat.to_openai(ids).message["tool_calls"][0]["id"]
    assert re.fullmatch(r"call_[0-9a-f]{24}", c1)
    assert chat.to_openai(ids).message["tool_calls"][0]["id"] == c1  # deterministic
    assert chat.to_openai(ids, call_id_seed="req-1").message["tool_calls"][0]["id"] not in (c1, None)
    other = completion(nat, [{"role": "assistant", "channel": "analysis", "content": "B"}, CALL])
    assert chat.to_openai(other).message["tool_calls"][0]["id"] != c1  # another completion, another id
    # a call's id does not depend on what follows it (streams know it when the call ends)
    msgs = chat.parse(ids, role="assistant")
    later = [*msgs, msgs[-1].with_(content='{"city": "Rome"}')]
    assert tool_call_ids(later)[1] == tool_call_ids(msgs)[1] == c1
    assert tool_call_ids(later)[2] != c1
    # OpenChatML 2.2: the model's call_id is the id
    nat, chat = _encs("ocml-id")
    ids = completion(nat, [dict(CALL, call_id="wx1")])
    assert chat.to_openai(ids).message["tool_calls"][0]["id"] == "wx1"


def test_other_roles_are_reported_not_merged(encs):
    enc = encs["harmony"]
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "Hi", "ctl:<|end|>",
                "ctl:<|start|>", "user", "ctl:<|message|>", "and now?", "ctl:<|end|>")
    choice = enc.to_openai(ids)
    assert choice.message == {"role": "assistant", "content": "Hi"}
    assert [(e.code, e.text) for e in choice.errors] == [("E-UNREPRESENTABLE", "and now?")]
    with pytest.raises(UnrepresentableError):
        enc.to_openai(ids, strict=True)


@pytest.mark.parametrize("mode", MODES)
def test_stream_agrees_with_parse(encs, mode):
    """Generated completions, random chunkings: ``dec.to_openai()`` == ``enc.to_openai(ids)``."""
    enc = encs[mode]
    rng = random.Random(8)
    for ids, _ in cases(enc, 25, 31):
        want = enc.to_openai(ids)
        assert isinstance(want, ChatChoice)
        dec = enc.decoder(role="assistant")
        k = 0
        while k < len(ids) and not dec.done:
            s = rng.randint(1, 9)
            dec.feed(ids[k:k + s])
            k += s
        stop = dec.stopped
        dec.finish()
        got = dec.to_openai()
        if stop is not None:
            want = enc.to_openai(ids[:stop.position + 1])
        assert got == want
