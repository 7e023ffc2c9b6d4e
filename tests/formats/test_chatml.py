"""Issue 12, ``chatml`` (OpenChatML v0.1): golden fixtures from the spec, whole-run ids, the mask
with the straddling rule, round trips, the stream decoder, fill-in-the-middle, typed errors.

Parity with Qwen2.5's real template is in ``test_chatml_parity.py``.
The spec's examples are goldens of the matrix (tests/formats/test_golden.py; python scripts/regen_golden.py).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from support import golden
from support.paths import shared
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import CallSchemaError, HeaderError, InputError, InputTypeError, OcmlError, UnknownNameError, UnrepresentableError
from ocml.encoder.events import MessageEnd, Stop
from ocml.encoder.formats.chatml.format import tool_calls_of

from support.chatml import cached_encoder, chat_conv, check_stream, merge, words

CONTROLS = ("<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<|file_separator|>")


def enc_(tokenizer: str | None = None, **opts) -> encoder.Encoder:
    return cached_encoder("chatml", tokenizer, **opts)


# -- the spec's examples (their goldens: tests/fixtures/golden, cases spec-chatml-*) ---------------

def test_spec_text_with_its_stray_spaces_parses():
    """§7's longer example has trailing spaces after a header and after an <|im_end|>: layout."""
    case = golden.case("spec-chatml-7.3-named-roles")
    spec = case["spec_text"]["chatml"].replace("user name=Alice\nThanks", "user name=Alice  \nThanks")
    spec = spec.replace("overhear. I'm also trying to get into a fitness routine. Mind if I join the conversation?\n<|im_end|>\n",
                        "overhear. I'm also trying to get into a fitness routine. Mind if I join the conversation?\n<|im_end|>  \n")
    assert spec != case["spec_text"]["chatml"]
    enc = enc_(**case["options"])
    got = enc.parse_text(spec, strict=True).messages
    assert [m.to_dict() for m in got] == case["conversation"]


# -- whole-run ids ----------------------------------------------------------------------------

def native_conv(rng: random.Random, safe: bool = False) -> list[dict]:
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": words(rng, safe=safe)})
    for _ in range(rng.randint(1, 3)):
        m = {"role": rng.choice(["user", "user", "tool"]), "content": words(rng, safe=safe)}
        if rng.random() < 0.2:
            m["name"] = rng.choice(["Eric", "calc", "a.b-c_1"])
        msgs.append(m)
        for _ in range(rng.randint(0, 2)):
            a = {"role": "assistant", "content": words(rng, safe=safe)}
            if rng.random() < 0.1:
                a["name"] = "Coach"
            msgs.append(a)
    return msgs


def reference_ids(tok, msgs: list[dict], layout: str = "deployed", bos_eos: bool = False) -> list[int]:
    """Independent of the renderer: the template's segments, each text run encoded in one call."""
    segs: list[tuple[bool, str]] = []
    tail = "\n" if layout == "v0.1-literal" else ""
    if bos_eos:
        segs += [(True, "<s>")] + ([(False, "\n")] if tail else [])
    for m in msgs:
        name = f" name={m['name']}" if m.get("name") else ""
        segs += [(True, "<|im_start|>"), (False, f"{m['role']}{name}\n{m['content']}{tail}"), (True, "<|im_end|>"),
                 (False, "\n")]
    if bos_eos:
        segs.append((True, "</s>"))
    out: list[int] = []
    run = ""
    for is_ctl, v in segs:
        cid = tok.control_id(v) if is_ctl else None
        if cid is None:
            run += v
        else:
            out += tok.encode_text(run) if run else []
            run = ""
            out.append(cid)
    return out + (tok.encode_text(run) if run else [])


@pytest.mark.parametrize("tokenizer", ["cl100k_base+reg", "o200k_base+reg"])
def test_ids_are_the_whole_text_tokenized(tokenizer):
    enc = enc_(tokenizer, shape="native")
    tok = enc.tokenizer
    rng = random.Random(3)
    for _ in range(150):
        safe = rng.random() < 0.5
        msgs = native_conv(rng, safe=safe)
        r = enc.render(msgs, mode="history", cot="keep-all")
        if safe:  # no control text in content: exactly tiktoken's encode of the whole text
            text = enc.to_text(msgs)
            assert r.ids.tolist() == tok.encoding.encode(text, allowed_special=set(CONTROLS), disallowed_special=())
        assert r.ids.tolist() == reference_ids(tok, msgs)


