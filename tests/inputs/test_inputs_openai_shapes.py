"""Issue 19: every OpenAI / HF chat record is rendered as the model expects or refused with a
typed error, in every format; never an untyped exception, never a silent drop of text.

One test per numbered case of the issue (content parts, refusal, tool_call_id, missing
content, ChatML reasoning, tool-call arguments, wrong-type values, other keys), each in
every format it concerns, plus a property test over records with every optional key
present, absent, null and empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import OcmlError

FORMATS = ("harmony", "openchatml-2.2", "openchatml-2.0", "chatml", "apertus")
_ENCODERS: dict[str, encoder.Encoder] = {}


def enc(fmt: str, **kw: Any) -> encoder.Encoder:
    key = fmt + repr(sorted(kw.items()))
    if key not in _ENCODERS:
        _ENCODERS[key] = encoder.Encoder(fmt, **kw)
    return _ENCODERS[key]


def any_enc(fmt: str) -> encoder.Encoder:
    """The format's encoder that accepts reasoning (ChatML: reasoning='think')."""
    return enc(fmt, reasoning="think") if fmt == "chatml" else enc(fmt)


def err(fmt: str, conv: Any, **kw: Any) -> OcmlError:
    with pytest.raises(OcmlError) as e:
        any_enc(fmt).render(conv, **kw)
    return e.value


def ids(fmt: str, conv: Any, **kw: Any) -> list[int]:
    return any_enc(fmt).render(conv, **kw).ids.tolist()


def text(fmt: str, conv: Any, **kw: Any) -> str:
    e = any_enc(fmt)
    return e.tokenizer.decode(e.render(conv, **kw).ids.tolist())


CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


# -- 1. content as a list of parts -------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["text", "input_text", "output_text"])
def test_text_parts_render_as_the_joined_string(fmt, kind):
    as_parts = [{"role": "system", "content": [{"type": kind, "text": "Be "}, {"type": kind, "text": "brief."}]},
                {"role": "user", "content": [{"type": kind, "text": "Weather?"}]},
                {"role": "assistant", "content": [{"type": kind, "text": "Sun"}, "ny."]}]
    as_strings = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
                  {"role": "assistant", "content": "Sunny."}]
    assert ids(fmt, as_parts) == ids(fmt, as_strings)


def test_parts_keep_harmony_chat_mapping_final_and_return():
    t = text("harmony", [{"role": "user", "content": "x"},
                         {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}])
    assert t.endswith("<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>")
    assert "You are ChatGPT" in t  # read as chat data: the model's own system header


def test_openai_harmony_json_is_still_native(harmony):
    import openai_harmony as oh

    m = oh.Message.from_role_and_content(oh.Role.ASSISTANT, "hi")  # no channel: native renders none
    t = text("harmony", oh.Conversation.from_messages([m]).to_dict())
    assert t == "<|start|>assistant<|message|>hi<|end|>"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("part", [{"type": "image_url", "image_url": {"url": "http://x/a.png"}},
                                  {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                                  {"type": "file", "file": {"file_id": "f1"}}])
def test_non_text_parts_are_typed_errors_naming_message_and_part(fmt, part):
    e = err(fmt, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "?"},
                  {"role": "user", "content": [{"type": "text", "text": "look"}, part]}])
    assert (e.code, e.index, e.field) == ("E-INPUT-CONTENT-PART", 2, "content[1].type")
    assert part["type"] in e.message


@pytest.mark.parametrize("fmt", FORMATS)
def test_part_api_keys_are_ignored_and_unknown_part_keys_refused(fmt):
    cached = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    assert ids(fmt, cached) == ids(fmt, [{"role": "user", "content": "hi"}])
    e = err(fmt, [{"role": "user", "content": [{"type": "text", "text": "hi", "subtitle": "more text"}]}])
    assert (e.index, e.field) == (0, "content[0].subtitle")


# -- 2. refusal ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_refusal_is_the_visible_answer(fmt):
    refused = [{"role": "user", "content": "do it"}, {"role": "assistant", "content": None, "refusal": "I can't."}]
    said = [{"role": "user", "content": "do it"}, {"role": "assistant", "content": "I can't."}]
    assert ids(fmt, refused) == ids(fmt, said)
    r = any_enc(fmt).render(refused)
    assert "I can't." in any_enc(fmt).tokenizer.decode(r.ids[r.mask].tolist())  # trained
    part = [{"role": "user", "content": "do it"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}]
    assert ids(fmt, part) == ids(fmt, said)


