"""Issue 8: OpenAI / HF chat data rendered as the models expect, mistakes caught where the user made them.

The differential test maps OpenAI-style conversations to openai-harmony objects by the
official gpt-oss template's rules (written here independently of ocml's adapters) and
compares ids for training, history and prompt renders.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.errors import BodyConstraintError, HeaderError, InputError, OcmlError

from support.openai_input import openai_conversation, to_harmony_objects

# -- a generator of the data people actually have ------------------------------------------


def _cases(n: int, seed: int = 20261123) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [openai_conversation(rng) for _ in range(n)]


def test_openai_conversations_match_openai_harmony(harmony, harmony_encoder):
    oh = pytest.importorskip("openai_harmony")
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    drop = oh.RenderConversationConfig(auto_drop_analysis=True)
    compared = 0
    for k, conv in enumerate(_cases(400)):
        ref = to_harmony_objects(conv, oh)
        for mode, cot, expect in (
            ("train", "keep-all", lambda: harmony.render_conversation_for_training(ref, keep)),
            ("train", "harmony", lambda: harmony.render_conversation_for_training(ref, drop)),
            ("history", "keep-all", lambda: harmony.render_conversation(ref, keep)),
            ("history", "harmony", lambda: harmony.render_conversation(ref, drop)),
            ("prompt", "harmony", lambda: harmony.render_conversation_for_completion(ref, oh.Role.ASSISTANT, drop)),
        ):
            want = expect()
            got = harmony_encoder.render(conv, mode=mode, cot=cot).ids.tolist()
            if got != want:
                pytest.fail(f"case {k} mode={mode} cot={cot}\nwant {harmony.decode(want)!r}\n"
                            f"got  {harmony.decode(got)!r}\ninput {conv}")
            compared += 1
    assert compared == 400 * 5


def test_the_issue_example_trains_final_and_return(harmony_encoder):
    r = harmony_encoder.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    text_ = harmony_encoder.tokenizer.decode(r.ids.tolist())
    assert text_.startswith("<|start|>system<|message|>You are ChatGPT")
    assert text_.endswith("<|start|>assistant<|channel|>final<|message|>Hello!<|return|>")
    trained = harmony_encoder.tokenizer.decode(r.ids[r.mask].tolist())
    assert trained == "<|channel|>final<|message|>Hello!<|return|>"


def test_layout_does_not_depend_on_which_options_are_present(harmony_encoder):
    """The system header is always the model's own; the first system text is always the instructions."""
    base = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"}]
    plain = harmony_encoder.tokenizer.decode(harmony_encoder.render(base).ids.tolist())
    dated = harmony_encoder.tokenizer.decode(harmony_encoder.render({"messages": base, "date": "2025-01-02"}).ids.tolist())
    assert "<|start|>developer<|message|># Instructions\n\nBe terse.<|end|>" in plain
    assert dated == plain.replace("Knowledge cutoff: 2024-06\n", "Knowledge cutoff: 2024-06\nCurrent date: 2025-01-02\n")
    with_reasoning = [base[0], base[1], {"role": "assistant", "content": "Hello!", "reasoning_content": "greet"}]
    got = harmony_encoder.tokenizer.decode(harmony_encoder.render(with_reasoning).ids.tolist())
    assert got.endswith("<|start|>assistant<|channel|>analysis<|message|>greet<|end|>"
                        "<|start|>assistant<|channel|>final<|message|>Hello!<|return|>")
    assert got.split("<|start|>user")[0] == plain.split("<|start|>user")[0]


def test_later_system_messages_become_developer_messages(harmony_encoder):
    r = harmony_encoder.render([{"role": "user", "content": "a"}, {"role": "system", "content": "Now be formal."},
                                {"role": "assistant", "content": "Yes."}])
    text_ = harmony_encoder.tokenizer.decode(r.ids.tolist())
    assert "<|start|>developer<|message|>Now be formal.<|end|>" in text_
    assert "# Instructions" not in text_  # only the first message is the instructions


def test_harmony_json_tool_message_renders_as_written(harmony, harmony_encoder):
    """A to_json() tool message without channel or recipient gains nothing."""
    oh = pytest.importorskip("openai_harmony")
    conv = oh.Conversation.from_messages([
        oh.Message.from_role_and_content(oh.Role.USER, "weather?"),
        oh.Message.from_role_and_content(oh.Role.ASSISTANT, '{"city":"Oslo"}').with_channel("commentary")
        .with_recipient("functions.get_weather").with_content_type("<|constrain|>json"),
        oh.Message.from_author_and_content(oh.Author.new(oh.Role.TOOL, "functions.get_weather"), "-3C"),
    ])
    raw = json.loads(conv.to_json())
    assert harmony_encoder.render(raw, mode="history").ids.tolist() == harmony.render_conversation(conv)
    # the same without openai-harmony's "name": null keys: still its own terms (a dotted tool author)
    stripped = {"messages": [{k: v for k, v in m.items() if v is not None} for m in raw["messages"]]}
    assert harmony_encoder.render(stripped, mode="history").ids.tolist() == harmony.render_conversation(conv)
    assert "<|start|>functions.get_weather<|message|>-3C<|end|>" in harmony.decode(harmony.render_conversation(conv))


