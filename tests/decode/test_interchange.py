"""OpenChatML 2.2 §10: the JSON interchange projection of parsed assistant messages.

Spec examples (§10 itself, §16.1-16.3 fixtures), completions parsed from ids (with their
end reasons: a truncated call is not a ``tool_call``), what §10 cannot carry, and the
round trip with ``ocml.encoder.adapters`` (which reads §10 objects): project -> read -> the
same messages, on generated conversations and on hypothesis-drawn assistant turns.
"""

from __future__ import annotations

import json
import random

import pytest

from support import golden
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import OcmlError, UnrepresentableError
from ocml.encoder.interchange import INTERCHANGE_KEYS, interchange_object, parse_interchange, to_interchange
from ocml.encoder.messages import Message
from ocml.encoder.parse import parse_ids

from support.gen import harmony_conversation


SPEC_OBJECT = {  # §10, verbatim
    "role": "assistant",
    "channel": "final",
    "content": "Visible reply",
    "tool_call": {
        "id": "abc123",
        "recipient": "functions.lookup_weather",
        "content_type": "json",
        "arguments": "{\"location\":\"SF\"}",
    },
    "thinking": "Private reasoning (analysis)",
    "intent": "preamble",
}

_encs: dict[str, encoder.Encoder] = {}


def enc_(name: str, tok: str | None = None) -> encoder.Encoder:
    key = f"{name}/{tok}"
    if key not in _encs:
        # The tests write canonical messages (the formats' own terms); their prefixes
        # (``[user]``) carry no sign of it, so say so rather than let them read as chat data.
        _encs[key] = encoder.Encoder(name, tokenizer=tok, shape="native")
    return _encs[key]


def read_back(objs) -> list[Message]:
    return list(encoder.to_conversation(objs, shape="native").messages)


def same_read(objs, msgs) -> bool:
    """Reading the projection gives exactly ``msgs`` back (a §10 ``tool_call`` without
    ``content_type`` reads as no ``<|constrain|>``: nothing invented)."""
    return read_back(objs) == list(msgs)


# -- spec examples --------------------------------------------------------------------

def test_spec_object_round_trips():
    msgs = read_back([SPEC_OBJECT])
    assert [(m.channel, m.recipient, m.call_id, m.constrain) for m in msgs] == [
        ("analysis", None, None, None), ("final", None, None, None),
        ("commentary", "functions.lookup_weather", "abc123", "json")]
    assert to_interchange(msgs) == [SPEC_OBJECT]
    assert interchange_object(msgs) == SPEC_OBJECT
    assert list(SPEC_OBJECT) == list(to_interchange(msgs)[0])  # the spec's key order


def test_spec_object_from_ids():
    """The same object from rendered ids, parsed as a completion (ends known: the call ended in <|call|>)."""
    enc = enc_("openchatml-2.2")
    msgs = read_back([{"role": "user", "content": "weather?"}, SPEC_OBJECT])
    r = enc.render(msgs, mode="history", cot="keep-all")
    res = parse_ids(enc, r.ids, detailed=True)
    assert res.ends[-1] == "call"
    assert to_interchange(res.messages[1:], ends=res.ends[1:]) == [SPEC_OBJECT]


def test_16_1_minimal_chat():
    conv = enc_("openchatml-2.2").parse_text(golden.case("spec-ocml22-16.1-minimal")["transcript"])
    assert to_interchange(conv.messages[1:]) == [
        {"role": "assistant", "channel": "final", "content": "4.", "thinking": "Simple arithmetic; answer directly."}]
    assert to_interchange(conv) == [{"role": "user", "content": "What is 2 + 2?"}, *to_interchange(conv.messages[1:])]