@pytest.mark.parametrize("fmt", FORMATS)
def test_content_and_refusal_both_is_an_error(fmt):
    e = err(fmt, [{"role": "user", "content": "do it"}, {"role": "assistant", "content": "Ok", "refusal": "No"}])
    assert (e.code, e.index, e.field) == ("E-INPUT-REFUSAL", 1, "refusal")


# -- 3. tool_call_id must match a call when the calls carry ids -----------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_tool_call_id_matching_no_call_is_an_error_naming_both(fmt):
    conv = {"messages": [{"role": "user", "content": "w?"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
                         {"role": "tool", "tool_call_id": "call_9", "content": "sunny"}], "tools": TOOLS}
    e = err(fmt, conv)
    assert (e.code, e.index, e.field) == ("E-CALL-SCHEMA", 2, "tool_call_id")
    assert "call_9" in e.message and "call_1" in e.message


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_ids_order_pairs_results_and_with_ids_ids_do(fmt):
    c1 = {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    c2 = {"type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    tools = TOOLS + [{"type": "function", "function": {"name": "get_time"}}]
    by_order = {"messages": [{"role": "user", "content": "w?"},
                             {"role": "assistant", "content": None, "tool_calls": [c1, c2]},
                             {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "noon"}], "tools": tools}
    named = {"messages": [{"role": "user", "content": "w?"},
                          {"role": "assistant", "content": None, "tool_calls": [c1, c2]},
                          {"role": "tool", "name": "get_weather", "content": "sunny"},
                          {"role": "tool", "name": "get_time", "content": "noon"}], "tools": tools}
    assert ids(fmt, by_order) == ids(fmt, named)
    if fmt == "harmony":
        assert "<|start|>functions.get_time to=assistant<|channel|>commentary<|message|>noon" in text(fmt, by_order)


def test_tool_reply_name_disagreeing_with_its_call_is_an_error():
    conv = [{"role": "user", "content": "w?"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "name": "get_time", "content": "noon"}]
    for fmt in FORMATS:
        e = err(fmt, conv)
        assert (e.code, e.index, e.field) == ("E-CALL-SCHEMA", 2, "name"), fmt


# -- 4. missing content ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("role", ["system", "user", "assistant"])
@pytest.mark.parametrize("null", [True, False])
def test_missing_or_null_content_is_an_error_and_empty_string_is_valid(fmt, role, null):
    msgs = [{"role": "user", "content": "q"}] if role != "user" else []
    m: dict[str, Any] = {"role": role}
    if null:
        m["content"] = None
    if role == "system":
        msgs = [m] + msgs + [{"role": "assistant", "content": "a"}]
    else:
        msgs = msgs + [m] + ([{"role": "assistant", "content": "a"}] if role == "user" else [])
    at = msgs.index(m)
    e = err(fmt, msgs)
    assert (e.code, e.index, e.field) == ("E-INPUT-CONTENT-MISSING", at, "content")
    m["content"] = ""
    any_enc(fmt).render(msgs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_tool_result_without_content_is_an_error(fmt):
    e = err(fmt, {"messages": [{"role": "user", "content": "w?"},
                               {"role": "assistant", "content": None, "tool_calls": [CALL]},
                               {"role": "tool", "tool_call_id": "call_1", "content": None}], "tools": TOOLS})
    assert (e.code, e.index) == ("E-INPUT-CONTENT-MISSING", 2)


def test_nothing_to_train_is_visible_on_the_result():
    for fmt in FORMATS:
        r = any_enc(fmt).render([{"role": "user", "content": "only a question"}])
        assert not r.mask.any(), fmt


# -- 6. ChatML reasoning --------------------------------------------------------------------------------

REASONED = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1", "reasoning_content": "r1"},
            {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2", "reasoning_content": "r2"}]


def test_chatml_reasoning_error_is_the_default_and_names_the_choices():
    with pytest.raises(OcmlError) as e:
        enc("chatml").render(REASONED, cot="keep-all")
    assert e.value.code == "E-INPUT-REASONING" and "reasoning='think'" in e.value.hint and "'drop'" in e.value.hint


def test_chatml_reasoning_drop_renders_as_without_reasoning():
    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in REASONED]
    assert enc("chatml", reasoning="drop").render(REASONED).ids.tolist() == enc("chatml").render(plain).ids.tolist()


def test_chatml_reasoning_think_is_the_qwen3_layout_trained_with_the_answer():
    e = enc("chatml", reasoning="think")
    r = e.render(REASONED)
    t = e.tokenizer.decode(r.ids.tolist())
    # Qwen3: the last query's turn keeps its reasoning; earlier turns' is dropped (cot default)
    assert t == ("<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
                 "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n")
    assert e.tokenizer.decode(r.ids[r.mask].tolist()).endswith("<think>\nr2\n</think>\n\na2<|im_end|>")
    kept = e.tokenizer.decode(e.render(REASONED, cot="keep-all").ids.tolist())
    assert "<think>\nr1\n</think>\n\na1" in kept
    assert e.render(REASONED, cot="drop-all").ids.tolist() == enc("chatml", reasoning="drop").render(REASONED).ids.tolist()


def test_chatml_think_with_tool_calls_and_reasoning_only():
    e = enc("chatml", reasoning="think")
    conv = {"messages": [{"role": "user", "content": "w?"},
                         {"role": "assistant", "content": None, "reasoning_content": "\nlook it up\n",
                          "tool_calls": [CALL]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                         {"role": "assistant", "reasoning_content": "done"}], "tools": TOOLS}
    t = e.tokenizer.decode(e.render(conv).ids.tolist())
    assert ("<|im_start|>assistant\n<think>\nlook it up\n</think>\n\n<tool_call>\n"
            '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>') in t
    assert t.endswith("<|im_start|>assistant\n<think>\ndone\n</think>\n\n<|im_end|>\n")


def test_options_a_format_would_ignore_are_usage_errors():
    for fmt in ("harmony", "openchatml-2.2", "openchatml-2.0", "apertus"):
        with pytest.raises(OcmlError) as e:
            encoder.Encoder(fmt, reasoning="drop")
        assert (e.value.code, e.value.field) == ("E-INPUT-ARGUMENT", "reasoning"), fmt
    with pytest.raises(OcmlError) as e:
        encoder.Encoder("chatml", reasoning="drop", cot="keep-all")
    assert (e.value.code, e.value.field) == ("E-INPUT-ARGUMENT", "cot")
    with pytest.raises(OcmlError) as e:
        encoder.Encoder("apertus").render(REASONED, cot="drop-all")
    assert e.value.field == "cot"
    with pytest.raises(OcmlError):
        encoder.Encoder("chatml", reasoning="maybe")
    for fmt in ("chatml", "apertus"):  # one frame per turn: masks by channel / tool-call body cannot apply
        for mask in ("final", "no-analysis", "no-tool-bodies"):
            with pytest.raises(OcmlError) as e:
                encoder.Encoder(fmt, mask=mask)
            assert (e.value.code, e.value.field) == ("E-INPUT-ARGUMENT", "mask")
        with pytest.raises(OcmlError):
            enc(fmt, **({"reasoning": "think"} if fmt == "chatml" else {})).render(REASONED, mask="final")
        encoder.Encoder(fmt, mask="last")
    # cot applies to chatml: drop-all removes the reasoning before the reasoning policy sees it
    assert enc("chatml").render(REASONED, cot="drop-all").ids.tolist() == \
        enc("chatml", reasoning="drop").render(REASONED).ids.tolist()


def test_cli_reasoning_option(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"messages": REASONED}))

    def ocml(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ocml.encoder.cli", *args], capture_output=True, text=True)

    ok = ocml("text", str(f), "--format", "chatml", "--reasoning", "think")
    assert ok.returncode == 0 and "<think>\nr2\n</think>" in ok.stdout
    assert ocml("text", str(f), "--format", "chatml").returncode == 2
    bad = ocml("render", str(f), "--format", "harmony", "--reasoning", "think")
    assert bad.returncode == 2 and "reasoning" in bad.stderr
    assert ocml("render", str(f), "--format", "chatml", "--reasoning", "drop", "--cot", "keep-all").returncode == 2


# -- 7. one tool-call argument rule ---------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("args", ["{'city': 'Tokyo',}", "", "{oops"])
def test_tool_arguments_that_are_not_json_are_the_same_error_everywhere(fmt, args):
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": args}}
    e = err(fmt, {"messages": [{"role": "user", "content": "w?"},
                               {"role": "assistant", "content": None, "tool_calls": [call]}], "tools": TOOLS})
    assert (e.code, e.index, e.field) == ("E-BODY-CONSTRAINT-VIOLATION", 1, "tool_calls[0].function.arguments")


@pytest.mark.parametrize("fmt", FORMATS)
def test_dict_arguments_equal_their_json_text(fmt):
    def conv(a: Any) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "w?"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": a}}]}], "tools": TOOLS}
    assert ids(fmt, conv({"city": "Tōkyō"})) == ids(fmt, conv('{"city": "Tōkyō"}'))


# -- 8. values of the wrong Python type that look right -------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_str_subclasses_are_strings(fmt):
    plain = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "name": None}]}
    nps = {"messages": [{"role": np.str_("user"), "content": np.str_("hi")},
                        {"role": "assistant", "content": np.str_("yo")}]}
    assert ids(fmt, nps) == ids(fmt, plain)


@pytest.mark.parametrize("fmt", FORMATS)
def test_messages_and_tools_as_json_text_like_the_cli(fmt):
    msgs = [{"role": "user", "content": "w?"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}, {"role": "assistant", "content": "Sunny."}]
    want = ids(fmt, {"messages": msgs, "tools": TOOLS})
    assert ids(fmt, {"messages": json.dumps(msgs), "tools": json.dumps(TOOLS)}) == want
    assert ids(fmt, {"messages": msgs, "tools": np.array(TOOLS, dtype=object)}) == want
    from ocml.encoder.pipeline.records import conversation_from_record

    assert ids(fmt, conversation_from_record({"messages": json.dumps(msgs), "tools": json.dumps(TOOLS)})) == want


# -- 9. the other keys of OpenAI / HF messages ----------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_legacy_function_call_and_function_role(fmt):
    legacy = {"messages": [{"role": "user", "content": "w?"},
                           {"role": "assistant", "content": None,
                            "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
                           {"role": "function", "name": "get_weather", "content": "sunny"}], "functions":
              [{"name": "get_weather", "parameters": {"type": "object"}}]}
    modern = {"messages": [{"role": "user", "content": "w?"},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"type": "function", "function": {"name": "get_weather",
                                                                 "arguments": '{"city": "Oslo"}'}}]},
                           {"role": "tool", "content": "sunny"}], "tools": TOOLS}
    assert ids(fmt, legacy) == ids(fmt, modern)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("msg, code, field", [
    ({"role": "assistant", "content": None, "audio": {"id": "audio_1"}}, "E-INPUT-CONTENT-PART", "audio"),
    ({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "custom",
                                                             "custom": {"name": "f", "input": "x"}}]},
     "E-INPUT-TOOL-CALL", "tool_calls[0].type"),
    ({"role": "assistant", "content": "a", "reasoning_content": "r", "thinking": "other"}, "E-INPUT", "thinking"),
    ({"role": "user", "content": "a", "tool_call_id": "c"}, "E-INPUT", "tool_call_id"),
    ({"role": "user", "content": "a", "refusal": "no"}, "E-INPUT", "refusal"),
    ({"role": "assistant", "content": "a", "reasoning_details": [{"text": "r"}]}, "E-INPUT", "reasoning_details"),
])
def test_keys_that_carry_something_unrenderable_are_typed_errors(fmt, msg, code, field):
    e = err(fmt, [{"role": "user", "content": "q"}, msg])
    assert (e.code, e.index, e.field) == (code, 1, field)


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_reasoning_under_two_keys_is_one_reasoning(fmt):
    one = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "reasoning_content": "r"}]
    two = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "reasoning_content": "r",
                                              "thinking": "r"}]
    assert ids(fmt, two) == ids(fmt, one)


