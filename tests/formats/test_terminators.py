"""The stop and terminator tables (``ocml.encoder.grammar.terminators``) are the token data's.

Part 1 reads ``encoder/formats/<pkg>/<format>.tokens.json`` itself and checks every derived table, for
every format and variant (stop mode, stream role, format options, fallback tokenizer).
Part 2 checks that render, parse, the stream decoder and ``to_openai`` agree with the table
for a conversation or completion ending in each stop / end control.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ocml import encoder, vocab
from ocml.encoder.errors import UnknownNameError
from ocml.encoder.events import Stop
from ocml.encoder.formats import RENDERABLE
from ocml.encoder.grammar.terminators import start_frame_terminators, terminators_of
from ocml.encoder.stops import stop_ids, stop_strings, stop_tokens
from ocml.encoder.openai_message import parts_of

#: constructor options of each format's variants (the tables must not depend on them)
VARIANTS: dict[str, list[dict]] = {
    "harmony": [{}, {"recipient_after_channel": True}],
    "openchatml-2.2": [{}, {"require_call_ids": True}],
    "openchatml-2.0": [{}],
    "chatml": [{}, {"layout": "v0.1-literal"}, {"bos_eos": True}, {"reasoning": "think"}],
    "apertus": [{}, {"enable_thinking": True}],
    "llama3": [{}, {"builtin_tools": ["get_weather"]}, {"system_header": False}],
}
#: the options a format writes its call control with (Llama 3: <|eom_id|> ends a built-in tool's call)
CALL_OPTIONS: dict[str, dict] = {"llama3": {"builtin_tools": ["get_weather"]}}


def data(name: str) -> dict:
    """The data file (in its format folder), read here without the library's reader."""
    folders = resources.files("ocml.encoder.formats").iterdir()
    [path] = [f.joinpath(f"{name}.tokens.json") for f in folders if f.joinpath(f"{name}.tokens.json").is_file()]
    return json.loads(path.read_text("utf-8"))


def stream_roles(raw: dict) -> list[str | None]:
    return [None, "assistant", "user", *raw.get("stream_stops", {})]


def expected_stream(raw: dict, role: str | None) -> dict[str, str]:
    names = raw.get("stream_stops", {}).get(role) if role is not None else None
    if names is None:
        names = raw["stops"]["assistant"]
    return {c: raw["end_reasons"][c] for c in names}


def the_control(raw: dict, reason: str) -> str | None:
    got = [c for c, r in raw["end_reasons"].items() if r == reason]
    return got[0] if len(got) == 1 else None


def test_every_format_in_the_registry_has_a_data_file_with_the_tables():
    assert RENDERABLE and set(RENDERABLE) <= set(vocab.FORMAT_NAMES)
    for name in vocab.FORMAT_NAMES:
        raw = data(name)
        assert raw["format"] == name
        assert raw["stops"]["assistant"] and raw["end_reasons"], name
        named = set(raw["end_reasons"]) | {c for cs in raw["stops"].values() for c in cs} \
            | {c for cs in raw.get("stream_stops", {}).values() for c in cs}
        assert named <= set(raw["controls"]), name  # every stop / end is a control
        # every control a sampler or stream stops on has a reason (Stop.reason is never None)
        assert {c for cs in raw["stops"].values() for c in cs} <= set(raw["end_reasons"]), name