def test_openchatml_22_answers_get_an_explicit_final_channel():
    enc = encoder.Encoder("openchatml-2.2")
    r = enc.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    assert enc.tokenizer.decode(r.ids.tolist()).endswith("<|start|>assistant<|channel|>final<|message|>Hello!<|return|>")
    # 1.x transcripts (no channels) still parse as final
    conv = enc.parse_text("<|start|>user<|message|>Hi<|end|><|start|>assistant<|message|>Hello!<|end|>")
    assert conv.messages[-1].channel is None and conv.messages[-1].effective_channel == "final"


@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2", "openchatml-2.0"])
def test_chat_prompt_is_a_prefix_of_training_and_mask_is_the_generated_spans(fmt):
    enc = encoder.Encoder(fmt)
    for conv in _cases(60, seed=5):
        msgs = conv["messages"]
        opts = {k: v for k, v in conv.items() if k != "messages"}
        full = enc.render({"messages": msgs, **opts}, mode="train", cot="keep-all")
        want = np.zeros(len(full), dtype=bool)
        for t, m in enumerate(msgs):
            if m["role"] != "assistant" or (t and msgs[t - 1]["role"] == "assistant"):
                continue
            prompt = enc.render({"messages": msgs[:t], **opts}, mode="prompt", cot="keep-all").ids
            assert np.array_equal(full.ids[:len(prompt)], prompt)
            end = t
            while end < len(msgs) and msgs[end]["role"] == "assistant":
                end += 1
            upto = len(full) if end == len(msgs) else len(
                enc.render({"messages": msgs[:end], **opts}, mode="history", cot="keep-all"))
            want[len(prompt):upto] = True
        assert np.array_equal(full.mask, want)


def test_arrow_rows_with_every_key_null_read_as_chat_data(harmony_encoder):
    """Parquet / ``datasets`` rows carry every key of the schema, mostly null."""
    keys = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "thinking", "channel", "weight")
    conv = _cases(30, seed=11)
    for c in conv:
        rows = [{k: m.get(k) for k in keys} for m in c["messages"]]
        assert all(len(r) == len(keys) for r in rows)
        want = harmony_encoder.render(c).ids.tolist()
        assert harmony_encoder.render({**c, "messages": rows}).ids.tolist() == want


# -- weight ------------------------------------------------------------------------------------

def test_weight_zero_is_not_trained_and_weight_one_is(harmony_encoder):
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "bad answer", "weight": 0},
            {"role": "user", "content": "b"}, {"role": "assistant", "content": "good answer", "weight": 1}]
    r = harmony_encoder.render(msgs)
    trained = harmony_encoder.tokenizer.decode(r.ids[r.mask].tolist())
    assert "good answer" in trained and "bad answer" not in trained
    assert set(r.message_index[r.mask].tolist()) == {3}
    user_trained = harmony_encoder.render([{"role": "user", "content": "a", "weight": 1},
                                           {"role": "assistant", "content": "x"}])
    assert 0 in user_trained.message_index[user_trained.mask].tolist()
    with pytest.raises(InputError) as e:
        harmony_encoder.render([{"role": "user", "content": "a"}, {"role": "assistant", "content": "x", "weight": 0.5}])
    assert e.value.field == "weight" and e.value.index == 1


# -- mistakes caught where the user made them --------------------------------------------------

@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2", "openchatml-2.0"])
@pytest.mark.parametrize("role,suggestion", [("asistant", "assistant"), ("wizard", None), ("User", "user")])
def test_unknown_roles_are_typed_errors(fmt, role, suggestion):
    with pytest.raises(HeaderError) as e:
        encoder.Encoder(fmt).render([{"role": "user", "content": "hi"}, {"role": role, "content": "x"}])
    assert e.value.code == "E-ROLE-UNKNOWN" and e.value.index == 1 and e.value.field == "role"
    if suggestion:
        assert f"did you mean {suggestion!r}" in str(e.value)


def test_tool_namespace_roles_are_accepted():
    """A tool result's role is the tool's name (``functions.f``): rendered as its header's role and
    read back as the same role and recipient."""
    enc = encoder.Encoder("openchatml-2.2")
    r = enc.render([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "content": "{}"},
                    {"role": "functions.f", "content": "ok", "channel": "commentary", "recipient": "assistant"}],
                   mode="history")
    assert enc.tokenizer.decode(r.ids.tolist()) == (
        "<|start|>assistant to=functions.f<|channel|>commentary<|message|>{}<|call|>"
        "<|start|>functions.f to=assistant<|channel|>commentary<|message|>ok<|end|>")
    back = enc.parse(r.ids)
    assert [(m.role, m.recipient, m.content) for m in back] == [
        ("assistant", "functions.f", "{}"), ("functions.f", "assistant", "ok")]