def test_16_2_function_call():
    enc = enc_("openchatml-2.2")
    conv = enc.parse_text(golden.case("spec-ocml22-16.2-function-call")["transcript"])
    turn = list(conv.messages[3:])
    objs = to_interchange(turn)
    assert objs[0] == {
        "role": "assistant", "channel": "commentary",
        "tool_call": {"id": "wx1", "recipient": "functions.get_current_weather", "content_type": "json",
                      "arguments": "{\"location\":\"Tokyo\",\"format\":\"celsius\"}"},
        "thinking": "Call functions.get_current_weather with location Tokyo."}
    assert objs[1] == turn[2].to_dict()  # the tool reply: not an assistant message, its canonical dict
    assert objs[2] == {"role": "assistant", "channel": "final",
                       "content": "It’s 20 °C and sunny in Tokyo right now."}
    assert read_back(objs) == turn
    # from ids, as the completion the model generated after the tool reply / before it
    r = enc.render(conv, mode="history", cot="keep-all")
    res = parse_ids(enc, r.ids, detailed=True)
    assert to_interchange(res.messages[3:], ends=res.ends[3:]) == objs


def test_16_3_preamble():
    conv = enc_("openchatml-2.2").parse_text(golden.case("spec-ocml22-16.3-preamble")["transcript"])
    obj = interchange_object(conv.messages)
    assert obj == {"role": "assistant", "channel": "commentary",
                   "content": "**Plan:** 1) Search docs 2) Extract figures 3) Summarize.", "intent": "preamble"}
    assert read_back([obj]) == list(conv.messages)


# -- completions ------------------------------------------------------------------------

def completion(enc, msgs):
    """(ids after the generation prompt, prefix length) for assistant ``msgs`` after one user message."""
    conv = [{"role": "user", "content": "q"}, *msgs]
    ids = enc.render(conv, mode="train", cot="keep-all").ids.tolist()
    prompt = enc.render(conv[:1], mode="prompt").ids.tolist()
    assert ids[:len(prompt)] == prompt
    return ids[len(prompt):]


@pytest.mark.parametrize("fmt,tok", [("harmony", None), ("openchatml-2.2", None), ("openchatml-2.2", "o200k_base")])
def test_completion_with_analysis_and_final(fmt, tok):
    enc = enc_(fmt, tok)
    ids = completion(enc, [{"role": "assistant", "channel": "analysis", "content": "think <|end|> hard"},
                           {"role": "assistant", "channel": "final", "content": "answer"}])
    res = parse_ids(enc, ids, role="assistant", detailed=True)
    assert res.ends == ["end", "return"]
    assert interchange_object(res.messages, ends=res.ends) == {
        "role": "assistant", "channel": "final", "content": "answer", "thinking": "think <|end|> hard"}


def test_parse_interchange_uses_the_end_reasons():
    enc = enc_("harmony")
    ids = completion(enc, [{"role": "assistant", "channel": "analysis", "content": "hm"},
                           {"role": "assistant", "channel": "commentary", "recipient": "functions.f",
                            "constrain": "json", "content": "{}"}])
    want = [{"role": "assistant", "channel": "commentary", "thinking": "hm",
             "tool_call": {"recipient": "functions.f", "content_type": "json", "arguments": "{}"}}]
    assert parse_interchange(enc, ids) == want == parse_interchange(enc, ids, strict=True)
    cut = parse_interchange(enc, ids[:-1])  # no <|call|>: not a tool call
    assert "tool_call" not in cut[-1] and cut[-1]["recipient"] == "functions.f"
    with pytest.raises(OcmlError):
        parse_interchange(enc, ids[:-1], strict=True)


def test_harmony_call_without_constrain_has_no_content_type():
    """No <|constrain|>: no content_type (not an assumed "json"); no call_id: no id (none invented)."""
    enc = enc_("harmony")
    ids = completion(enc, [{"role": "assistant", "channel": "analysis", "content": "call it"},
                           {"role": "assistant", "channel": "commentary", "recipient": "functions.f",
                            "content": "{\"a\": 1}"}])
    res = parse_ids(enc, ids, role="assistant", detailed=True)
    assert res.ends == ["end", "call"]
    assert interchange_object(res.messages, ends=res.ends) == {
        "role": "assistant", "channel": "commentary",
        "tool_call": {"recipient": "functions.f", "arguments": "{\"a\": 1}"}, "thinking": "call it"}