@pytest.mark.parametrize("opts", [{"layout": "v0.1-literal"}, {"bos_eos": True}, {"layout": "v0.1-literal", "bos_eos": True}])
def test_whole_run_ids_other_layouts_and_fallback(opts):
    rng = random.Random(4)
    for tokenizer in ("cl100k_base+reg", "o200k_base"):
        enc = enc_(tokenizer, shape="native", **opts)
        for _ in range(60):
            msgs = native_conv(rng, safe=tokenizer == "o200k_base")
            r = enc.render(msgs, mode="history")
            assert r.ids.tolist() == reference_ids(enc.tokenizer, msgs, **opts)


def test_straddling_token_is_trained_and_documented_example():
    enc = enc_()
    tok = enc.tokenizer
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "\nHello"}]
    r = enc.render(msgs)
    toks = [tok.decode([i]) for i in r.ids.tolist()]
    k = toks.index("\n\n")
    assert toks[k - 1] == "assistant" and r.mask[k] and not r.mask[k - 1]
    prompt = enc.render(msgs[:1], mode="prompt").ids
    assert prompt.tolist()[:-1] == r.ids.tolist()[:len(prompt) - 1] and prompt[-1] != r.ids[len(prompt) - 1]
    assert tok.decode(r.ids[r.mask].tolist()) == "\n\nHello<|im_end|>"


# -- the mask invariant ------------------------------------------------------------------------

@pytest.mark.parametrize("tokenizer", ["cl100k_base+reg", "o200k_base+reg"])
def test_prompt_is_a_prefix_up_to_the_straddling_token_and_the_mask_is_the_generated_spans(tokenizer):
    enc = enc_(tokenizer)
    tok = enc.tokenizer
    end_id = tok.control_id("<|im_end|>")
    rng = random.Random(11)
    straddles = checked = 0
    for _ in range(120):
        conv = chat_conv(rng)
        full = enc.render(conv, mode="train")
        frames = list(full.conversation.messages)
        expected = np.zeros(len(full), dtype=bool)
        for k, f in enumerate(frames):
            if f.role != "assistant":
                continue
            prompt = enc.render(frames[:k], mode="prompt").ids
            n = len(prompt)
            assert np.array_equal(full.ids[:n - 1], prompt[:-1])
            start = n if full.ids[n - 1] == prompt[-1] else n - 1
            straddles += start == n - 1
            end = int(np.flatnonzero((full.expanded_index == k) & (full.ids == end_id))[0]) + 1
            expected[start:end] = True
            trained = tok.decode(full.ids[start:end].tolist())
            assert trained.endswith(f.content + "<|im_end|>") and len(trained) <= len(f.content) + 11
            checked += 1
        assert np.array_equal(full.mask, expected)
    assert checked > 150 and straddles > 5


@pytest.mark.parametrize("layout", ["deployed", "v0.1-literal"])
def test_prefix_property_in_fallback_mode(layout):
    enc = enc_("o200k_base", layout=layout, shape="native")
    rng = random.Random(5)
    for _ in range(60):
        msgs = native_conv(rng, safe=True)
        full = enc.render(msgs, mode="train")
        for k, m in enumerate(msgs):
            if m["role"] == "assistant" and "name" not in m:  # the generation prompt has no name=
                prompt = enc.render(msgs[:k], mode="prompt").ids
                n = len(prompt)
                assert np.array_equal(full.ids[:n - 1], prompt[:-1])
                start = n if full.ids[n - 1] == prompt[-1] else n - 1
                assert full.mask[start]
                assert bool(full.mask[:start].any()) == any(x["role"] == "assistant" for x in msgs[:k])


# -- round trips --------------------------------------------------------------------------------

CONTROLISH = st.sampled_from(["<|im_start|>", "<|im_end|>", "<s>", "</s>", "<|fim_prefix|>", "<|fim_middle|>",
                              "<|fim_suffix|>", "<|file_separator|>", "<<|im_end|>", "<|", "|>", "<", "\n", " ",
                              "\n\n", "é", "🙂", "name=x"])