def test_unknown_conversation_options_are_errors(harmony_encoder):
    with pytest.raises(InputError) as e:
        harmony_encoder.render({"messages": [{"role": "user", "content": "x"}], "reasoning_efort": "high"})
    assert e.value.field == "reasoning_efort" and "did you mean 'reasoning_effort'" in str(e.value)
    # record metadata and request parameters are not options, and not errors
    harmony_encoder.render({"messages": [{"role": "user", "content": "x"}], "id": "r1", "model": "gpt-oss-20b",
                            "metadata": {"src": "x"}})


def test_invalid_json_arguments_name_the_field_of_the_input_message(harmony_encoder):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "weather?"},
            {"role": "assistant", "reasoning_content": "call it", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]
    # one argument rule in every format (encoder.arguments), checked where the call is read
    for enc in (harmony_encoder, encoder.Encoder("openchatml-2.2"), encoder.Encoder("openchatml-2.0"),
                encoder.Encoder("chatml", reasoning="drop"), encoder.Encoder("apertus")):
        with pytest.raises(BodyConstraintError) as e:
            enc.render({"messages": msgs, "tools": [{"type": "function", "function": {"name": "f"}}]})
        assert e.value.index == 2, enc
        assert e.value.field == "tool_calls[1].function.arguments"


def test_message_index_and_dropped_are_input_positions(harmony_encoder):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1", "reasoning_content": "r1"},
            {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2", "reasoning_content": "r2"}]
    r = harmony_encoder.render(msgs)  # default CoT: the first turn's reasoning is dropped
    assert r.dropped == (2,)
    assert r.conversation.messages[r.dropped_expanded[0]].content == "r1"
    tok = harmony_encoder.tokenizer
    for k, m in enumerate(msgs):
        part = tok.decode(r.ids[r.message_index == k].tolist())
        assert m["content"] in part, (k, part)
    assert "You are ChatGPT" in tok.decode(r.ids[r.message_index == -2].tolist())  # the model's own header
    assert "# Instructions" in tok.decode(r.ids[r.message_index == 0].tolist())    # from the user's system text
    assert "r2" in tok.decode(r.ids[r.message_index == 4].tolist())
    assert len(set(r.expanded_index.tolist())) > len(set(r.message_index.tolist()))


@pytest.mark.parametrize("content,field,needle", [
    ({"foo": 1}, "content", "not text"),
    ([{"type": "image_url", "image_url": {"url": "x"}}], "content[0].type", "'image_url' part"),
    ([{"type": "text"}], "content[0].text", "no 'text'"),
    (5, "content", "string or a list"),
])
def test_content_errors_say_what_is_wrong(harmony_encoder, content, field, needle):
    with pytest.raises(InputError) as e:
        harmony_encoder.render([{"role": "user", "content": content}])
    assert e.value.field == field and needle in str(e.value) and e.value.index == 0


def test_reasoning_on_a_user_message_is_an_error(harmony_encoder):
    with pytest.raises(InputError) as e:
        harmony_encoder.render([{"role": "user", "content": "x", "reasoning_content": "y"}])
    assert e.value.field == "reasoning_content"


def test_bytes_that_are_not_utf8(harmony_encoder):
    with pytest.raises(InputError) as e:
        harmony_encoder.render(b'[{"role": "user", "content": "caf\xe9"}]')
    assert e.value.code == "E-INPUT-ENCODING" and "UTF-8" in str(e.value)
    ok = harmony_encoder.render('[{"role": "user", "content": "café"}]'.encode())
    assert len(ok) > 0


def test_encoder_rejects_unknown_arguments():
    with pytest.raises(InputError) as e:
        encoder.Encoder("harmony", foo=1)
    assert e.value.field == "foo"
    with pytest.raises(InputError) as e:
        encoder.Encoder("openchatml-2.2", require_call_id=True)
    assert "did you mean 'require_call_ids'" in str(e.value)
    with pytest.raises(OcmlError):
        encoder.Encoder("harmony", shape="openai")


def test_shape_can_be_forced():
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    native = encoder.Encoder("harmony", shape="native")
    text_ = native.tokenizer.decode(native.render(msgs, mode="history").ids.tolist())
    assert text_ == "<|start|>user<|message|>Hi<|end|><|start|>assistant<|message|>Hello!<|end|>"
    chat = encoder.Encoder("harmony", shape="chat")
    forced = chat.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "channel": "final", "content": "x"}])
    assert "You are ChatGPT" in chat.tokenizer.decode(forced.ids.tolist())


# -- one import name ----------------------------------------------------------------------------

def test_import_ocml_is_the_entry_point(tmp_path):
    import subprocess
    import sys

    (tmp_path / "vocab.py").write_text("raise SystemExit('the local vocab.py was imported')\n")
    (tmp_path / "encoder.py").write_text("raise SystemExit('the local encoder.py was imported')\n")
    code = ("import ocml; e = ocml.Encoder('harmony'); r = e.render([{'role': 'user', 'content': 'hi'}]);"
            "print(ocml.__version__, len(r), ocml.load('o200k_base').name, ocml.stops.stop_ids(e))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "o200k_base" in out.stdout


def test_submodules_without_a_prior_import():
    import subprocess
    import sys

    code = "from ocml import encoder; print(encoder.stops.stop_ids(encoder.Encoder('harmony')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "200002" in out.stdout
