"""Issue 12, ``apertus``: golden fixtures from the spec's examples, whole-run ids, the mask (tool
outputs excluded, straddling rule), the consistency rule, round trips to the block structure,
the stream decoder (response visible, thoughts hidden), typed errors.

Parity with the reference template is in ``test_apertus_parity.py``.
The spec's examples are goldens of the matrix (tests/formats/test_golden.py; python scripts/regen_golden.py).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from support import golden
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import BodyConstraintError, CallSchemaError, InputError, UnrepresentableError
from ocml.encoder.events import Delta, MessageEnd, Stop
from ocml.encoder.formats.apertus.format import to_apertus
from ocml.encoder.formats.apertus.blocks import OUTPUT_SEPARATOR, BracketScan, Turn, split_outputs

from support.chatml import cached_encoder, check_stream, merge
from support.apertus import CONTROLS, blocks, call, conversation


def enc_(tokenizer: str | None = None, **opts) -> encoder.Encoder:
    opts.setdefault("date", "2025-09-21")
    return cached_encoder("apertus", tokenizer, **opts)


# -- the spec's examples (their goldens: tests/fixtures/golden, cases spec-apertus-*) -------------

def test_the_specs_structured_example_reads_as_its_blocks():
    case = golden.case("spec-apertus-ex2-structured-tools")
    enc = enc_(**case["options"])
    got = to_apertus(enc.parse(enc.render(case["conversation"], mode="history").ids, strict=True))
    assert got[-1] == {"role": "assistant", "content": case["conversation"][-1]["content"]}
    assert got[-2] == {"role": "user", "content": "Research machine learning for me"}


# -- generated conversations ------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", [None, "cl100k_base+reg"])
def test_ids_are_the_whole_text_tokenized(tokenizer):
    enc = enc_(tokenizer)
    tok = enc.tokenizer
    rng = random.Random(21)
    for _ in range(120):
        conv = conversation(rng, safe=True)
        text = enc.to_text(conv)
        assert enc.render(conv, mode="history").ids.tolist() == \
            tok.encoding.encode(text, allowed_special=CONTROLS, disallowed_special=())


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
def test_prefix_property_and_mask_per_turn(tokenizer):
    """For each turn: the prompt is a prefix of the training ids up to a straddling token; the
    mask covers the turn through <|assistant_end|> except the tool outputs (``[..]``)."""
    enc = enc_(tokenizer)
    tok = enc.tokenizer
    rng = random.Random(13)
    straddles = turns = 0
    for _ in range(80):
        conv = conversation(rng, safe=True)
        full = enc.render(conv, mode="train")
        frames = list(full.conversation.messages)
        for k, f in enumerate(frames):
            if f.role != "assistant":
                continue
            turns += 1
            prompt = enc.render(frames[:k], mode="prompt").ids
            n = len(prompt)
            assert np.array_equal(full.ids[:n - 1], prompt[:-1])
            start = n if full.ids[n - 1] == prompt[-1] else n - 1
            straddles += start < n
            rows = np.flatnonzero(full.expanded_index == k)
            ids, seg_mask = full.ids[start:rows[-1] + 1], full.mask[start:rows[-1] + 1]
            trained = tok.decode(ids[seg_mask].tolist())
            assert not full.mask[:start].any() or any(x.role == "assistant" for x in frames[:k])
            # each untrained run is one outputs bracket, less what straddling tokens took at its end (and,
            # with controls spelled as text, at its start: "|>[" can be one token)
            edges = np.flatnonzero(np.diff(np.concatenate(([1], seg_mask.astype(np.int8), [1]))))
            runs = [tok.decode(ids[a:b].tolist()) for a, b in zip(edges[::2], edges[1::2])]
            brackets = ["[" + ", ".join(b.outputs) + "]" for b in f.structured.blocks if b.kind == "tool_outputs"]
            assert len(runs) == len(brackets)
            fits = (lambda r, w: r in w) if tokenizer else (lambda r, w: w.startswith(r))
            assert all(fits(run, want) and len(want) - len(run) < 8 for run, want in zip(runs, brackets))
            for b in f.structured.blocks:
                if b.kind in ("thoughts", "response"):
                    assert b.text in trained
            last = k == len(frames) - 1
            waiting = f.structured.blocks and f.structured.blocks[-1].kind == "tool_calls"
            end = "<|tools_suffix|>" if last and waiting else "<|assistant_end|>"
            assert trained.endswith(end) if not tokenizer else end in trained[-len(end) - 3:]
    assert turns > 100 and (straddles == 0 or tokenizer)


def test_tool_outputs_are_never_trained_and_the_end_token_is():
    enc = enc_()
    tok = enc.tokenizer
    case = golden.case("spec-apertus-ex3-tool-messages")
    r = enc.render(case["conversation"])
    assert tok.decode(r.ids[r.mask].tolist()) == (
        '<|inner_prefix|>User said hi, I should search for greeting info.<|tools_prefix|>[{"search": {"query": '
        '"greeting"}}]<|tools_suffix|><|inner_suffix|>Hello! Nice to meet you.<|assistant_end|>')
    assert tok.control_id("<|assistant_start|>") not in r.ids[r.mask].tolist()


def test_prompt_mode_continues_after_tool_outputs_and_training_waits_at_a_call():
    enc = enc_()
    tok = enc.tokenizer
    conv = [{"role": "user", "content": "w?"},
            {"role": "assistant", "content": {"blocks": [{"type": "tool_calls", "calls": [call(random.Random(1), True)]}]}}]
    train = enc.render(conv, mode="train")
    assert train.ids[-1] == tok.control_id("<|tools_suffix|>")
    prompt = enc.render(conv + [{"role": "tool", "content": "{\"t\": 1}"}], mode="prompt")
    assert tok.decode(prompt.ids[-8:].tolist()).endswith('<|tools_suffix|>[{"t": 1}]')
    assert enc.render(conv, mode="history").ids[-1] == tok.control_id("<|assistant_end|>")


# -- round trips --------------------------------------------------------------------------------

CONTROLISH = st.sampled_from(sorted(CONTROLS) + ["<<|user_end|>", "<|", "|>", "<", "[", "]", "\"", ", ", "\n", "é"])
TEXT = st.lists(st.one_of(CONTROLISH, st.text(max_size=4)), max_size=8).map("".join)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3), max_leaves=6)


@st.composite
def turns(draw):
    blocks = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["thoughts", "response", "tool_calls"]))
        if kind == "tool_calls":
            blocks.append({"type": "tool_calls", "calls": [
                {"name": draw(st.sampled_from(["f", "get.x-y_1", "display_answers"])),
                 "arguments": json.dumps(draw(JSON), ensure_ascii=draw(st.booleans()))}
                for _ in range(draw(st.integers(1, 2)))]})
            if draw(st.booleans()):
                blocks.append({"type": "tool_outputs", "outputs": [{"output": json.dumps(draw(JSON))}
                                                                   for _ in range(draw(st.integers(1, 2)))]})
        else:
            blocks.append({"type": kind, "text": draw(TEXT)})
    return blocks


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
@settings(max_examples=120, deadline=None)
@given(system=TEXT, user=TEXT, blocks=turns())
def test_render_parse_and_text_round_trips(tokenizer, system, user, blocks):
    enc = enc_(tokenizer)
    conv = [{"role": "system", "content": system}, {"role": "user", "content": user},
            {"role": "assistant", "content": {"blocks": blocks}}]
    try:
        r = enc.render(conv, mode="history")
    except UnrepresentableError:
        return  # '[' right after a call, or (fallback) text ending in '<' before a control spelled as text
    want = list(r.conversation.messages)
    assert enc.parse(r.ids, strict=True) == want
    try:
        text = enc.to_text(conv)
    except UnrepresentableError:
        return
    assert enc.parse_text(text, strict=True).messages == tuple(want)
    # and the blocks given come back, merged where they render as one
    assert to_apertus(want)[-1]["content"]["blocks"] == [b.to_dict() for b in want[-1].structured.blocks]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet='[]{}"\\, ab', max_size=8),
                          st.recursive(st.text(alphabet='[]"\\, a', max_size=4) | st.integers(),
                                       lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=3), v,
                                                                                           max_size=3),
                                       max_leaves=6).map(json.dumps)), min_size=1, max_size=4))
def test_tool_outputs_split_at_top_level_separators_only(items):
    text = "[" + OUTPUT_SEPARATOR.join(items) + "]"
    got = split_outputs(text)
    assert "[" + OUTPUT_SEPARATOR.join(got) + "]" == text  # no text lost or moved
    if all(_is_json(i) for i in items):  # outputs that are JSON values come back as they were
        assert got == tuple(items)
    scan = BracketScan()
    assert scan.feed(text) == len(text) or not all(_is_json(i) for i in items)


def _is_json(s: str) -> bool:
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
def test_generated_round_trips(tokenizer):
    enc = enc_(tokenizer)
    rng = random.Random(5)
    for _ in range(150):
        conv = conversation(rng, safe=tokenizer is not None)
        r = enc.render(conv, mode="history")
        assert enc.parse(r.ids, strict=True) == list(r.conversation.messages)
        assert enc.parse_text(enc.to_text(conv), strict=True).messages == r.conversation.messages
        again = enc.render(to_apertus(r.conversation.messages), mode="history")
        assert again.ids.tolist() == r.ids.tolist()


# -- stream decoder -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
def test_decoder_chunk_invariance_visibility_and_stops(tokenizer):
    enc = enc_(tokenizer)
    rng = random.Random(9)
    calls = finals = 0
    for _ in range(100):
        conv = conversation(rng, safe=True)
        full = enc.render(conv, mode="train")
        frames = list(full.conversation.messages)
        if frames[-1].role != "assistant":
            continue
        prompt = enc.render(frames[:-1], mode="prompt").ids
        if full.ids[len(prompt) - 1] != prompt[-1]:
            continue
        completion = full.ids[len(prompt):].tolist()
        ev = check_stream(enc, completion, rng, contents=False, role="assistant")
        end = [e for e in ev if type(e) is MessageEnd][0]
        visible = "".join(e.text for e in ev if type(e) is Delta and e.visible)
        hidden = "".join(e.text for e in ev if type(e) is Delta and not e.visible)
        blocks = frames[-1].structured.blocks
        first_call = next((j for j, b in enumerate(blocks) if b.kind == "tool_calls"), None)
        upto = blocks if first_call is None else blocks[:first_call + 1]
        assert visible == "".join(b.text for b in upto if b.kind == "response") == end.message.content
        assert all(b.text in hidden for b in upto if b.kind == "thoughts")
        if first_call is None:
            assert end.reason == "end" and end.message == frames[-1] and ev[-1].reason == "end"
            finals += 1
        else:  # the sampler stops at <|tools_suffix|>: the turn so far, status tool_call
            assert end.reason == "call" and end.message.structured.blocks == upto and ev[-1].reason == "call"
            calls += 1
    assert calls > 3 and finals > 3


def test_decoder_status_and_stop_strings_only_in_the_response():
    enc = enc_()
    tok = enc.tokenizer
    c = {name: tok.control_id(name) for name in CONTROLS}
    ids = [c["<|inner_prefix|>"]] + tok.encode_text("STOP thinking") + [c["<|inner_suffix|>"]] + \
        tok.encode_text("answer STOP here") + [c["<|assistant_end|>"]]
    dec = enc.decoder(role="assistant", stop_strings=["STOP"])
    ev = merge(dec.feed(ids))
    assert [e.text for e in ev if type(e) is Delta] == ["STOP thinking", "answer "]
    assert ev[-1].reason == "stop_string" and dec.status == "final"
    dec = enc.decoder(role="assistant")
    ev = dec.feed(tok.encode_text("x") + [c["<|tools_prefix|>"]] + tok.encode_text('[{"f": {}}]') +
                  [c["<|tools_suffix|>"]] + tok.encode_text("[1]"))
    assert dec.status == "tool_call" and type(ev[-1]) is Stop and ev[-1].trailing == len(tok.encode_text("[1]"))
    assert enc.stop_ids() == [c["<|assistant_end|>"], c["<|tools_suffix|>"], c["</s>"]]


def test_lenient_parse_reports_and_recovers():
    enc = enc_()
    tok = enc.tokenizer
    c = {name: tok.control_id(name) for name in CONTROLS}
    ids = [c["<|assistant_start|>"], c["<|tools_prefix|>"]] + tok.encode_text("not json") + \
        [c["<|tools_suffix|>"]] + tok.encode_text('[He said "hi]ok') + [c["<|assistant_end|>"]]
    res = enc.parse(ids, errors="collect")
    blocks = res.messages[0].structured.blocks
    assert [b.kind for b in blocks] == ["tool_calls", "tool_outputs", "response"]
    assert blocks[1].outputs == ('He said "hi',) and blocks[2].text == "ok"
    assert [e.code for e in res.errors] == ["E-CALL-SCHEMA"]


# -- typed errors ----------------------------------------------------------------------------------------


CALL = {"type": "tool_calls", "calls": [{"name": "f", "arguments": "{}"}]}


@pytest.mark.parametrize("conv, err, code, field, index", [
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": "b"},
      blocks({"type": "response", "text": "y"})], InputError, "E-APERTUS-MIXED-CONTENT", "content", 3),
    ([{"role": "user", "content": {"parts": [{"type": "image", "url": "x"}]}}], InputError, None, "content.parts[0].type", 0),
    ([{"role": "user", "content": "a"}, blocks({"type": "summary", "text": "y"})], InputError, None, "content.blocks[0].type", 1),
    ([{"role": "user", "content": "a"}, blocks({"type": "thoughts"})], InputError, None, "content.blocks[0].text", 1),
    ([{"role": "user", "content": "a"}, {"role": "tool", "content": "1"}], CallSchemaError, "E-CALL-SCHEMA", "role", 1),
    ([{"role": "user", "content": "a"}, blocks({"type": "response", "text": "y"}, {"type": "tool_outputs", "outputs": []})],
     CallSchemaError, "E-CALL-SCHEMA", "content", 1),
    ([{"role": "user", "content": "a"}, blocks({"type": "tool_calls", "calls": [{"name": "f", "arguments": "{oops"}]})],
     BodyConstraintError, "E-BODY-CONSTRAINT-VIOLATION", "content", 1),  # the one argument rule (encoder.arguments)
    ([{"role": "user", "content": "a"}, blocks(CALL, {"type": "response", "text": "[x]"})],
     UnrepresentableError, "E-UNREPRESENTABLE", "content", 1),
    ([{"role": "user", "content": "a"}, {"role": "system", "content": "late"}], InputError, None, "role", 1),
    ([{"role": "system", "content": {"txt": "x"}}], InputError, None, "content", 0),
])
def test_bad_input_gets_a_typed_error(conv, err, code, field, index):
    with pytest.raises(err) as e:
        enc_().render(conv)
    assert e.value.field == field and e.value.index == index and e.value.code.startswith("E-")
    assert code is None or e.value.code == code
    assert e.value.hint or e.value.code == "E-INPUT"


def test_mixed_content_error_names_both_messages():
    with pytest.raises(InputError) as e:
        enc_().render([{"role": "user", "content": "a"}, blocks({"type": "response", "text": "y"}),
                       {"role": "user", "content": "b"}, {"role": "assistant", "content": "z"}])
    assert "assistant message 3" in e.value.message and "assistant message 1" in e.value.message


def test_options_and_enable_thinking():
    enc = enc_()
    conv = {"enable_thinking": True, "messages": [{"role": "user", "content": "hi"}]}
    assert "Deliberation: enabled" in enc.to_text(conv)
    assert "Deliberation: disabled" in enc.to_text(conv["messages"])
    assert "Deliberation: enabled" in enc_(enable_thinking=True).to_text(conv["messages"])
    with pytest.raises(InputError) as e:
        enc.render({"enable_thinking": "yes", "messages": [{"role": "user", "content": "hi"}]})
    assert e.value.field == "enable_thinking"
    r = enc.render([{"role": "user", "content": "hi"}])
    assert r.conversation.messages[0].content.endswith("Current date: 2025-09-21")
    assert r.message_index.tolist()[0] == -2 and set(r.message_index.tolist()) == {-2, 0}
    assert isinstance(enc.parse(enc.render([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                                           mode="history").ids)[-1].structured, Turn)


def test_openai_calls_next_to_blocks_are_one_call_group_as_in_the_reference_template():
    enc = encoder.Encoder("apertus")
    r = enc.render([{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
                    {"role": "assistant", "content": {"blocks": [{"type": "thoughts", "text": "t"}]},
                     "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": "{}"}},
                                    {"type": "function", "function": {"name": "b", "arguments": "{}"}}]}])
    text = enc.tokenizer.decode(r.ids.tolist())
    assert text.endswith('<|tools_prefix|>[{"a": {}}, {"b": {}}]<|tools_suffix|>')
    assert text.count("<|tools_prefix|>") == 1