def test_a_name_apertus_cannot_carry_is_refused_not_dropped():
    e = err("apertus", [{"role": "user", "content": "q", "name": "bob"}])
    assert (e.code, e.index, e.field) == ("E-UNREPRESENTABLE", 0, "name")
    for fmt in ("harmony", "openchatml-2.2", "openchatml-2.0", "chatml"):
        assert "bob" in text(fmt, [{"role": "user", "content": "q", "name": "bob"}]), fmt


# -- property: every optional key present, absent, null and empty ----------------------------------------

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.?!", min_size=1, max_size=12).map(
    lambda s: "w" + s.strip() + "z")  # no edge whitespace, never empty: findable in the decoded render
ABSENT = object()


def _variant(value: st.SearchStrategy[Any], empty: Any = "") -> st.SearchStrategy[Any]:
    """Present (most often, so that many records render), absent, null or empty."""
    others = [st.just(ABSENT), st.none(), empty if isinstance(empty, st.SearchStrategy) else st.just(empty)]
    return st.integers(0, 11).flatmap(lambda k: value if k < 9 else others[k - 9])


def _content(role: str) -> st.SearchStrategy[Any]:
    part = st.builds(lambda k, t: {"type": k, "text": t}, st.sampled_from(["text", "input_text", "output_text"]), WORDS)
    parts = st.lists(part, min_size=1, max_size=3)
    extra = [st.lists(st.builds(lambda t: {"type": "refusal", "refusal": t}, WORDS), min_size=1, max_size=1)] \
        if role == "assistant" else []
    return _variant(st.one_of(WORDS, parts, *extra), empty=st.sampled_from(["", []]))