def test_truncated_call_is_not_a_tool_call():
    """§10: tool_call is absent unless <|call|> was emitted; a cut-off call stays its canonical dict."""
    enc = enc_("openchatml-2.2")
    ids = completion(enc, [{"role": "assistant", "channel": "commentary", "recipient": "functions.f",
                            "call_id": "c1", "constrain": "json", "content": "{\"a\": 1}"}])
    res = parse_ids(enc, ids[:-1], role="assistant", detailed=True)
    assert res.ends == ["truncated"]
    objs = to_interchange(res.messages, ends=res.ends)
    assert objs == [res.messages[0].to_dict()] and "tool_call" not in objs[0]
    with pytest.raises(UnrepresentableError):
        to_interchange(res.messages, ends=res.ends, strict=True)
    # without end reasons the message is taken for the call it says it is
    assert "tool_call" in to_interchange(res.messages)[0]
    with pytest.raises(ValueError):
        to_interchange(res.messages, ends=[])


def test_several_calls_and_analyses_become_several_objects():
    msgs = [Message("assistant", "a1", "analysis"), Message("assistant", "a2", "analysis"),
            Message("assistant", "{}", "commentary", "functions.f", "c1", constrain="json"),
            Message("assistant", "{}", "commentary", "functions.g", "c2", constrain="json"),
            Message("assistant", "done", "final")]
    objs = to_interchange(msgs)
    assert objs == [
        {"role": "assistant", "content": "a1", "channel": "analysis"},
        {"role": "assistant", "channel": "commentary", "thinking": "a2",
         "tool_call": {"id": "c1", "recipient": "functions.f", "content_type": "json", "arguments": "{}"}},
        {"role": "assistant", "channel": "commentary",
         "tool_call": {"id": "c2", "recipient": "functions.g", "content_type": "json", "arguments": "{}"}},
        {"role": "assistant", "channel": "final", "content": "done"}]
    assert read_back(objs) == msgs
    with pytest.raises(UnrepresentableError):
        interchange_object(msgs)


def test_commentary_without_intent_before_a_call_stays_apart():
    """Grouped, the adapters would read the commentary as a preamble (intent invented): keep two objects."""
    msgs = [Message("assistant", "let me look", "commentary"),
            Message("assistant", "{}", "commentary", "functions.f", constrain="json")]
    objs = to_interchange(msgs)
    assert len(objs) == 2 and "intent" not in objs[0]
    assert read_back(objs) == msgs
    pre = [msgs[0].with_(intent="preamble"), msgs[1]]
    assert len(to_interchange(pre)) == 1 and read_back(to_interchange(pre)) == pre


def test_what_section_10_cannot_carry():
    builtin = Message("assistant", "print(1)", "analysis", "python", content_type="code")
    named = Message("assistant", "hi", "final", name="bob")
    constrained = Message("assistant", "{\"x\": 1}", "final", constrain="json")
    for m in (builtin, named, constrained):
        assert to_interchange([m]) == [m.to_dict()]
        assert read_back(to_interchange([m])) == [m]
        with pytest.raises(UnrepresentableError) as e:
            to_interchange([m], strict=True)
        assert e.value.index == 0 and e.value.code == "E-UNREPRESENTABLE"


def test_accepts_dicts_and_conversations():
    raw = [{"role": "assistant", "channel": "analysis", "content": "t"}, {"role": "assistant", "content": "x",
                                                                          "channel": "final"}]
    want = [{"role": "assistant", "channel": "final", "content": "x", "thinking": "t"}]
    assert to_interchange(raw) == want == to_interchange(encoder.to_conversation(raw))
    assert to_interchange(json.dumps(raw)) == want
    assert to_interchange([]) == []