CONTENT = st.lists(st.one_of(CONTROLISH, st.text(max_size=5)), max_size=10).map("".join)
NAMES = st.one_of(st.none(), st.sampled_from(["Eric", "calc", "x.y-z"]))


@st.composite
def conversations(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        m = {"role": draw(st.sampled_from(["system", "user", "assistant", "tool"])), "content": draw(CONTENT)}
        name = draw(NAMES)
        if name:
            m["name"] = name
        out.append(m)
    return out


@pytest.mark.parametrize("tokenizer, opts", [(None, {}), (None, {"layout": "v0.1-literal", "bos_eos": True}),
                                             ("o200k_base", {}), ("o200k_base", {"layout": "v0.1-literal"}),
                                             ("cl100k_base", {"bos_eos": True})])
@settings(max_examples=100, deadline=None)
@given(conv=conversations())
def test_render_parse_and_text_round_trips(tokenizer, opts, conv):
    enc = enc_(tokenizer, shape="native", **opts)
    try:
        r = enc.render(conv, mode="history")
    except UnrepresentableError:  # fallback: content ending in '<' right before <|im_end|> text
        assert enc.fallback_controls and any(m["content"].endswith("<") for m in conv)
        return
    want = list(r.conversation.messages)
    assert enc.parse(r.ids, strict=True) == want
    try:
        text = enc.to_text(conv)
    except UnrepresentableError:  # a transcript spells every control: a trailing '<' cannot be written
        assert any(m["content"].endswith("<") for m in conv)
    else:
        assert enc.parse_text(text, strict=True).messages == tuple(want)
    ctl = [enc.tokenizer.control_id(c) for c in CONTROLS if enc.tokenizer.control_id(c) is not None]
    n_ctl = int(np.isin(r.ids, ctl).sum())
    assert n_ctl == (2 * len(conv) + 2 * opts.get("bos_eos", False) if "<|im_start|>" not in enc.fallback_controls else 0)


def test_tool_frames_round_trip_and_calls_are_readable():
    enc = enc_()
    conv = {"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
            "messages": [{"role": "user", "content": "q"},
                         {"role": "assistant", "content": "", "tool_calls": [
                             {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
                             {"type": "function", "function": {"name": "f", "arguments": "{\"a\": 2}"}}]},
                         {"role": "tool", "content": "1"}, {"role": "tool", "content": "2"},
                         {"role": "assistant", "content": "done"}]}
    r = enc.render(conv)
    frames = r.conversation.messages
    assert [f.role for f in frames] == ["system", "user", "assistant", "user", "assistant"]
    assert frames[0].content.startswith("# Tools\n")
    assert tool_calls_of(frames[2]) == [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": 2}}]
    assert frames[3].content == "<tool_response>\n1\n</tool_response>\n<tool_response>\n2\n</tool_response>"
    assert enc.parse(r.ids, strict=True) == list(frames)
    assert r.message_index.tolist()[-3] == 4  # input positions survive the regrouping
    text = enc.tokenizer.decode(r.ids[r.mask].tolist())
    assert "tool_response" not in text and text.startswith("<tool_call>")


# -- stream decoder ------------------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
def test_decoder_chunk_invariance_and_stops(tokenizer):
    enc = enc_(tokenizer, shape="native")
    rng = random.Random(8)
    safe = tokenizer is not None  # fallback: no trailing '<' before <|im_end|> spelled as text
    for _ in range(40):
        conv = native_conv(rng, safe=safe)
        msgs = list(enc.render(conv, mode="history").conversation.messages)
        full = enc.render(conv + [{"role": "assistant", "content": words(rng, safe=safe)}], mode="train")
        prompt = enc.render(conv, mode="prompt").ids
        n = len(prompt) - (0 if full.ids[len(prompt) - 1] == prompt[-1] else 1)
        completion = full.ids[n:].tolist()
        if n < len(prompt):
            continue  # the completion starts inside the prompt's last token (the straddling case)
        ev = check_stream(enc, completion, rng, role="assistant")
        ends = [e for e in ev if type(e) is MessageEnd]
        assert [e.message for e in ends] == [full.conversation.messages[-1]]
        assert type(ev[-1]) is Stop and ev[-1].reason == "end"
        # a whole history from the start: stops at the first <|im_end|>, the same however chunked
        ev = check_stream(enc, enc.render(conv, mode="history").ids.tolist(), rng)
        assert [e.message for e in ev if type(e) is MessageEnd] == msgs[:1]


def test_decoder_stop_ids_status_and_eos():
    enc = enc_()
    tok = enc.tokenizer
    assert enc.stop_ids() == [tok.control_id("<|im_end|>"), tok.control_id("</s>")]
    dec = enc.decoder(role="assistant")
    ev = dec.feed(tok.encode_text("Hi there") + [tok.control_id("</s>"), 5])
    assert [type(e).__name__ for e in ev] == ["MessageStart", "Delta", "MessageEnd", "Stop"]
    assert ev[-1].reason == "eos" and ev[-1].trailing == 1 and dec.status == "final"
    dec = enc.decoder(role="assistant")
    dec.feed(tok.encode_text("cut"))
    dec.finish()
    assert dec.status == "truncated"


def test_literal_layout_parse_drops_the_layout_newline():
    enc = enc_(layout="v0.1-literal")
    tok = enc.tokenizer
    ids = tok.encode_text("a\n\n") + [tok.control_id("<|im_end|>")]
    assert enc.parse(ids, role="assistant")[0].content == "a\n"
    ev = merge(enc.decoder(role="assistant").feed(ids))
    # an assistant frame's trailing newline is held back (it could precede a <tool_call>): at
    # <|im_end|> it is known to be layout, a hidden delta, never answer text
    assert (ev[1].text, ev[1].visible) == ("a\n", True) and (ev[2].text, ev[2].visible) == ("\n", False)
    assert ev[3].message.content == "a\n"


def test_parse_is_lenient_and_reports():
    enc = enc_()
    tok = enc.tokenizer
    s, e = tok.control_id("<|im_start|>"), tok.control_id("<|im_end|>")
    ids = [s] + tok.encode_text("bogus\nx") + [e] + [s] + tok.encode_text("user\nok") + [e] + tok.encode_text("stray")
    res = enc.parse(ids, errors="collect")
    assert [m.content for m in res.messages] == ["ok"]
    assert [x.code for x in res.errors] == ["E-PARSE-HEADER", "E-PARSE-SKIPPED", "E-PARSE-STRAY-TEXT"]
    with pytest.raises(HeaderError):
        enc.parse(ids, strict=True)


# -- fill-in-the-middle ---------------------------------------------------------------------------

@pytest.mark.parametrize("order", ["psm", "spm", "sp", "openchatml"])
@pytest.mark.parametrize("tokenizer", [None, "o200k_base"])
def test_fim_orders_mask_prefix_property_and_parse(order, tokenizer):
    enc = enc_(tokenizer)
    tok = enc.tokenizer
    rng = random.Random(2)
    for _ in range(25):
        pre, suf, mid = words(rng, 5, safe=True), words(rng, 5, safe=True), words(rng, 4, safe=True) or "x"
        files = [{"path": "a.py", "content": words(rng, 3, safe=True)}, words(rng, 3, safe=True)][:rng.randint(0, 2)]
        path = rng.choice([None, "m.py"])
        r = enc.render_fim(pre, suf, mid, order=order, files=files, path=path)
        prompt = enc.render_fim(pre, suf, None, order=order, files=files, path=path)
        end = "<|fim_suffix|>" if order == "openchatml" else "</s>"
        trained = tok.decode(r.ids[r.mask].tolist())
        assert mid + end in trained and len(trained) <= len(mid + end) + 8  # + straddling tokens
        if order != "openchatml":
            n = len(prompt)
            assert np.array_equal(r.ids[:n - 1], prompt.ids[:-1]) and not r.mask[:n - 1].any()
            assert r.mask[n:].all()
        assert r.message_index.tolist()[-1] == len(files)
        for ids in (r.ids, prompt.ids):
            doc = enc.parse_fim(ids, prefix=pre)
            assert enc.render_fim(**doc.render_kwargs()).ids.tolist() == ids.tolist()
            assert enc.render_fim(**enc.parse_fim(ids).render_kwargs()).ids.tolist() == ids.tolist()
        assert enc.parse_fim(r.ids, prefix=pre).middle == mid


def test_fim_decoder_and_stops():
    enc = enc_()
    tok = enc.tokenizer
    assert enc.stop_ids("fim") == [tok.control_id(t) for t in ("</s>", "<|file_separator|>", "<|fim_suffix|>")]
    for end in ("</s>", "<|file_separator|>", "<|fim_suffix|>"):
        ids = tok.encode_text("    return x") + [tok.control_id(end)]
        ev = check_stream(enc, ids, random.Random(0), role="fim")
        assert ev[-2].message.content == "    return x" and ev[-1].token == end
    r = enc.render_fim("a", "c", "b", end="<|file_separator|>")
    assert tok.decode(r.ids[r.mask].tolist()) == "b<|file_separator|>"
    assert enc.render_fim("a", "c", "b", end=None).ids[-1] != tok.control_id("</s>")


def test_fim_matches_qwen_coder_prompts():
    ref = shared("refdata/fixtures/fim.qwen2.5-coder-examples.json")
    enc = enc_()
    cases = json.loads(ref.read_text("utf-8"))["cases"]
    file_level = cases[0]
    assert enc.tokenizer.decode(enc.render_fim(file_level["prefix"], file_level["suffix"]).ids.tolist()) \
        == file_level["prompt"]
    repo = cases[1]
    # Qwen's repository layout with this format's separator (no <|repo_name|> token in chatml)
    ctx = repo["context_before_prefix"].split("\n", 1)[1].replace("<|file_sep|>", "<|file_separator|>")
    chunks = ctx.split("<|file_separator|>")[1:]
    files = [{"path": c.split("\n", 1)[0], "content": c.split("\n", 1)[1][:-1]} for c in chunks[:-1]]
    r = enc.render_fim(repo["prefix"], repo["suffix"], files=files, path=chunks[-1].rstrip("\n"))
    want = repo["prompt"].split("\n", 1)[1].replace("<|file_sep|>", "<|file_separator|>")
    assert enc.tokenizer.decode(r.ids.tolist()) + repo["text_after_fim_middle"] == want


# -- typed errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("conv, err, field, index", [
    ([{"role": "user", "name": "Eric Idle", "content": "x"}], HeaderError, "name", 0),
    ([{"role": "user", "content": "x"}, {"role": "developer", "content": "y"}], HeaderError, "role", 1),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "reasoning_content": "r"}], InputError, "reasoning_content", 1),
    ([{"role": "user", "content": 3}], InputError, "content", 0),
])
def test_bad_input_gets_a_typed_error(conv, err, field, index):
    with pytest.raises(err) as e:
        enc_().render(conv)
    assert e.value.index == index and e.value.field == field and e.value.code.startswith("E-")