@pytest.mark.parametrize("name", vocab.FORMAT_NAMES)
def test_derived_tables_are_the_data(name):
    raw = data(name)
    t = terminators_of(name)
    assert dict(t.reasons) == raw["end_reasons"]
    assert list(t.reasons) == list(raw["end_reasons"])  # order too: the first stop is the turn's end
    for mode, names in raw["stops"].items():
        assert t.sampler_stops(mode) == tuple(names)
        assert stop_tokens(name, mode) == tuple(names)
        tok = encoder.codec.default_tokenizer(name)
        assert stop_ids(name, mode) == [tok.control_id(c) for c in names]
        base = vocab.load("cl100k_base")  # fallback: the controls are text, so stops are strings
        assert stop_strings(name, mode, tokenizer=base) == [c for c in names if base.control_id(c) is None]
    with pytest.raises(UnknownNameError) as info:
        t.sampler_stops("nonsense")
    assert info.value.field == "mode" and info.value.hint == "one of: " + ", ".join(raw["stops"])
    for role in stream_roles(raw):
        want = expected_stream(raw, role)
        assert dict(t.stream_stops(role)) == want
        assert list(t.stream_stops(role)) == list(want)
    for reason in set(raw["end_reasons"].values()):
        assert t.control_for(reason) == the_control(raw, reason)
    # read-only: a caller cannot change what every decoder stops on
    with pytest.raises(TypeError):
        t.stream_stops("assistant")["<x>"] = "x"  # type: ignore[index]


def test_the_start_formats_share_one_terminator_table():
    starts = [n for n in vocab.FORMAT_NAMES if "<|start|>" in data(n)["controls"]]
    assert set(starts) == {"harmony", "openchatml-2.2", "openchatml-2.0"}
    for n in starts:
        assert dict(start_frame_terminators()) == data(n)["end_reasons"]
    from ocml.encoder.read.frames import FrameMachine

    assert dict(FrameMachine().terminators) == data("openchatml-2.2")["end_reasons"]


@pytest.mark.parametrize("name", RENDERABLE)
def test_every_format_object_and_machine_reads_the_table(name):
    raw = data(name)
    for opts in VARIANTS[name]:
        for tokenizer in (None, "o200k_base"):
            enc = encoder.Encoder(name, tokenizer, **opts)
            fmt = enc.format
            assert fmt.return_token == the_control(raw, "return")
            for role in stream_roles(raw):
                if role is not None and role not in fmt.roles and role not in raw.get("stream_stops", {}):
                    continue
                assert dict(fmt.stop_reasons(role)) == expected_stream(raw, role)
                dec = enc.decoder(role=role)
                assert dict(dec.stop_controls) == expected_stream(raw, role)
                fm = fmt.frame_machine(strict=False, role=role)
                # the ChatML machine ends frames where its stream stops; the others at every end control
                want = expected_stream(raw, role) if name == "chatml" else raw["end_reasons"]
                assert dict(fm.terminators) == want


# -- part 2: render / parse / stream agree with the table ---------------------------------------------

def ids_of(enc: encoder.Encoder, pieces: list[str]) -> list[int]:
    """Pieces -> ids: a piece that is a control of the format is its id, anything else text."""
    out: list[int] = []
    for p in pieces:
        cid = enc.tokenizer.control_id(p) if p in enc.format.table.controls else None
        out += [cid] if cid is not None else enc.tokenizer.encode_text(p)
    return out


#: a completion body (after the role prefill) that ends properly at each stop control
def completion(name: str, control: str) -> list[str]:
    if name in ("harmony", "openchatml-2.2", "openchatml-2.0"):
        if control == "<|call|>":
            return [" to=functions.get_weather", "<|channel|>", "commentary", "<|message|>", '{"city": "Bern"}', control]
        return ["<|channel|>", "final", "<|message|>", "It is sunny.", control]
    if name == "apertus" and control == "<|tools_suffix|>":
        return ["<|tools_prefix|>", '[{"get_weather": {"city": "Bern"}}]', control]
    if name == "llama3" and control == "<|eom_id|>":
        return ["<|python_tag|>", 'get_weather.call(city="Bern")', control]
    return ["It is sunny.", control]


CASES = [(name, role, c) for name in RENDERABLE
         for role in ["assistant", *data(name).get("stream_stops", {})]
         for c in expected_stream(data(name), role)]