def test_analysis_never_lands_in_content_outside_the_analysis_channel():
    """§11: private reasoning goes to ``thinking`` (or an object whose channel says analysis), never ``content``."""
    rng = random.Random(11)
    for _ in range(500):
        msgs = [draw_message(rng) for _ in range(rng.randint(0, 6))]
        msgs = [m.with_(content=f"SECRET{k}") if m.channel == "analysis" else m for k, m in enumerate(msgs)]
        for obj in to_interchange(msgs):
            if "SECRET" in obj.get("content", ""):
                assert obj["channel"] == "analysis"
            if "thinking" in obj:
                assert obj["thinking"].startswith("SECRET")


# -- round trip with the adapters ----------------------------------------------------

def draw_message(rng: random.Random) -> Message:
    kind = rng.choice(["analysis", "final", "commentary", "call", "call", "builtin", "none", "tool"])
    text = rng.choice(["", "x", "some text", "{\"a\": 1}", "<|end|>"])
    train = rng.choice([None, None, None, True, False])
    if kind == "analysis":
        return Message("assistant", text, "analysis", train=train)
    if kind in ("final", "commentary", "none"):
        return Message("assistant", text, None if kind == "none" else kind,
                       intent=rng.choice([None, None, "preamble", "status"]), train=train)
    if kind == "call":
        return Message("assistant", text, "commentary", rng.choice(["functions.f", "browser.search"]),
                       rng.choice([None, "c1", "c2"]), constrain=rng.choice([None, "json", "json"]), train=train)
    if kind == "builtin":
        return Message("assistant", text, "analysis", "python", content_type=rng.choice([None, "code"]), train=train)
    return Message("tool", text, "commentary", "assistant", "c1", "functions.f", train=train)


@given(st.randoms(use_true_random=False), st.integers(0, 8))
@settings(max_examples=300, deadline=None)
def test_property_project_then_read_gives_the_messages(rnd, n):
    msgs = [draw_message(rnd) for _ in range(n)]
    ends = [rnd.choice(["end", "call", "return", "truncated"]) if m.recipient else rnd.choice(["end", "return"])
            for m in msgs]
    for e in (None, ends):
        objs = to_interchange(msgs, ends=e)
        assert same_read(objs, msgs)
        for obj in objs:
            if "tool_call" in obj or "thinking" in obj:
                assert set(obj) <= INTERCHANGE_KEYS | {"train"}
        # tool_call objects are exactly the calls that ended in <|call|>
        calls = [m for m, end in zip(msgs, e or [None] * n) if m.role == "assistant" and m.channel == "commentary"
                 and m.recipient and end in (None, "call")]
        assert sum("tool_call" in o for o in objs) == len(calls)
        json.dumps(objs)  # plain JSON


def assistant_turns(conv):
    """Maximal runs of assistant messages."""
    run: list[Message] = []
    for m in conv:
        if m.role == "assistant":
            run.append(m)
        elif run:
            yield run
            run = []
    if run:
        yield run


@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2"])
def test_generated_conversations_round_trip(fmt):
    enc = enc_(fmt)
    rng = random.Random(5)
    done = 0
    while done < 40:
        try:
            r = enc.render(harmony_conversation(rng), mode="history", cot="keep-all")
        except OcmlError:
            continue
        done += 1
        res = parse_ids(enc, r.ids, detailed=True)
        objs = to_interchange(res.messages, ends=res.ends)
        assert same_read(objs, res.messages)
        for turn in assistant_turns(res.messages):
            assert same_read(to_interchange(turn), turn)


def test_thinking_alone_reads_as_one_analysis_message():
    msgs = read_back([{"role": "assistant", "thinking": "hmm"}])
    assert [(m.channel, m.content) for m in msgs] == [("analysis", "hmm")]
    call = read_back([{"role": "assistant", "tool_call": {"recipient": "functions.f", "arguments": "{}"}}])
    assert [(m.recipient, m.constrain) for m in call] == [("functions.f", None)]