@pytest.mark.parametrize("call, err, field", [
    (lambda e: e.render_fim("a", "b", order="mps"), UnknownNameError, "order"),
    (lambda e: e.render_fim(1, "b"), InputTypeError, "prefix"),
    (lambda e: e.render_fim("a", "b", end="<|start|>"), InputError, "end"),
    (lambda e: e.render_fim("a", "b", files=[{"name": "x"}]), InputError, "files[0]"),
    (lambda e: e.render_fim("a", "b", path="a\nb"), InputError, "path"),
    (lambda e: e.parse_fim(e.tokenizer.encode_text("no fim here")), OcmlError, None),
    (lambda e: encoder.Encoder("chatml", layout="fancy"), UnknownNameError, "layout"),
    (lambda e: encoder.Encoder("harmony").render_fim("a", "b"), UnknownNameError, "format"),
])
def test_bad_fim_and_options_get_typed_errors(call, err, field):
    with pytest.raises(err) as e:
        call(enc_())
    assert e.value.field == field and e.value.code.startswith("E-")


def test_formats_cli_lists_all_five_renderable(capsys):
    from ocml.encoder.cli import main

    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name:16} render+parse" in out for name in vocab.FORMAT_NAMES)


@pytest.mark.parametrize("name", ["functions.", 'say "hi"', "back\\slash"])
def test_a_tool_name_a_call_cannot_carry_is_refused(name):
    """A <tool_call> holds the name inside a JSON string as it is and reads back only with one:
    an empty name (``functions.`` with its namespace taken off) or one JSON would escape is
    ``E-CALL-SCHEMA`` at the call, never a call that reads back as text."""
    enc = cached_encoder("chatml")
    conv = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]}]
    with pytest.raises(CallSchemaError) as info:
        enc.render(conv)
    assert info.value.code == "E-CALL-SCHEMA" and info.value.index == 1 and info.value.field == "name"