@pytest.mark.parametrize("name,role,control", CASES)
def test_a_completion_ending_in_each_stop_agrees_with_the_table(name, role, control):
    enc = encoder.Encoder(name)
    reason = expected_stream(data(name), role)[control]
    ids = ids_of(enc, completion(name, control))
    # the stream decoder stops there, with the table's reason
    events = encoder.Encoder(name).decoder(role=role).feed(ids)
    stops = [e for e in events if type(e) is Stop]
    assert [(s.reason, s.token, s.trailing) for s in stops] == [(reason, control, 0)]
    # parse ends the message there with the same reason, and nothing is left out
    res = enc.parse(ids, role=role, errors="collect")
    assert res.ends and res.ends[-1] == reason and res.last_control == control
    assert res.errors == []
    # to_openai: a stop (a tool call for "call" when the message is one), never a truncation
    if role == "assistant":
        choice = enc.to_openai(ids, role=role)
        # the last message is the call (Apertus: the last part of the turn, its calls' block)
        # (a format that reads its turns from the text - ChatML, Llama 3 - through its turn_of)
        read = enc.format.turn_of(res.messages[-1], res.ends[-1], role)
        last = (parts_of(read) or (read,))[-1]
        call = reason == "call" and last.is_tool_call
        assert choice.finish_reason == ("tool_calls" if call else "stop")
        assert call or reason != "call"
        if call:
            assert choice.message["tool_calls"][-1]["function"]["name"] == "get_weather"
    # a stop fed id by id stops at the same place
    dec = enc.decoder(role=role)
    one = [e for i in ids for e in dec.feed([i]) if type(e) is Stop]
    assert [(s.reason, s.token) for s in one] == [(reason, control)]


CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Bern"}'}}
CONVERSATIONS = {
    "answer": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "It is sunny."}],
    "call": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [CALL]}],
}


@pytest.mark.parametrize("name", RENDERABLE)
@pytest.mark.parametrize("mode", ["train", "history"])
@pytest.mark.parametrize("case", sorted(CONVERSATIONS))
def test_a_render_ends_each_message_with_a_table_control_and_parse_reads_its_reason(name, mode, case):
    raw = data(name)
    enc = encoder.Encoder(name, **(CALL_OPTIONS.get(name, {}) if case == "call" else {}))
    r = enc.render({"messages": CONVERSATIONS[case]}, mode)
    names = {i: c for c, i in ((c, enc.tokenizer.control_id(c)) for c in raw["end_reasons"]) if i is not None}
    ends = [names[i] for i in r.ids.tolist() if i in names]
    assert ends, "a render ends its messages with the data's end controls"
    res = enc.parse(r.ids, errors="collect")
    assert res.errors == []
    assert res.ends[-1] == raw["end_reasons"][ends[-1]]
    if name != "apertus":  # an Apertus turn holds its call's <|tools_suffix|> inside it
        assert res.ends == [raw["end_reasons"][c] for c in ends]
    # the renderer writes the table's control for each reason
    if mode == "train" and case == "answer" and the_control(raw, "return"):
        assert ends[-1] == the_control(raw, "return")
    if case == "call" and the_control(raw, "call") and (mode == "history" or name != "apertus"):
        assert the_control(raw, "call") in ends


@pytest.mark.parametrize("fmt", list(RENDERABLE))
def test_formats_and_codecs_pickle_with_their_tables(fmt):
    """A format (and a ``Codec``, which pickles its format) crosses a process boundary: its
    tables come back as the shared instance of the same data."""
    import pickle

    from ocml.encoder.codec import Codec

    enc = encoder.Encoder(fmt)
    f = pickle.loads(pickle.dumps(enc.format))
    assert f.terminators is enc.format.terminators and f.stop_reasons("assistant") == enc.format.stop_reasons("assistant")
    c = pickle.loads(pickle.dumps(Codec(enc.format_name, enc.tokenizer, enc.format)))
    assert c.format.terminators is terminators_of(fmt)


def test_a_format_without_single_call_and_end_controls_must_override_end_token():
    """The generic end rule writes one ``call`` and one ``end`` control: a format whose data has
    several (ChatML: ``<|im_end|>`` and ``</s>`` both end) overrides ``end_token``, or it fails at
    construction instead of writing ``None`` into a render."""
    from ocml.encoder.formats.base import Format

    class Inherits(Format):
        name = "chatml"

    with pytest.raises(ValueError, match="must override end_token"):
        Inherits(vocab.load("cl100k_base"))