@st.composite
def _record(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """An OpenAI / HF-shaped record and the texts it carries (each must appear in the render)."""
    texts: list[str] = []
    msgs: list[dict[str, Any]] = []

    def put(m: dict[str, Any], key: str, val: Any) -> None:
        if val is ABSENT:
            return
        if isinstance(val, st.SearchStrategy):
            val = draw(val)
        m[key] = val

    def carried(val: Any) -> None:
        if isinstance(val, str) and val:
            texts.append(val)
        elif isinstance(val, list):
            texts.extend(p.get("text") or p.get("refusal") or "" for p in val)

    if draw(st.booleans()):
        m = {"role": "system"}
        put(m, "content", draw(_content("system")))
        carried(m.get("content"))
        msgs.append(m)
    call_n = 0
    for _ in range(draw(st.integers(1, 2))):
        m = {"role": "user"}
        put(m, "content", draw(_content("user")))
        put(m, "name", draw(_variant(st.just("bob"))))
        carried(m.get("content"))
        msgs.append(m)
        a: dict[str, Any] = {"role": "assistant"}
        put(a, "content", draw(_content("assistant")))
        put(a, "refusal", draw(st.sampled_from([ABSENT] * 6 + [None, "", "wI refusez"])))
        put(a, "reasoning_content", draw(_variant(WORDS)))
        put(a, "annotations", draw(_variant(st.just([]), empty=[])))
        put(a, "audio", draw(st.sampled_from([ABSENT, None])))
        calls = draw(_variant(st.integers(1, 2), empty=0))
        if calls is not ABSENT and calls is not None:
            a["tool_calls"] = []
            for _k in range(calls):
                call_n += 1
                args = draw(st.sampled_from(['{"q": "%s"}', {"q": "%s"}]))
                word = draw(WORDS)
                args = args % word if isinstance(args, str) else {"q": word}
                c: dict[str, Any] = {"type": "function", "function": {"name": "lookup", "arguments": args}}
                put(c, "id", draw(st.sampled_from([ABSENT, None, f"call_{call_n}"])))
                a["tool_calls"].append(c)
                texts.append(word)
        for key in ("content", "refusal", "reasoning_content"):
            carried(a.get(key))
        msgs.append(a)
        for c in a.get("tool_calls") or []:
            t: dict[str, Any] = {"role": "tool"}
            put(t, "tool_call_id", draw(st.sampled_from([ABSENT, None, c.get("id") or "call_x", "call_nope"])))
            put(t, "content", draw(_content("tool")))
            carried(t.get("content"))
            msgs.append(t)
    rec: dict[str, Any] = {"messages": msgs}
    put(rec, "tools", draw(_variant(st.just([{"type": "function", "function": {"name": "lookup"}}]), empty=[])))
    return rec, texts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_record(), st.sampled_from(FORMATS))
def test_records_render_as_expected_or_raise_a_typed_error(case, fmt):
    rec, texts = case
    e = any_enc(fmt)
    try:
        r = e.render(rec, cot="keep-all")
    except OcmlError:
        return  # a typed error (anything else fails the test)
    decoded = e.tokenizer.decode(r.ids.tolist())
    for t in texts:  # no key that carries text is dropped
        assert t in decoded, (t, fmt, rec)
    last = rec["messages"][-1]
    if fmt == "harmony" and last["role"] == "assistant" and not last.get("tool_calls") and \
            (last.get("content") or last.get("refusal")):
        assert decoded.endswith("<|return|>")  # the answer is the final channel, even given as parts
    assert r.mask.any() == any(m["role"] == "assistant" for m in rec["messages"])
