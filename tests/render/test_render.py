"""Issue 3: rendering, masks, CoT policies, round trips, typed errors."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import (
    BodyConstraintError,
    CallSchemaError,
    HeaderError,
    InputError,
    OcmlError,
    UnrepresentableError,
)
from support.gen import harmony_conversation
from support.render import ENCODERS, enc_, plain


def fields(m: encoder.Message) -> tuple:
    return (m.role, m.content, m.channel, m.recipient, m.call_id, m.name, m.intent, m.content_type, m.constrain)


# -- the mask invariant ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["harmony", "ocm22", "ocm22-fallback", "ocm20"])
def test_prompt_is_prefix_and_mask_is_exactly_the_generated_spans(name):
    enc = enc_(name, "native")
    rng = random.Random(7)
    checked = 0
    for _ in range(150):
        msgs = plain(harmony_conversation(rng))
        if name.startswith("ocm20"):
            msgs = [dict(m, content_type=None) if m.get("content_type") else m for m in msgs]
            msgs = [{k: v for k, v in m.items() if v is not None} for m in msgs]
        try:
            full = enc.render(msgs, mode="train", cot="keep-all")
        except UnrepresentableError:
            continue
        expected_mask = np.zeros(len(full), dtype=bool)
        starts = [i for i, m in enumerate(msgs) if m["role"] == "assistant" and (i == 0 or msgs[i - 1]["role"] != "assistant")]
        for t in starts:
            prompt = enc.render(msgs[:t], mode="prompt", cot="keep-all").ids
            assert np.array_equal(full.ids[: len(prompt)], prompt), "prompt render is not a prefix of the training ids"
            e = t
            while e < len(msgs) and msgs[e]["role"] == "assistant":
                e += 1
            end = int(np.flatnonzero(full.message_index == e - 1)[-1]) + 1
            expected_mask[len(prompt):end] = True
            checked += 1
        assert np.array_equal(full.mask, expected_mask)
    assert checked > 100


def test_default_cot_keeps_the_current_turn_and_unresolved_calls():
    enc = enc_("harmony")
    msgs = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "channel": "analysis", "content": "old thinking"},
        {"role": "assistant", "channel": "final", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "channel": "analysis", "content": "call reasoning"},
        {"role": "assistant", "channel": "commentary", "recipient": "functions.f", "constrain": "json", "content": "{}"},
        {"role": "tool", "name": "functions.f", "channel": "commentary", "content": "{\"r\":1}"},
        {"role": "assistant", "channel": "analysis", "content": "now answer"},
        {"role": "assistant", "channel": "final", "content": "a2"},
    ]
    r = enc.render(msgs)
    assert r.dropped == (1,)
    text = enc.tokenizer.decode(r.ids.tolist())
    assert "old thinking" not in text and "call reasoning" in text and "now answer" in text
    assert enc.render(msgs + [{"role": "user", "content": "q3"}], mode="prompt").dropped == (1, 4, 7)
    assert enc.render(msgs, cot="drop-all").dropped == (1, 4, 7)
    assert enc.render(msgs, cot="keep-all").dropped == ()
    assert enc.render(msgs, cot="harmony").dropped == (1,)


def test_mask_policies():
    enc = enc_("ocm22")
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "channel": "analysis", "content": "think"},
        {"role": "assistant", "channel": "commentary", "recipient": "functions.f", "call_id": "c1", "constrain": "json", "content": "{\"x\": 1}"},
        {"role": "tool", "name": "functions.f", "call_id": "c1", "channel": "commentary", "content": "ok"},
        {"role": "assistant", "channel": "final", "content": "done"},
    ]

    def trained(mask):
        r = enc.render(msgs, mask=mask, cot="keep-all")
        return enc.tokenizer.decode(r.ids[r.mask].tolist())

    assert trained("final") == "<|channel|>final<|message|>done<|return|>"
    assert "think" not in trained("no-analysis") and "{\"x\": 1}" in trained("no-analysis")
    assert "{\"x\": 1}" not in trained("no-tool-bodies") and "<|call|>" in trained("no-tool-bodies")
    assert trained("last") == "<|channel|>final<|message|>done<|return|>"
    assert trained("none") == ""
    assert "ok" not in trained("default")
    assert trained({"roles": ["user"]}).startswith("<|message|>q")
    per_msg = [dict(m) for m in msgs]
    per_msg[1]["train"] = False
    r = enc.render(per_msg, cot="keep-all")
    assert "think" not in enc.tokenizer.decode(r.ids[r.mask].tolist())


def test_train_history_prompt_terminators():
    enc = enc_("harmony")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "channel": "final", "content": "yo"}]
    tok = enc.tokenizer
    assert enc.render(msgs, mode="train").ids[-1] == tok.control_id("<|return|>")
    assert enc.render(msgs, mode="history").ids[-1] == tok.control_id("<|end|>")
    assert enc.render(msgs, mode="prompt").ids[-2:].tolist() == [200006, 173781]
    assert enc.render(msgs, mode="prompt").message_index[-1] == -1


# -- round trips ------------------------------------------------------------------------

CONTROLISH = st.sampled_from(["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>",
                              "<|constrain|>", "<|literal|>", "<|endliteral|>", "<<|start|>", "<<<|end|>", "<|",
                              "|>", "<", "<<", "<|start_reason|>", "🙂", "é", "\n", " "])
CONTENT = st.lists(st.one_of(CONTROLISH, st.text(max_size=5)), max_size=10).map("".join)
ROLES = st.sampled_from(["user", "assistant", "system", "developer"])


@st.composite
def conversations(draw):
    msgs = []
    for _ in range(draw(st.integers(1, 5))):
        role = draw(ROLES)
        m = {"role": role, "content": draw(CONTENT)}
        if role == "assistant":
            m["channel"] = draw(st.sampled_from(["analysis", "commentary", "final"]))
        msgs.append(m)
    return msgs


@pytest.mark.parametrize("name", list(ENCODERS))
@settings(max_examples=120, deadline=None)
@given(conv=conversations())
def test_render_then_parse_gives_back_the_messages(name, conv):
    enc = enc_(name, "native")  # canonical dicts: the formats' own terms
    try:
        r = enc.render(conv, mode="history", cot="keep-all")
    except UnrepresentableError:
        assert enc.fallback_controls and any(m["content"].endswith("<") for m in conv)
        return
    got = enc.parse(r.ids, strict=True)
    assert [fields(m) for m in got] == [fields(m) for m in r.conversation.messages]


@pytest.mark.parametrize("name", ["harmony", "ocm22", "ocm20"])
@settings(max_examples=120, deadline=None)
@given(conv=conversations())
def test_to_text_then_parse_text(name, conv):
    enc = enc_(name, "native")  # canonical dicts: the formats' own terms
    try:
        text = enc.to_text(conv)
    except UnrepresentableError:
        return
    back = enc.parse_text(text, strict=True)
    want = enc.prepare(conv, "keep-all")[0].messages
    assert [fields(m) for m in back.messages] == [fields(m) for m in want]


@settings(max_examples=150, deadline=None)
@given(conv=conversations())
def test_no_content_becomes_a_control_or_a_message(conv):
    for name in ("ocm22", "ocm22-fallback", "harmony"):
        enc = enc_(name, "native")  # canonical dicts: no system header is added
        try:
            r = enc.render(conv, mode="history", cot="keep-all")
        except UnrepresentableError:
            continue
        ctl = {enc.tokenizer.control_id(c) for c in enc.format.table.controls} - {None}
        n_start = int(np.isin(r.ids, [enc.tokenizer.control_id("<|start|>") or -1]).sum())
        if "<|start|>" not in enc.fallback_controls:
            assert n_start == len(conv)
        assert len(enc.parse(r.ids)) == len(conv)
        # every control id comes from a header/terminator piece, never from content text
        assert int(np.isin(r.ids, list(ctl)).sum()) <= 5 * len(conv)


# -- OpenChatML 2.2 specifics --------------------------------------------------------------

def test_canonical_header_order_and_parse_in_any_order():
    enc = enc_("ocm22")
    msg = {"role": "tool", "name": "functions.w", "call_id": "wx1", "recipient": "assistant", "intent": "status",
           "channel": "commentary", "content": "{}"}
    conv = [{"role": "assistant", "channel": "commentary", "recipient": "functions.w", "call_id": "wx1",
             "constrain": "json", "content": "{}"}, msg]
    text = enc.to_text(conv, header=False)
    assert "<|start|>tool to=assistant call_id=wx1 name=functions.w intent=status<|channel|>commentary" in text
    swapped = text.replace("to=assistant call_id=wx1 name=functions.w", "name=functions.w call_id=wx1 to=assistant")
    assert enc.parse_text(swapped, strict=True).messages == enc.parse_text(text, strict=True).messages
    hip1 = "<|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{}<|call|>"
    m = enc.parse_text(hip1, strict=True).messages[0]
    assert (m.recipient, m.constrain, m.channel) == ("functions.w", "json", "commentary")


def test_one_x_transcript_reads_as_final():
    enc = enc_("ocm22")
    conv = enc.parse_text("<|start|>user<|message|>hi<|end|><|start|>assistant<|message|>hello<|end|>", strict=True)
    assert conv.messages[1].channel is None and conv.messages[1].effective_channel == "final"
    r = enc.render(conv)
    assert r.ids[-1] == enc.tokenizer.control_id("<|return|>")


def test_cot_markers_are_ids_in_analysis_only():
    enc = enc_("ocm22")
    tok = enc.tokenizer
    marker = tok.control_id("<|start_reason|>")
    r = enc.render([{"role": "assistant", "channel": "analysis", "content": "<|start_reason|>step"}])
    assert marker in r.ids.tolist()
    r = enc.render([{"role": "assistant", "channel": "final", "content": "<|start_reason|>step"}])
    assert marker not in r.ids.tolist()
    assert enc.parse(enc.render([{"role": "assistant", "channel": "analysis", "content": "a<|start_reason|>b"}],
                                mode="history").ids)[0].content == "a<|start_reason|>b"


def test_fallback_escapes_and_trailing_lt_uses_a_literal_block():
    enc = enc_("ocm22-fallback")
    conv = [{"role": "user", "content": "x <|end|> y <<|start|> z<"}]
    r = enc.render(conv, mode="history")
    text = enc.tokenizer.decode(r.ids.tolist())
    assert text == "<|start|>user<|message|>x <<|end|> y <<<|start|> z<|literal|><<|endliteral|><|end|>"
    assert enc.parse(r.ids, strict=True)[0].content == conv[0]["content"]


# -- typed errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("conv, err, field, index", [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "channel": "fin al", "content": "y"}], HeaderError, "channel", 1),
    ([{"role": "assistant", "channel": "final", "recipient": "a<|end|>", "content": "y"}], HeaderError, "recipient", 0),
    ([{"role": "assistant", "channel": "banter", "content": "y"}], HeaderError, "channel", 0),
    ([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "constrain": "json", "content": "{nope"}], BodyConstraintError, "content", 0),
    ([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "call_id": "a", "constrain": "json", "content": "{}"},
      {"role": "tool", "name": "functions.f", "call_id": "b", "content": "1"}], CallSchemaError, "call_id", 1),
    ([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "call_id": "a", "constrain": "json", "content": "{}"},
      {"role": "tool", "name": "functions.f", "content": "1"}], CallSchemaError, "call_id", 1),
    ([{"role": "user", "content": ""}, {"content": "no role"}], InputError, "role", 1),
    ([{"role": "user", "content": 5}], InputError, "content", 0),
    ([{"role": "user", "content": "x", "chanel": "final"}], InputError, "chanel", 0),
])
def test_bad_input_gets_a_typed_error(conv, err, field, index):
    with pytest.raises(err) as e:
        enc_("ocm22").render(conv)
    assert e.value.field == field and e.value.index == index and e.value.code.startswith("E-")
    assert e.value.hint or e.value.code in ("E-PARSE-HEADER", "E-CALL-SCHEMA")


def test_unrepresentable_names_the_message():
    with pytest.raises(UnrepresentableError) as e:
        enc_("ocm20-fallback").render([{"role": "user", "content": "a"}, {"role": "user", "content": "b<"}])
    assert e.value.index == 1


def test_batch_collects_bad_records_and_goes_on():
    enc = enc_("harmony")
    batch = enc.render_batch([[{"role": "user", "content": "a"}], [{"content": "x"}], [{"role": "user", "content": "b"}]],
                             errors="collect")
    assert [r is None for r in batch] == [False, True, False]
    assert batch.errors[0][0] == 1 and isinstance(batch.errors[0][1], OcmlError)
    flat = batch.ragged()
    n = len(enc.render([{"role": "user", "content": "a"}]))  # the model's system header + 5 tokens
    assert flat["offsets"].tolist() == [0, n, 2 * n] and flat["ids"].dtype == np.int32
    assert flat["index"].tolist() == [0, 2]  # input positions survive the failed row


# -- input shapes ---------------------------------------------------------------------------------

def test_openai_chat_shape():
    enc = enc_("harmony")
    conv = {"messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "reasoning_content": "use tool",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Bern"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 12}"},
        {"role": "assistant", "content": "12C"},
    ]}
    text = enc.tokenizer.decode(enc.render(conv, cot="keep-all").ids.tolist())
    assert ("<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
            "{\"city\": \"Bern\"}<|call|>") in text
    assert "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"t\": 12}<|end|>" in text
    assert "<|channel|>analysis<|message|>use tool<|end|>" in text


def test_interchange_object_shape():
    conv = [{"role": "user", "content": "q"},
            {"role": "assistant", "channel": "final", "thinking": "hmm", "content": "plan", "intent": "preamble",
             "tool_call": {"id": "abc", "recipient": "functions.lookup", "content_type": "json", "arguments": "{\"a\":1}"}}]
    msgs = encoder.to_conversation(conv).messages
    assert [(m.channel, m.recipient, m.call_id) for m in msgs[1:]] == [("analysis", None, None), ("final", None, None),
                                                                       ("commentary", "functions.lookup", "abc")]


def test_options_build_the_gpt_oss_system_and_developer_messages(harmony):
    oh = pytest.importorskip("openai_harmony")
    enc = enc_("harmony")
    conv = {"reasoning_effort": "high", "date": "2025-08-08",
            "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}],
            "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}]}
    ref = oh.Conversation.from_messages([
        oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new().with_reasoning_effort(oh.ReasoningEffort.HIGH).with_conversation_start_date("2025-08-08")),
        oh.Message.from_role_and_content(oh.Role.DEVELOPER, oh.DeveloperContent.new().with_instructions("Be terse.").with_function_tools(
            [oh.ToolDescription.new("f", "d", parameters={"type": "object", "properties": {"a": {"type": "string"}}})])),
        oh.Message.from_role_and_content(oh.Role.USER, "hi"),
    ])
    assert enc.render(conv, mode="prompt").ids.tolist() == harmony.render_conversation_for_completion(ref, oh.Role.ASSISTANT)


def test_json_string_and_unknown_mode():
    enc = enc_("ocm22")
    assert len(enc.render(json.dumps([{"role": "user", "content": "x"}]))) > 0
    with pytest.raises(OcmlError) as e:
        enc.render([{"role": "user", "content": "x"}], mode="serve")
    assert "prompt" in str(e.value)
    with pytest.raises(OcmlError) as e:
        encoder.Encoder("apertvs")
    assert e.value.code == "E-UNKNOWN-NAME" and e.value.field == "format"
